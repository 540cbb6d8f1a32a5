// add.S -- broadcasting add of one output shard (a sketch; not assembled here).
// Its record (ABI, model implementation, cycles) is in device/model/kernels_pointwise.py.
// Descriptors (device/shard_geometry.py): out, lhs, rhs. NumPy broadcasting: ranks aligned
// at the right, extent-1 axes broadcast. The kernel walks out's shard box on its tile; each
// operand's view of that box (broadcast axes at index 0) must be resident in the operand's
// shard on the same tile. One rounding to out's precision; out's padding is written as zeros.

    .section .text.add, "ax"

// ABI: add(out, lhs, rhs; descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl add
    .type add, @function
    .align 8
add:
    ld32    $m1, $m0, $m15, 0         // out
    ld32    $m2, $m0, $m15, 1         // lhs
    ld32    $m3, $m0, $m15, 2         // rhs
    get     $m4, $TILE_ID             // this tile's out box, from the descriptors
    // ... per element: operand indices with zero strides on broadcast axes, f32v2add,
    // round to out's precision, store in out's order ...
    exitz   $m15
    .size add, .-add
