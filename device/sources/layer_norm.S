// layer_norm.S -- layer normalization over the last axis (a sketch; not assembled here).
// Its record (ABI, model implementation, cycles) is in device/model/kernels_layer_norm.py.
// Descriptors (device/shard_geometry.py): out, src (the same shard box, whole rows), weight,
// bias ([C], all C entries on this tile). Per row: FP32 sums for the mean and the biased
// variance (f32v2 accumulation), one reciprocal square root of var + eps (Target.rsqrt_cycles),
// then x' = (x - mean) * rsqrt * weight + bias in FP32, rounded once to out's precision.
// Out's padding is written as zeros.

    .section .text.layer_norm, "ax"

// ABI: layer_norm(out, src, weight, bias; eps_bits, descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl layer_norm
    .type layer_norm, @function
    .align 8
layer_norm:
    ld32    $m1, $m0, $m15, 0         // out
    ld32    $m2, $m0, $m15, 1         // src
    ld32    $m3, $m0, $m15, 2         // weight
    ld32    $m4, $m0, $m15, 3         // bias
    ld32    $a0, $m0, $m15, 4         // eps_bits (the f32 bits of eps)
    get     $m5, $TILE_ID             // this tile's shard box, from the descriptors
    // ... per row: f32v2add sums of x and x*x, mean, var, rsqrt(var + eps), then per
    // element f32v2mul/f32v2add with weight and bias, round to out's precision, store ...
    exitz   $m15
    .size layer_norm, .-layer_norm
