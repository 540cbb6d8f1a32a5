// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_grid,amp_gemm_f32_grid}'
// What the grid GEMM plan does not run (planning/gemm_grid.py): the selector says why.

// The grid plan reads A and B untransposed (the default catalog takes a row plan here).
func.func @transposed(%a: tensor<64x32xf16>, %b: tensor<64x64xf16>) -> tensor<32x64xf16> {
  // expected-error @+1 {{graph.gemm %l: no valid operator plan: amp_gemm_f16_grid, amp_gemm_f32_grid: the grid plan reads lhs untransposed; lhs is transposed}}
  %l = graph.gemm %a, %b transpose_lhs : (tensor<64x32xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  func.return %l : tensor<32x64xf16>
}

// -----

func.func @transposed_rhs(%a: tensor<32x64xf16>, %b: tensor<64x64xf16>) -> tensor<32x64xf16> {
  // expected-error @+1 {{graph.gemm %l: no valid operator plan: amp_gemm_f16_grid, amp_gemm_f32_grid: the grid plan reads rhs untransposed; rhs is transposed}}
  %l = graph.gemm %a, %b transpose_rhs : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  func.return %l : tensor<32x64xf16>
}

// -----

// One GEMM per grid: batch slices with a B each are for the row plan (slices of one B fold
// into one GEMM: planning/gemm_fold.py, test/pytest/test_gemm_fold.py).
func.func @batched(%a: tensor<2x32x64xf32>, %b: tensor<2x64x64xf32>) -> tensor<2x32x64xf32> {
  // expected-error @+1 {{graph.gemm %c: no valid operator plan: amp_gemm_f16_grid: init kernel @amp_gemm_f16_init does not run f32 operands; amp_gemm_f32_grid: the grid plan runs one GEMM; this one has 2 batch slices}}
  %c = graph.gemm %a, %b : (tensor<2x32x64xf32>, tensor<2x64x64xf32>) -> tensor<2x32x64xf32>
  func.return %c : tensor<2x32x64xf32>
}
