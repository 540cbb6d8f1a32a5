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

// The column-split layer norm (a row's last axis cut over C tiles), in two entries with an
// exchange of the statistics between them: layer_norm_stats writes each row's FP32 mean and
// M2 over this tile's columns into block c of its out, the statistics ([C][rows][2] f32), the C exchange
// phases send block c to the row group's other tiles, and layer_norm_apply merges the
// blocks (Chan's formula, weighted by each part's real columns) and normalizes its columns.

    .section .text.layer_norm_stats, "ax"

// ABI: layer_norm_stats(out, src; descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl layer_norm_stats
    .type layer_norm_stats, @function
    .align 8
layer_norm_stats:
    ld32    $m1, $m0, $m15, 0         // out: the statistics blocks
    ld32    $m2, $m0, $m15, 1         // src
    get     $m5, $TILE_ID             // this tile's shard box and column part c
    // ... per row: f32v2add sum of x, mean; f32v2 sum of (x - mean)^2; store (mean, M2)
    // at block c, zeros elsewhere ...
    exitz   $m15
    .size layer_norm_stats, .-layer_norm_stats

    .section .text.layer_norm_apply, "ax"

// ABI: layer_norm_apply(out, src, weight, bias, stats; eps_bits, descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl layer_norm_apply
    .type layer_norm_apply, @function
    .align 8
layer_norm_apply:
    ld32    $m1, $m0, $m15, 0         // out
    ld32    $m2, $m0, $m15, 1         // src
    ld32    $m3, $m0, $m15, 2         // weight (this tile's columns)
    ld32    $m4, $m0, $m15, 3         // bias (this tile's columns)
    ld32    $m6, $m0, $m15, 4         // stats
    ld32    $a0, $m0, $m15, 5         // eps_bits (the f32 bits of eps)
    get     $m5, $TILE_ID
    // ... per row: merge the C (mean, M2) blocks, rsqrt(var + eps); per element
    // f32v2sub/f32v2mul/f32v2add with weight and bias, round to out's precision, store ...
    exitz   $m15
    .size layer_norm_apply, .-layer_norm_apply
