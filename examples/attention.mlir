// Attention over [batch, heads, seq, head_dim]: causal with the default scale 1/sqrt(64) in
// f16, and unmasked with an explicit scale in f32 (query length 32, key length 96).
//
// Run it: ipu-run examples/attention.mlir --tiles 16
func.func @attention(%q: tensor<2x4x64x64xf16>, %k: tensor<2x4x64x64xf16>, %v: tensor<2x4x64x64xf16>,
                     %q2: tensor<3x32x32xf32>, %k2: tensor<3x96x32xf32>, %v2: tensor<3x96x32xf32>)
    -> (tensor<2x4x64x64xf16>, tensor<3x32x32xf32>) {
  %causal = graph.attention %q, %k, %v causal : (tensor<2x4x64x64xf16>, tensor<2x4x64x64xf16>, tensor<2x4x64x64xf16>) -> tensor<2x4x64x64xf16>
  %plain = graph.attention %q2, %k2, %v2 scale 0.25 : (tensor<3x32x32xf32>, tensor<3x96x32xf32>, tensor<3x96x32xf32>) -> tensor<3x32x32xf32>
  func.return %causal, %plain : tensor<2x4x64x64xf16>, tensor<3x32x32xf32>
}
