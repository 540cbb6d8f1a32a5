// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'graph-to-mid{tiles=4}'

// A zero extent is a diagnostic naming the graph op and the axis (graph.gemm's verifier reports
// it before graph-to-mid runs; graph-to-mid's own check, for unverified IR, is pinned in
// test/pytest/test_gemm_plans.py), never a tiling error that names no op.
func.func @zero_rows(%a: tensor<0x64xf16>, %b: tensor<64x64xf16>) -> tensor<0x64xf16> {
  // expected-error-re @+1 {{graph.gemm{{.*}}lhs has shape [0, 64] with extent 0 at axis 0}}
  %c = graph.gemm %a, %b : (tensor<0x64xf16>, tensor<64x64xf16>) -> tensor<0x64xf16>
  func.return %c : tensor<0x64xf16>
}

// -----

func.func @zero_k(%a: tensor<16x0xf32>, %b: tensor<0x64xf32>) -> tensor<16x64xf32> {
  // expected-error-re @+1 {{graph.gemm{{.*}}lhs has shape [16, 0] with extent 0 at axis 1}}
  %c = graph.gemm %a, %b : (tensor<16x0xf32>, tensor<0x64xf32>) -> tensor<16x64xf32>
  func.return %c : tensor<16x64xf32>
}
