// The catalog is pinned to the row-plan candidates (the default catalog before the grid plan):
// this file tests the row plan; the grid plan has mid-to-tile-gemm-grid.mlir.
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=1 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64},mid-to-tile' | filecheck %s --check-prefix=ONE
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64},mid-to-tile' | filecheck %s --check-prefix=FOUR

// FP16, 32x128 by 128x64: one output-column block, two inner blocks.
func.func @f16(%a: tensor<32x128xf16>, %b: tensor<128x64xf16>) -> tensor<32x64xf16> {
  %c = graph.gemm %a, %b : (tensor<32x128xf16>, tensor<128x64xf16>) -> tensor<32x64xf16>
  func.return %c : tensor<32x64xf16>
}
// ONE-LABEL: func.func @f16()
// ONE-NEXT:  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [32, 128] f16 amp_left standard align 32 tail 16 from tensor<32x128xf16, #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>
// ONE-NEXT:  %b = tile.buffer @b input 1 on #tile.tiles<0 to 1> shard [128, 64] f16 amp_right standard align 32 tail 0 from tensor<128x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>
// ONE-NEXT:  %c = tile.buffer @c output 0 on #tile.tiles<0 to 1> shard [32, 64] f16 amp_output interleaved align 32 tail 0 from tensor<32x64xf16, #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>>
// ONE-NEXT:  %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 1> shard [64, 64] f16 amp_right standard align 32 tail 0
// ONE-NEXT:  %c_partials = tile.buffer @c_partials scratch on #tile.tiles<0 to 1> shard [32, 64] f32 amp_output interleaved align 32 tail 0
// ONE-NEXT:  tile.loop %j = 0 to 1 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
// ONE-NEXT:  tile.kernel @copy_words(%c_rhs_slot[(d0) -> (0)], %b[(d0) -> ((d0 * 8192))]) scalars [2048] on #tile.tiles<0 to 1> only (d0) -> (0) iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "home tile copies its own rhs block into its slot">
// ONE-NEXT:  tile.kernel @amp_gemm_f16p32_init(%c_partials[(d0) -> (0)], %a[(d0) -> (0)], %c_rhs_slot[(d0) -> (0)]) scalars [32] on #tile.tiles<0 to 1> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "initializing gemm phase k = 0">
// ONE-NEXT:  tile.loop %k = 1 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating inner blocks k"> {
// ONE-NEXT:  tile.kernel @copy_words(%c_rhs_slot[(d0, d1) -> (0)], %b[(d0, d1) -> (((d1 * 8192) + (d0 * 8192)))]) scalars [2048] on #tile.tiles<0 to 1> only (d0, d1) -> (0) iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "home tile copies its own rhs block into its slot">
// ONE-NEXT:  tile.kernel @amp_gemm_f16p32_accum(%c_partials[(d0, d1) -> (0)], %a[(d0, d1) -> ((d1 * 4096))], %c_rhs_slot[(d0, d1) -> (0)]) scalars [32] on #tile.tiles<0 to 1> iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating gemm phase">
// ONE-NEXT:  }
// ONE-NEXT:  tile.kernel @convert_shard(%c[(d0) -> ((d0 * 4096))], %c_partials[(d0) -> (0)]) scalars [2, 32, 64, 32, 64, 1, 1, 1, 1, 1, 1, 1, 3, 0, 2, 32, 64, 32, 64, 1, 1, 1, 1, 1, 1, 0, 3, 0] on #tile.tiles<0 to 1> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "round the f32 partials of column block j to the output once">
// ONE-NEXT:  }
// ONE-NEXT:  func.return
// ONE-NEXT:  }
// Four tiles: two 16-row output tiles (r16) now beat one 32-row tile (r32): the block
// broadcast to the other row tile is a pair broadcast, half the events of 32-bit words.
// FOUR-LABEL: func.func @f16()
// FOUR-NEXT:  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [16, 128] f16 amp_left standard align 32 tail 16 from tensor<32x128xf16, #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// FOUR-NEXT:  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 from tensor<128x64xf16, #mid.format<f16, amp_right, [64 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// FOUR-NEXT:  %c = tile.buffer @c output 0 on #tile.tiles<0 to 2> shard [16, 64] f16 amp_output interleaved align 32 tail 0 from tensor<32x64xf16, #mid.format<f16, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// FOUR-NEXT:  %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
// FOUR-NEXT:  %c_partials = tile.buffer @c_partials scratch on #tile.tiles<0 to 2> shard [16, 64] f32 amp_output interleaved align 32 tail 0
// FOUR-NEXT:  tile.loop %j = 0 to 1 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
// FOUR-NEXT:  tile.exchange 2048 words from %b[(d0) -> ((d0 * 8192))] on tile (d0) -> (0) to %c_rhs_slot[(d0) -> (0)] on #tile.tiles<0 to 2> pairs iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
// FOUR-NEXT:  tile.kernel @copy_words(%c_rhs_slot[(d0) -> (0)], %b[(d0) -> ((d0 * 8192))]) scalars [2048] on #tile.tiles<0 to 2> only (d0) -> (0) iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "home tile copies its own rhs block into its slot">
// FOUR-NEXT:  tile.kernel @amp_gemm_f16p32_init(%c_partials[(d0) -> (0)], %a[(d0) -> (0)], %c_rhs_slot[(d0) -> (0)]) scalars [16] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "initializing gemm phase k = 0">
// FOUR-NEXT:  tile.loop %k = 1 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating inner blocks k"> {
// FOUR-NEXT:  tile.exchange 2048 words from %b[(d0, d1) -> ((d0 * 8192))] on tile (d0, d1) -> (d1) to %c_rhs_slot[(d0, d1) -> (0)] on #tile.tiles<0 to 2> pairs iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
// FOUR-NEXT:  tile.kernel @copy_words(%c_rhs_slot[(d0, d1) -> (0)], %b[(d0, d1) -> ((d0 * 8192))]) scalars [2048] on #tile.tiles<0 to 2> only (d0, d1) -> (d1) iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "home tile copies its own rhs block into its slot">
// FOUR-NEXT:  tile.kernel @amp_gemm_f16p32_accum(%c_partials[(d0, d1) -> (0)], %a[(d0, d1) -> ((d1 * 2048))], %c_rhs_slot[(d0, d1) -> (0)]) scalars [16] on #tile.tiles<0 to 2> iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating gemm phase">
// FOUR-NEXT:  }
// FOUR-NEXT:  tile.kernel @convert_shard(%c[(d0) -> ((d0 * 2048))], %c_partials[(d0) -> (0)]) scalars [2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 1, 3, 0, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 0, 3, 0] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "round the f32 partials of column block j to the output once">
// FOUR-NEXT:  }
// FOUR-NEXT:  func.return
// FOUR-NEXT:  }

