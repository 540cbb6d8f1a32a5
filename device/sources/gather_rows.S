// gather_rows.S -- embedding lookup: rows of a table by i32 indices (a sketch; not assembled here).
// Its record (ABI, model implementation, cycles) is in device/model/kernels_embedding.py.
// Descriptors (device/shard_geometry.py): out, table, indices. For each index position of
// this tile's out box: load the index, check 0 <= index < table rows (else stop with an
// error: never a silent row), and copy this tile's columns of the row when the table's shard
// here holds it, else store zeros (Target.gather_row_cycles per row, then the copy at the
// vector rate); out's padding is written as zeros.

    .section .text.gather_rows, "ax"

// ABI: gather_rows(out, table, indices; descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl gather_rows
    .type gather_rows, @function
    .align 8
gather_rows:
    ld32    $m1, $m0, $m15, 0         // out
    ld32    $m2, $m0, $m15, 1         // table
    ld32    $m3, $m0, $m15, 2         // indices
    get     $m4, $TILE_ID             // this tile's shard boxes, from the descriptors
    // ... per index: ld32 the index, compare with the table's rows, row address =
    // table + (index - first row) * row bytes, ld64/st64 loop over the row's columns ...
    exitz   $m15
    .size gather_rows, .-gather_rows
