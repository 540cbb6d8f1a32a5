// Diagnostics the operators raise along the pipeline.
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'ipu-pipeline{tiles=2 catalog=amp_gemm_f16_r16,amp_gemm_f16_r16_p16}'

// An FP8 GEMM with only f16 candidates enabled. The FP32-partials candidate is rejected for
// its accumulation (the FP8 AMP kernels keep FP16 partials only); the FP16-partials one because
// its kernel cannot run f8f143 operands.
func.func @fp8_f16_catalog(%x: tensor<32x64xf8E4M3FNUZ, #graph.fp8_scale<1>>, %w: tensor<64x64xf8E4M3FNUZ, #graph.fp8_scale<-1>>) -> tensor<32x64xf8E4M3FNUZ> {
  // expected-error @+1 {{graph.gemm %y: no valid operator plan: amp_gemm_f16_r16: accumulation precision f32 is not supported by the AMP kernels; amp_gemm_f16_r16_p16: init kernel @amp_gemm_f16_init does not run f8f143 operands}}
  %y = graph.gemm %x, %w : (tensor<32x64xf8E4M3FNUZ, #graph.fp8_scale<1>>, tensor<64x64xf8E4M3FNUZ, #graph.fp8_scale<-1>>) -> tensor<32x64xf8E4M3FNUZ>
  func.return %y : tensor<32x64xf8E4M3FNUZ>
}

// -----

// The pointwise plans are checked against tile memory when they are chosen, as the GEMM's
// and attention's are: no cut of a tensor too large for the tiles is a candidate
// (what else is live beside them is place-memory's concern).
func.func @gelu_too_big(%x: tensor<4x200000xf32>) -> tensor<4x200000xf32> {
  // expected-error @+1 {{graph.gelu %g: no valid operator plan: no candidate fits in tile memory. Per candidate: gelu_split0, gelu_split1: a tile holding its shards needs 3200000 bytes, tile memory holds 606208 outside the code region}}
  %g = graph.gelu %x : tensor<4x200000xf32> -> tensor<4x200000xf32>
  func.return %g : tensor<4x200000xf32>
}

// -----

// One head of 2048 rows on 2 tiles: every attention candidate is checked against tile memory
// and none fits (the blocked plans' 1024 or 2048 query rows per tile with their state and
// scratch; the retained plan's whole key and value on each tile).
func.func @attention_too_big(%q: tensor<1x2048x64xf32>) -> tensor<1x2048x64xf32> {
  // expected-error @+1 {{graph.attention %o: no valid operator plan: no candidate fits in tile memory. Per candidate: attention_blocked_r1024: an attention tile needs 1876000 bytes, tile memory holds 606208 outside the code region; attention_blocked_r1024_cyclic: an attention tile needs 2400304 bytes, tile memory holds 606208 outside the code region; attention_blocked_r2048: an attention tile needs 3686432 bytes, tile memory holds 606208 outside the code region; attention_blocked_r2048_cyclic: an attention tile needs 4735024 bytes, tile memory holds 606208 outside the code region; attention_blocked_r2048_k2: an attention tile needs 4751408 bytes, tile memory holds 606208 outside the code region; attention_split1: an attention tile needs 1572864 bytes, tile memory holds 606208 outside the code region (out 262144, query 262144, key 524288, value 524288)}}
  %o = graph.attention %q, %q, %q causal : (tensor<1x2048x64xf32>, tensor<1x2048x64xf32>, tensor<1x2048x64xf32>) -> tensor<1x2048x64xf32>
  func.return %o : tensor<1x2048x64xf32>
}
