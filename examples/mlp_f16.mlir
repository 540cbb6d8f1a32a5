// A transformer MLP: gemm -> add bias -> exact gelu -> gemm with a transposed weight
// (`transpose_rhs`, as PyTorch's nn.Linear stores it) -> residual add. Sequence 64,
// width 128, hidden 256, f16.
//
// Run it: ipu-run examples/mlp_f16.mlir --tiles 16
func.func @mlp(%x: tensor<64x128xf16>, %w1: tensor<128x256xf16>, %b1: tensor<256xf16>,
               %w2: tensor<128x256xf16>) -> tensor<64x128xf16> {
  %up = graph.gemm %x, %w1 : (tensor<64x128xf16>, tensor<128x256xf16>) -> tensor<64x256xf16>
  %up_b = graph.add %up, %b1 : (tensor<64x256xf16>, tensor<256xf16>) -> tensor<64x256xf16>
  %act = graph.gelu %up_b : tensor<64x256xf16> -> tensor<64x256xf16>
  %down = graph.gemm %act, %w2 transpose_rhs : (tensor<64x256xf16>, tensor<128x256xf16>) -> tensor<64x128xf16>
  %out = graph.add %x, %down : (tensor<64x128xf16>, tensor<64x128xf16>) -> tensor<64x128xf16>
  func.return %out : tensor<64x128xf16>
}
