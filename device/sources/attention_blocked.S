// attention_blocked.S -- blocked attention: one 64-key block against a tile's query rows,
// online softmax (a sketch; not assembled here). Semantics are executed by
// device/model/kernels_attention_blocked.py, cycles by device/model/cycles_attention.py; the
// ABI and byte layouts are device/kernels.py.
// Per 16-row group of query rows that holds a real row seeing a key of the block (the others
// are skipped: padding, blocks above the causal diagonal):
//   AMP:    scores = scale * Q_g . K_b^T            (left: query, right: key, out: scores)
//   vector: m' = max(m, rowmax), P = exp(s - m'), l' = l * exp(m - m') + rowsum(P)
//   AMP:    out = out * exp(m - m') + P . V_b        (left: probs, right: value, out: out)
// attention_finish: out = acc / l, rounded once.

    .section .text.attention_blocked, "ax"

// ABI: attention_block_f16_init(out, stats, scores, probs, query, key, value; key_block, key_length, causal, scale_bits, query_length, head_dim, rows, partitions, cyclic, slices, key_splits) -> void
// status: Implemented
// row_specialization: rows a multiple of 16: 16-row AMP groups looped inside, the inactive ones (padding, above the causal diagonal) skipped
// ABI: attention_block_f16_accum(out, stats, scores, probs, query, key, value; key_block, key_length, causal, scale_bits, query_length, head_dim, rows, partitions, cyclic, slices, key_splits) -> void
// status: Implemented
// row_specialization: rows a multiple of 16: 16-row AMP groups looped inside, the inactive ones (padding, above the causal diagonal) skipped
// ABI: attention_block_f32_init(out, stats, scores, probs, query, key, value; key_block, key_length, causal, scale_bits, query_length, head_dim, rows, partitions, cyclic, slices, key_splits) -> void
// status: Implemented
// row_specialization: rows a multiple of 16: 16-row AMP groups looped inside, the inactive ones (padding, above the causal diagonal) skipped
// ABI: attention_block_f32_accum(out, stats, scores, probs, query, key, value; key_block, key_length, causal, scale_bits, query_length, head_dim, rows, partitions, cyclic, slices, key_splits) -> void
// status: Implemented
// row_specialization: rows a multiple of 16: 16-row AMP groups looped inside, the inactive ones (padding, above the causal diagonal) skipped
    .globl attention_block_f16_init
    .globl attention_block_f16_accum
    .globl attention_block_f32_init
    .globl attention_block_f32_accum
    .align 8
attention_block_f16_init:
attention_block_f16_accum:
attention_block_f32_init:
attention_block_f32_accum:
    ld32    $m1, $m0, $m15, 0     // out: the f32 accumulator
    ld32    $m2, $m0, $m15, 1     // stats: running max, running sum
    ld32    $m3, $m0, $m15, 2     // scores: S, f32 (the AMP's output)
    ld32    $m4, $m0, $m15, 3     // probs: P (the AMP's left operand)
    ld32    $m5, $m0, $m15, 4     // query: amp_left query rows
    ld32    $m6, $m0, $m15, 5     // key: K_b^T, amp_right
    ld32    $m7, $m0, $m15, 6     // value: V_b, amp_right
    ld32    $m8, $m0, $m15, 7     // key_block: j
    ld32    $m9, $m0, $m15, 8     // key_length
    ld32    $m10, $m0, $m15, 9    // causal
    ld32    $a0, $m0, $m15, 10    // scale_bits
    ld32    $a1, $m0, $m15, 11    // query_length
    ld32    $a2, $m0, $m15, 12    // head_dim
    ld32    $a3, $m0, $m15, 13    // rows
    ld32    $a4, $m0, $m15, 14    // partitions: of the query rows, per slice
    ld32    $a5, $m0, $m15, 15    // cyclic: rows p * rows .. or 16-row blocks g * partitions + p
    ld32    $a6, $m0, $m15, 16    // slices: batch x heads
    ld32    $a7, $m0, $m15, 17    // key_splits: layers over the key blocks (1: none)
    get     $m11, $TILE_ID            // the layer, slice and partition (first query rows)
    // ... per active 16-row group: AMP S, vector softmax update, AMP P . V ...
    exitz   $m15