// -----


// FP32, padded: 100x130 by 130x70 (not multiples of 64).
func.func @f32_padded(%a: tensor<100x130xf32>, %b: tensor<130x70xf32>) -> tensor<100x70xf32> {
  %c = graph.gemm %a, %b : (tensor<100x130xf32>, tensor<130x70xf32>) -> tensor<100x70xf32>
  func.return %c : tensor<100x70xf32>
}
// ONE-LABEL: func.func @f32_padded()
// ONE-NEXT:  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [112, 192] f32 amp_left standard align 32 tail 16 from tensor<100x130xf32, #mid.format<f32, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>
// ONE-NEXT:  %b = tile.buffer @b input 1 on #tile.tiles<0 to 1> shard [192, 128] f32 amp_right standard align 32 tail 0 from tensor<130x70xf32, #mid.format<f32, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>
// ONE-NEXT:  %c = tile.buffer @c output 0 on #tile.tiles<0 to 1> shard [112, 128] f32 amp_output interleaved align 32 tail 0 from tensor<100x70xf32, #mid.format<f32, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>>
// ONE-NEXT:  %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 1> shard [64, 64] f32 amp_right standard align 32 tail 0
// ONE-NEXT:  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
// ONE-NEXT:  tile.kernel @copy_words(%c_rhs_slot[(d0) -> (0)], %b[(d0) -> ((d0 * 16384))]) scalars [4096] on #tile.tiles<0 to 1> only (d0) -> (0) iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "home tile copies its own rhs block into its slot">
// ONE-NEXT:  tile.kernel @amp_gemm_f32_init(%c[(d0) -> ((d0 * 28672))], %a[(d0) -> (0)], %c_rhs_slot[(d0) -> (0)]) scalars [112] on #tile.tiles<0 to 1> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "initializing gemm phase k = 0">
// ONE-NEXT:  tile.loop %k = 1 to 3 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating inner blocks k"> {
// ONE-NEXT:  tile.kernel @copy_words(%c_rhs_slot[(d0, d1) -> (0)], %b[(d0, d1) -> (((d1 * 32768) + (d0 * 16384)))]) scalars [4096] on #tile.tiles<0 to 1> only (d0, d1) -> (0) iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "home tile copies its own rhs block into its slot">
// ONE-NEXT:  tile.kernel @amp_gemm_f32_accum(%c[(d0, d1) -> ((d0 * 28672))], %a[(d0, d1) -> ((d1 * 28672))], %c_rhs_slot[(d0, d1) -> (0)]) scalars [112] on #tile.tiles<0 to 1> iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating gemm phase">
// ONE-NEXT:  }
// ONE-NEXT:  }
// ONE-NEXT:  func.return
// ONE-NEXT:  }
// FOUR-LABEL: func.func @f32_padded()
// FOUR-NEXT:  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [32, 192] f32 amp_left standard align 32 tail 16 from tensor<100x130xf32, #mid.format<f32, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// FOUR-NEXT:  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [128, 64] f32 amp_right standard align 32 tail 0 from tensor<130x70xf32, #mid.format<f32, amp_right, [64 x 2 pad, 64 x 2 pad], replication = 1, group = 4, standard>>
// FOUR-NEXT:  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [32, 128] f32 amp_output interleaved align 32 tail 0 from tensor<100x70xf32, #mid.format<f32, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// FOUR-NEXT:  %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 4> shard [64, 64] f32 amp_right standard align 32 tail 0
// FOUR-NEXT:  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
// FOUR-NEXT:  tile.exchange 4096 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %c_rhs_slot[(d0) -> (0)] on #tile.tiles<0 to 4> pairs iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
// FOUR-NEXT:  tile.kernel @copy_words(%c_rhs_slot[(d0) -> (0)], %b[(d0) -> (0)]) scalars [4096] on #tile.tiles<0 to 4> only (d0) -> (d0) iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "home tile copies its own rhs block into its slot">
// FOUR-NEXT:  tile.kernel @amp_gemm_f32_init(%c[(d0) -> ((d0 * 8192))], %a[(d0) -> (0)], %c_rhs_slot[(d0) -> (0)]) scalars [32] on #tile.tiles<0 to 4> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "initializing gemm phase k = 0">
// FOUR-NEXT:  tile.loop %k = 1 to 3 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating inner blocks k"> {
// FOUR-NEXT:  tile.exchange 4096 words from %b[(d0, d1) -> (((d1 mod 2) * 16384))] on tile (d0, d1) -> ((((d1 floordiv 2) * 2) + d0)) to %c_rhs_slot[(d0, d1) -> (0)] on #tile.tiles<0 to 4> pairs iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
// FOUR-NEXT:  tile.kernel @copy_words(%c_rhs_slot[(d0, d1) -> (0)], %b[(d0, d1) -> (((d1 mod 2) * 16384))]) scalars [4096] on #tile.tiles<0 to 4> only (d0, d1) -> ((((d1 floordiv 2) * 2) + d0)) iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "home tile copies its own rhs block into its slot">
// FOUR-NEXT:  tile.kernel @amp_gemm_f32_accum(%c[(d0, d1) -> ((d0 * 8192))], %a[(d0, d1) -> ((d1 * 8192))], %c_rhs_slot[(d0, d1) -> (0)]) scalars [32] on #tile.tiles<0 to 4> iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating gemm phase">
// FOUR-NEXT:  }
// FOUR-NEXT:  }
// FOUR-NEXT:  func.return
// FOUR-NEXT:  }

