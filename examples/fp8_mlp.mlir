// FP8 storage (float8_e4m3fnuz, value = q * 2^scale) through a small MLP: an FP8 GEMM on the
// AMP (FP16 partials at the FP8 rate, rounded once to the FP8 result), a bias add and gelu.
// ipu-run's random inputs are stored codes q in [-1, 1); the scales keep every result well
// inside the FP8 range.
//
// Run it: ipu-run examples/fp8_mlp.mlir --tiles 4
func.func @fp8_mlp(%x: tensor<64x128xf8E4M3FNUZ, #graph.fp8_scale<1>>,
                   %w: tensor<128x64xf8E4M3FNUZ, #graph.fp8_scale<-1>>,
                   %b: tensor<64xf8E4M3FNUZ, #graph.fp8_scale<1>>)
    -> tensor<64x64xf8E4M3FNUZ, #graph.fp8_scale<-3>> {
  %y = graph.gemm %x, %w : (tensor<64x128xf8E4M3FNUZ, #graph.fp8_scale<1>>, tensor<128x64xf8E4M3FNUZ, #graph.fp8_scale<-1>>) -> tensor<64x64xf8E4M3FNUZ, #graph.fp8_scale<-3>>
  %yb = graph.add %y, %b : (tensor<64x64xf8E4M3FNUZ, #graph.fp8_scale<-3>>, tensor<64xf8E4M3FNUZ, #graph.fp8_scale<1>>) -> tensor<64x64xf8E4M3FNUZ, #graph.fp8_scale<-3>>
  %g = graph.gelu %yb : tensor<64x64xf8E4M3FNUZ, #graph.fp8_scale<-3>> -> tensor<64x64xf8E4M3FNUZ, #graph.fp8_scale<-3>>
  func.return %g : tensor<64x64xf8E4M3FNUZ, #graph.fp8_scale<-3>>
}
