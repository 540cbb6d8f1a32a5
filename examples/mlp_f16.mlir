// A transformer MLP: gemm -> add bias -> exact gelu -> gemm with a transposed weight
// (`transpose_rhs`, as PyTorch's nn.Linear stores it) -> residual add. Sequence 128,
// width 256, hidden 512, f16.
//
// Run it: ipu-run examples/mlp_f16.mlir --tiles 16
func.func @mlp(%x: tensor<128x256xf16>, %w1: tensor<256x512xf16>, %b1: tensor<512xf16>,
               %w2: tensor<256x512xf16>) -> tensor<128x256xf16> {
  %up = graph.gemm %x, %w1 : (tensor<128x256xf16>, tensor<256x512xf16>) -> tensor<128x512xf16>
  %up_b = graph.add %up, %b1 : (tensor<128x512xf16>, tensor<512xf16>) -> tensor<128x512xf16>
  %act = graph.gelu %up_b : tensor<128x512xf16> -> tensor<128x512xf16>
  %down = graph.gemm %act, %w2 transpose_rhs : (tensor<128x512xf16>, tensor<256x512xf16>) -> tensor<128x256xf16>
  %out = graph.add %x, %down : (tensor<128x256xf16>, tensor<128x256xf16>) -> tensor<128x256xf16>
  func.return %out : tensor<128x256xf16>
}
