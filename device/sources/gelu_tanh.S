// gelu_tanh.S -- GeLU's tanh form of one shard (a sketch; not assembled here).
// Its record (ABI, model implementation, cycles) is in device/model/kernels_pointwise.py.
// Descriptors (device/shard_geometry.py): out, src -- the same shard box on every tile.
// Elements are widened to FP32, u = sqrt(2/pi) * (x + 0.044715 x^3) is formed with f32
// multiply-adds (Target.tanh_gelu_f32_passes), t = tanh(u) costs
// Target.tanh_cycles_per_element, x/2 * (1 + t) is rounded once to out's precision; out's
// padding is written as zeros.

    .section .text.gelu_tanh, "ax"

// ABI: gelu_tanh(out, src; descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl gelu_tanh
    .type gelu_tanh, @function
    .align 8
gelu_tanh:
    ld32    $m1, $m0, $m15, 0         // out
    ld32    $m2, $m0, $m15, 1         // src
    get     $m3, $TILE_ID             // this tile's shard box, from the descriptors
    // ... per element: load (f16v2tof32 / f8 unpack), cubic and scale (f32 multiply-adds),
    // tanh, x/2 * (1 + t), round to out's precision, store in out's order ...
    exitz   $m15
    .size gelu_tanh, .-gelu_tanh