// The key-masked variants: the same block, and the 64 i32 entries of the key padding mask
// row of this tile's batch index (row = tile / partitions / heads) select the masked keys'
// scores to -inf before the row max (one more vector operation per score).
// ABI: attention_block_f16_init_masked(out, stats, scores, probs, query, key, value, key_mask; key_block, key_length, causal, scale_bits, query_length, head_dim, rows, partitions, cyclic, slices, key_splits, heads, mask_rows) -> void
// status: Implemented
// row_specialization: rows a multiple of 16: 16-row AMP groups looped inside, the inactive ones (padding, above the causal diagonal) skipped
// ABI: attention_block_f16_accum_masked(out, stats, scores, probs, query, key, value, key_mask; key_block, key_length, causal, scale_bits, query_length, head_dim, rows, partitions, cyclic, slices, key_splits, heads, mask_rows) -> void
// status: Implemented
// row_specialization: rows a multiple of 16: 16-row AMP groups looped inside, the inactive ones (padding, above the causal diagonal) skipped
// ABI: attention_block_f32_init_masked(out, stats, scores, probs, query, key, value, key_mask; key_block, key_length, causal, scale_bits, query_length, head_dim, rows, partitions, cyclic, slices, key_splits, heads, mask_rows) -> void
// status: Implemented
// row_specialization: rows a multiple of 16: 16-row AMP groups looped inside, the inactive ones (padding, above the causal diagonal) skipped
// ABI: attention_block_f32_accum_masked(out, stats, scores, probs, query, key, value, key_mask; key_block, key_length, causal, scale_bits, query_length, head_dim, rows, partitions, cyclic, slices, key_splits, heads, mask_rows) -> void
// status: Implemented
// row_specialization: rows a multiple of 16: 16-row AMP groups looped inside, the inactive ones (padding, above the causal diagonal) skipped
    .globl attention_block_f16_init_masked
    .globl attention_block_f16_accum_masked
    .globl attention_block_f32_init_masked
    .globl attention_block_f32_accum_masked
    .align 8
attention_block_f16_init_masked:
attention_block_f16_accum_masked:
attention_block_f32_init_masked:
attention_block_f32_accum_masked:
    ld32    $m1, $m0, $m15, 0     // out: the f32 accumulator
    ld32    $m2, $m0, $m15, 1     // stats: running max, running sum
    ld32    $m3, $m0, $m15, 2     // scores: S, f32 (the AMP's output)
    ld32    $m4, $m0, $m15, 3     // probs: P (the AMP's left operand)
    ld32    $m5, $m0, $m15, 4     // query: amp_left query rows
    ld32    $m6, $m0, $m15, 5     // key: K_b^T, amp_right
    ld32    $m7, $m0, $m15, 6     // value: V_b, amp_right
    ld32    $m8, $m0, $m15, 7     // key_mask: i32 [mask_rows, key_length], whole
    ld32    $m9, $m0, $m15, 8     // key_block: j
    ld32    $m10, $m0, $m15, 9    // key_length
    ld32    $m11, $m0, $m15, 10   // causal
    ld32    $a0, $m0, $m15, 11    // scale_bits
    ld32    $a1, $m0, $m15, 12    // query_length
    ld32    $a2, $m0, $m15, 13    // head_dim
    ld32    $a3, $m0, $m15, 14    // rows
    ld32    $a4, $m0, $m15, 15    // partitions: of the query rows, per slice
    ld32    $a5, $m0, $m15, 16    // cyclic: rows p * rows .. or 16-row blocks g * partitions + p
    ld32    $a6, $m0, $m15, 17    // slices: batch x heads
    ld32    $a7, $m0, $m15, 18    // key_splits: layers over the key blocks (1: none)
    ld32    $m12, $m0, $m15, 19   // heads: slices per mask row
    ld32    $m13, $m0, $m15, 20   // mask_rows
    get     $m11, $TILE_ID            // the slice (mask row) and partition (first query rows)
    // ... per active 16-row group: AMP S, mask select, vector softmax update, AMP P . V ...
    exitz   $m15

// ABI: attention_finish_f16(out, acc, stats; rows, head_dim) -> void
// status: Implemented
// row_specialization: none
// ABI: attention_finish_f32(out, acc, stats; rows, head_dim) -> void
// status: Implemented
// row_specialization: none
    .globl attention_finish_f16
    .globl attention_finish_f32
    .align 8
attention_finish_f16:
attention_finish_f32:
    ld32    $m1, $m0, $m15, 0         // out
    ld32    $m2, $m0, $m15, 1         // acc
    ld32    $m3, $m0, $m15, 2         // stats
    ld32    $m4, $m0, $m15, 3         // rows
    ld32    $m5, $m0, $m15, 4         // head_dim
    // ... per row: r = 1 / l (0 when l = 0), out = acc * r, round, store ...
    exitz   $m15

// attention_merge: the key-split plan's layers each ran the block loop over their own key
// blocks; a layer's state (acc, stats) arrives in acc_in/stats_in and is merged into this one.
// ABI: attention_merge(out, stats, acc_in, stats_in; rows, head_dim) -> void
// status: Implemented
// row_specialization: none
    .globl attention_merge
    .align 8
attention_merge:
    ld32    $m1, $m0, $m15, 0         // out: this layer's f32 accumulator, merged in place
    ld32    $m2, $m0, $m15, 1         // stats: its running max and sum
    ld32    $m3, $m0, $m15, 2         // acc_in: the other layer's accumulator
    ld32    $m4, $m0, $m15, 3         // stats_in: the other layer's max and sum
    ld32    $m5, $m0, $m15, 4         // rows
    ld32    $m6, $m0, $m15, 5         // head_dim
    // ... per row: m = max(m0, m1), a_i = exp(m_i - m) (0 for m_i = -inf),
    //     l = a0 l0 + a1 l1, out = a0 out + a1 acc_in ...
    exitz   $m15
