// An FP16 GEMM: C[256x192] = A[256x320] x B[320x192].
// Run it: ipu-run examples/gemm_f16.mlir --tiles 16
func.func @gemm(%a: tensor<256x320xf16>, %b: tensor<320x192xf16>) -> tensor<256x192xf16> {
  %c = graph.gemm %a, %b : (tensor<256x320xf16>, tensor<320x192xf16>) -> tensor<256x192xf16>
  func.return %c : tensor<256x192xf16>
}
