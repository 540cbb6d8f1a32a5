// attention.S -- softmax attention of one shard of query rows (a sketch; not assembled here).
// Its record (ABI, model implementation, cycles) is in device/model/kernels_attention.py.
// Descriptors (device/shard_geometry.py): out, query, key, value over [..., heads, seq,
// head_dim]. out and query share a shard box (which may split query rows: the causal mask
// uses the global query row of the box); key and value shards hold the box's heads with all
// key rows and all of head_dim. Scores and softmax in FP32 (row max subtracted), P @ V
// accumulated in FP32, one rounding to out's precision.

    .section .text.attention, "ax"

// ABI: attention(out, query, key, value; causal, scale_bits, descriptor...) -> void
// status: Implemented
// row_specialization: none: one entry for all formats (one descriptor per pointer, in order)
    .globl attention
    .type attention, @function
    .align 8
attention:
    ld32    $m1, $m0, $m15, 0         // out
    ld32    $m2, $m0, $m15, 1         // query
    ld32    $m3, $m0, $m15, 2         // key
    ld32    $m4, $m0, $m15, 3         // value
    ld32    $m5, $m0, $m15, 4         // causal (0 or 1)
    ld32    $a0, $m0, $m15, 5         // scale_bits: the f32 scale
    get     $m6, $TILE_ID             // this tile's query box, from the descriptors
    // ... per head and query row: scores = scale * q . k_j (j <= row if causal), row max,
    // exp (Target.exp_cycles_per_element), sum, P @ V in FP32, round, store ...
    exitz   $m15
    .size attention, .-attention