// -----


// Broadcast batch: [2, 1, 48, 64] x [3, 64, 64] -> [2, 3, 48, 64].
func.func @batch(%a: tensor<2x1x48x64xf16>, %b: tensor<3x64x64xf16>) -> tensor<2x3x48x64xf16> {
  %c = graph.gemm %a, %b : (tensor<2x1x48x64xf16>, tensor<3x64x64xf16>) -> tensor<2x3x48x64xf16>
  func.return %c : tensor<2x3x48x64xf16>
}
// ONE-LABEL: func.func @batch()
// ONE-NEXT:  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [2, 1, 48, 64] f16 amp_left standard align 32 tail 16 from tensor<2x1x48x64xf16, #mid.format<f16, amp_left, [1 x 1 pad, 1 x 1 pad, 16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>
// ONE-NEXT:  %b = tile.buffer @b input 1 on #tile.tiles<0 to 1> shard [3, 64, 64] f16 amp_right standard align 32 tail 0 from tensor<3x64x64xf16, #mid.format<f16, amp_right, [1 x 1 pad, 64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>
// ONE-NEXT:  %c = tile.buffer @c output 0 on #tile.tiles<0 to 1> shard [2, 3, 48, 64] f16 amp_output interleaved align 32 tail 0 from tensor<2x3x48x64xf16, #mid.format<f16, amp_output, [1 x 1 pad, 1 x 1 pad, 16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>>
// ONE-NEXT:  %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 1> shard [64, 64] f16 amp_right standard align 32 tail 0
// ONE-NEXT:  tile.loop %batch0 = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "broadcast batch axis 0"> {
// ONE-NEXT:  tile.loop %batch1 = 0 to 3 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "broadcast batch axis 1"> {
// ONE-NEXT:  tile.loop %j = 0 to 1 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
// ONE-NEXT:  tile.kernel @copy_words(%c_rhs_slot[(d0, d1, d2) -> (0)], %b[(d0, d1, d2) -> (((d1 * 8192) + (d2 * 8192)))]) scalars [2048] on #tile.tiles<0 to 1> only (d0, d1, d2) -> (0) iv(%batch0, %batch1, %j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "home tile copies its own rhs block into its slot">
// ONE-NEXT:  tile.kernel @amp_gemm_f16_init(%c[(d0, d1, d2) -> ((((d0 * 18432) + (d1 * 6144)) + (d2 * 6144)))], %a[(d0, d1, d2) -> ((d0 * 6144))], %c_rhs_slot[(d0, d1, d2) -> (0)]) scalars [48] on #tile.tiles<0 to 1> iv(%batch0, %batch1, %j) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "initializing gemm phase k = 0">
// ONE-NEXT:  }
// ONE-NEXT:  }
// ONE-NEXT:  }
// ONE-NEXT:  func.return
// ONE-NEXT:  }
// FOUR-LABEL: func.func @batch()
// FOUR-NEXT:  %a = tile.buffer @a input 0 on #tile.tiles<0 to 3> shard [2, 1, 16, 64] f16 amp_left standard align 32 tail 16 from tensor<2x1x48x64xf16, #mid.format<f16, amp_left, [1 x 1 pad, 1 x 1 pad, 16 x 3 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// FOUR-NEXT:  %b = tile.buffer @b input 1 on #tile.tiles<0 to 1> shard [3, 64, 64] f16 amp_right standard align 32 tail 0 from tensor<3x64x64xf16, #mid.format<f16, amp_right, [1 x 1 pad, 64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// FOUR-NEXT:  %c = tile.buffer @c output 0 on #tile.tiles<0 to 3> shard [2, 3, 16, 64] f16 amp_output interleaved align 32 tail 0 from tensor<2x3x48x64xf16, #mid.format<f16, amp_output, [1 x 1 pad, 1 x 1 pad, 16 x 3 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// FOUR-NEXT:  %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 3> shard [64, 64] f16 amp_right standard align 32 tail 0
// FOUR-NEXT:  tile.loop %batch0 = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "broadcast batch axis 0"> {
// FOUR-NEXT:  tile.loop %batch1 = 0 to 3 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "broadcast batch axis 1"> {
// FOUR-NEXT:  tile.loop %j = 0 to 1 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
// FOUR-NEXT:  tile.exchange 2048 words from %b[(d0, d1, d2) -> (((d1 * 8192) + (d2 * 8192)))] on tile (d0, d1, d2) -> (0) to %c_rhs_slot[(d0, d1, d2) -> (0)] on #tile.tiles<0 to 3> pairs iv(%batch0, %batch1, %j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
// FOUR-NEXT:  tile.kernel @copy_words(%c_rhs_slot[(d0, d1, d2) -> (0)], %b[(d0, d1, d2) -> (((d1 * 8192) + (d2 * 8192)))]) scalars [2048] on #tile.tiles<0 to 1> only (d0, d1, d2) -> (0) iv(%batch0, %batch1, %j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "home tile copies its own rhs block into its slot">
// FOUR-NEXT:  tile.kernel @amp_gemm_f16_init(%c[(d0, d1, d2) -> ((((d0 * 6144) + (d1 * 2048)) + (d2 * 2048)))], %a[(d0, d1, d2) -> ((d0 * 2048))], %c_rhs_slot[(d0, d1, d2) -> (0)]) scalars [16] on #tile.tiles<0 to 3> iv(%batch0, %batch1, %j) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "initializing gemm phase k = 0">
// FOUR-NEXT:  }
// FOUR-NEXT:  }
// FOUR-NEXT:  }
// FOUR-NEXT:  func.return
// FOUR-NEXT:  }
