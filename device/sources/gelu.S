// gelu.S -- exact (erf) GeLU of one shard (a sketch; not assembled here).
// Its record (ABI, model implementation, cycles) is in device/model/kernels_pointwise.py.
// Descriptors (device/shard_geometry.py): out, src -- the same shard box on every tile.
// Elements are widened to FP32, gelu(x) = x/2 * (1 + erf(x / sqrt 2)) is evaluated in FP32
// (the erf polynomial costs Target.erf_cycles_per_element), and rounded once to out's
// precision; out's padding is written as zeros.

    .section .text.gelu, "ax"

// ABI: gelu(out, src; descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl gelu
    .type gelu, @function
    .align 8
gelu:
    ld32    $m1, $m0, $m15, 0         // out
    ld32    $m2, $m0, $m15, 1         // src
    get     $m3, $TILE_ID             // this tile's shard box, from the descriptors
    // ... per element: load (f16v2tof32 / f8 unpack), erf polynomial, f32 multiply-add,
    // round to out's precision, store in out's order ...
    exitz   $m15
    .size gelu, .-gelu
