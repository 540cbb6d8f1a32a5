// layout.S -- zeroing, format conversion and shard gathering (a sketch; not assembled here).
// Its record (ABI, model implementation, cycles) is in device/model/kernels_layout.py.
//
// convert_shard and gather_shard take one format descriptor per pointer operand, in pointer
// order, after their named scalars (device/shard_geometry.py: rank, shape, blocks,
// partitions, pads, replication, group, precision, order, scale). Each finds its own shard
// box from its tile id ($TILE_ID via `get`) and walks it element by element through the
// two orders' index maps. Vertex-state record at $m0: the pointers, the named scalars, the
// descriptor count in words, then a pointer to the descriptor words.

    .section .text.layout, "ax"

// ABI: fill_zero(out; words) -> void
// status: Implemented
// row_specialization: none
    .globl fill_zero
    .type fill_zero, @function
    .align 8
fill_zero:
    ld32    $m1, $m0, $m15, 0         // out
    ld32    $m3, $m0, $m15, 1         // words
    brz     $m3, .Lzero_done
    add     $m3, $m3, -1              // brnzdec counts down to zero inclusive
.Lzero_loop:
    st32step $m15, $m15, $m1+=, 1
    brnzdec $m3, .Lzero_loop
.Lzero_done:
    exitz   $m15
    .size fill_zero, .-fill_zero

// ABI: convert_shard(out, src; descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl convert_shard
    .type convert_shard, @function
    .align 8
convert_shard:
    ld32    $m1, $m0, $m15, 0         // out (shard in the out descriptor's format)
    ld32    $m2, $m0, $m15, 1         // src (shard in the src descriptor's format)
    get     $m3, $TILE_ID             // this tile's shard box, from the descriptors
    // ... per element: unpack src (order, precision, scale), f32v2tof16 / f16v4tof8 with
    // saturation (FP_CTL) / widening, store at out's index in out's order ...
    exitz   $m15
    .size convert_shard, .-convert_shard

// ABI: gather_shard(out, staged; source_tile, descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl gather_shard
    .type gather_shard, @function
    .align 8
gather_shard:
    ld32    $m1, $m0, $m15, 0         // out    (this tile's shard, out format)
    ld32    $m2, $m0, $m15, 1         // staged (source_tile's shard, staged format)
    ld32    $m3, $m0, $m15, 2         // source_tile
    get     $m4, $TILE_ID
    // ... copy the box (staged box of source_tile) & (out box of $m4) & (logical extent),
    // element by element from staged's order to out's order ...
    exitz   $m15
    .size gather_shard, .-gather_shard

// ABI: gather_round(out, staged; first_source, first_dest, source_step, dest_step, groups, takes_own, group_inner, outer_step, group_span, outer_dest_step, outer_span, descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl gather_round
    .type gather_round, @function
    .align 8
gather_round:
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
    // ... then as gather_shard from that source tile ...
    exitz   $m15
    .size gather_round, .-gather_round
