// Four identical MLP layers over a weight sequence: the activation is carried from layer to
// layer, the bias is shared (invariant), and layer i uses weights %ws[i] (a sequence).
// Each layer: x <- x + gelu(x @ W_i + b). Sequence 64, width 128, f32.
//
// Run the reference: ipu-run examples/repeat_layers.mlir --reference
func.func @repeat_layers(%x0: tensor<64x128xf32>, %b: tensor<128xf32>, %ws: tensor<4x128x128xf32>) -> tensor<64x128xf32> {
  %out = graph.repeat 4 carried(%x = %x0 : tensor<64x128xf32>) invariant(%bias = %b : tensor<128xf32>) sequence(%w = %ws : tensor<4x128x128xf32>) {
    %y = graph.gemm %x, %w : (tensor<64x128xf32>, tensor<128x128xf32>) -> tensor<64x128xf32>
    %yb = graph.add %y, %bias : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    %g = graph.gelu %yb : tensor<64x128xf32> -> tensor<64x128xf32>
    %next = graph.add %x, %g : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
    graph.yield %next : tensor<64x128xf32>
  } -> tensor<64x128xf32>
  func.return %out : tensor<64x128xf32>
}
