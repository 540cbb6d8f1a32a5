// views.S -- element copies through an index view, for the layout ops (a sketch; not
// assembled here). Its records (ABI, model implementation, cycles) are in
// device/model/kernels_views.py. Variadic words: out's descriptor, the source's descriptor,
// then the index view (device/index_views.py): window starts, stops, strides (one per out
// axis) and an offset. For each element r of this tile's out box inside the window and the logical
// extent, the source's row-major linear index offset + sum((r - starts) * strides) is
// unravelled in the source shape; an element whose source is in the source shard is copied
// code for code (same precision and scale), in the two operands' element orders.

    .section .text.views, "ax"

// ABI: view_shard(out, src; descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats and views (two descriptors, then the index view)
    .globl view_shard
    .type view_shard, @function
    .align 8
view_shard:
    ld32    $m1, $m0, $m15, 0         // out (this tile's shard, out format)
    ld32    $m2, $m0, $m15, 1         // src (this tile's shard, src format)
    get     $m3, $TILE_ID             // both shard boxes, from the descriptors
    // ... per element of the window's part of the out box: linear source index, divide
    // by the source's row-major strides, load from src's order, store in out's order ...
    exitz   $m15
    .size view_shard, .-view_shard

// ABI: gather_view(out, staged; source_tile, descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats and views (two descriptors, then the index view)
    .globl gather_view
    .type gather_view, @function
    .align 8
gather_view:
    ld32    $m1, $m0, $m15, 0         // out    (this tile's shard, out format)
    ld32    $m2, $m0, $m15, 1         // staged (source_tile's shard, staged format)
    ld32    $m3, $m0, $m15, 2         // source_tile
    get     $m4, $TILE_ID
    // ... as view_shard, skipping elements whose source is outside source_tile's box ...
    exitz   $m15
    .size gather_view, .-gather_view

// ABI: gather_view_round(out, staged; first_source, first_dest, source_step, dest_step, groups, takes_own, group_inner, outer_step, group_span, outer_dest_step, outer_span, descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats and views (two descriptors, then the index view)
    .globl gather_view_round
    .type gather_view_round, @function
    .align 8
gather_view_round:
    ld32    $m1, $m0, $m15, 0         // out    (this tile's shard, out format)
    ld32    $m2, $m0, $m15, 1         // staged (the shard this tile received this round)
    ld32    $m3, $m0, $m15, 2         // first_source
    ld32    $m5, $m0, $m15, 3         // first_dest
    ld32    $m6, $m0, $m15, 4         // source_step
    ld32    $m7, $m0, $m15, 5         // dest_step
    ld32    $m8, $m0, $m15, 6         // groups
    ld32    $m9, $m0, $m15, 7         // takes_own (0: a tile whose source is itself returns)
    ld32    $m10, $m0, $m15, 8        // group_inner
    ld32    $m11, $m0, $m15, 9        // outer_step
    ld32    $m12, $m0, $m15, 10       // group_span
    ld32    $m13, $m0, $m15, 11       // outer_dest_step
    ld32    $m14, $m0, $m15, 12       // outer_span
    get     $m4, $TILE_ID
    sub     $m4, $m4, $m5             // ... d = tile - first_dest; g's inner digit is
    // (d mod group_span) floordiv dest_step, its outer digit (d mod outer_span) floordiv
    // outer_dest_step, g = outer * group_inner + inner, by multiplies with the
    // reciprocals; the source tile is
    // first_source + source_step * (g mod group_inner) + outer_step * (g floordiv
    // group_inner), none for a digit past its extent (Target.round_select_cycles) ...
    // ... then as gather_view from that source tile ...
    exitz   $m15
    .size gather_view_round, .-gather_view_round
