// indivisible=reject reaches graph-to-mid through ipu-pipeline: 100 rows are no multiple of any
// row block, so @gemm has no plan; @batched (ipu-pipeline.mlir) still compiles.
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'ipu-pipeline{tiles=4 indivisible=reject}' | filecheck %s

func.func @gemm(%a: tensor<100x72xf16>, %b: tensor<72x64xf16>) -> tensor<100x64xf16> {
  // expected-error @+1 {{graph.gemm %c: no valid operator plan: amp_gemm_f16_r16, amp_gemm_f16_grid, amp_gemm_f16_ksplit: lhs axis -2 extent 100 is not a multiple of block 16 and the tiling rejects padding; amp_gemm_f16_r32: lhs axis -2 extent 100 is not a multiple of block 32 and the tiling rejects padding; amp_gemm_f16_r64: lhs axis -2 extent 100 is not a multiple of block 64 and the tiling rejects padding; amp_gemm_f32_r16, amp_gemm_f32_r32, amp_gemm_f32_r64, amp_gemm_f32_grid, amp_gemm_f32_ksplit: init kernel @amp_gemm_f32_init does not run f16 operands; amp_gemm_f8_r16, amp_gemm_f8_r32, amp_gemm_f8_r64, amp_gemm_f8_grid: init kernel @amp_gemm_f8_init does not run f16 operands}}
  %c = graph.gemm %a, %b : (tensor<100x72xf16>, tensor<72x64xf16>) -> tensor<100x64xf16>
  func.return %c : tensor<100x64xf16>
}

// -----

func.func @batched(%a: tensor<2x1x48x64xf32>, %b: tensor<3x64x64xf32>) -> tensor<2x3x48x64xf32> {
  %c = graph.gemm %a, %b : (tensor<2x1x48x64xf32>, tensor<3x64x64xf32>) -> tensor<2x3x48x64xf32>
  func.return %c : tensor<2x3x48x64xf32>
}
// CHECK:       func.func @batched()
// CHECK:         tile.exchange 4096 words {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive]
