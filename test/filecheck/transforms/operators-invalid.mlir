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

// The pointwise and attention plans are not checked against tile memory when they are chosen
// (the GEMM's are): a tensor too large for the tiles it is cut over is place-memory's
// diagnostic, naming the tile and the buffers.
// expected-error @+1 {{Out of memory on tile 0: 3232768 bytes needed, tiles only have 638976 bytes (code region 32768, buffers live together: x 1600000, g 1600000); 1 other tile(s) overflow too}}
func.func @gelu_too_big(%x: tensor<4x200000xf32>) -> tensor<4x200000xf32> {
  %g = graph.gelu %x : tensor<4x200000xf32> -> tensor<4x200000xf32>
  func.return %g : tensor<4x200000xf32>
}

// -----

// One head on 2 tiles: the query rows are cut, so %q is also gathered whole onto both tiles as
// key and value (q_1, q_2 and its staging slot).
func.func @attention_too_big(%q: tensor<1x2048x64xf32>) -> tensor<1x2048x64xf32> {
  // expected-error @+1 {{Out of memory on tile 0: 1605632 bytes needed, tiles only have 638976 bytes (code region 32768, buffers live together: q 262144, q_1 524288, q_2 524288, q_2_gather_slot 262144); 1 other tile(s) overflow too}}
  %o = graph.attention %q, %q, %q causal : (tensor<1x2048x64xf32>, tensor<1x2048x64xf32>, tensor<1x2048x64xf32>) -> tensor<1x2048x64xf32>
  func.return %o : tensor<1x2048x64xf32>
}
