// Nested repeats, f16: three outer layers, each running two inner sub-layers over its own
// slice of a weight sequence [3, 2, 128, 128] (the inner repeat's sequence is the outer
// body's element). Two carried values: the activation %x (through both repeats) and a
// residual sum %h (outer only); the bias is invariant in both.
// Inner sub-layer: a <- a + gelu(a @ W + b). Outer layer: h <- h + x_after_inner.
//
// Run the reference: ipu-run examples/nested_repeat_f16.mlir --reference
func.func @nested_repeat(%x0: tensor<64x128xf16>, %h0: tensor<64x128xf16>, %b: tensor<128xf16>, %ws: tensor<3x2x128x128xf16>) -> (tensor<64x128xf16>, tensor<64x128xf16>) {
  %out:2 = graph.repeat 3 carried(%x = %x0 : tensor<64x128xf16>, %h = %h0 : tensor<64x128xf16>) invariant(%bias = %b : tensor<128xf16>) sequence(%wl = %ws : tensor<3x2x128x128xf16>) {
    %inner = graph.repeat 2 carried(%a = %x : tensor<64x128xf16>) invariant(%bb = %bias : tensor<128xf16>) sequence(%w = %wl : tensor<2x128x128xf16>) {
      %y = graph.gemm %a, %w : (tensor<64x128xf16>, tensor<128x128xf16>) -> tensor<64x128xf16>
      %yb = graph.add %y, %bb : (tensor<64x128xf16>, tensor<128xf16>) -> tensor<64x128xf16>
      %g = graph.gelu %yb : tensor<64x128xf16> -> tensor<64x128xf16>
      %next = graph.add %a, %g : (tensor<64x128xf16>, tensor<64x128xf16>) -> tensor<64x128xf16>
      graph.yield %next : tensor<64x128xf16>
    } -> tensor<64x128xf16>
    %h1 = graph.add %h, %inner : (tensor<64x128xf16>, tensor<64x128xf16>) -> tensor<64x128xf16>
    graph.yield %inner, %h1 : tensor<64x128xf16>, tensor<64x128xf16>
  } -> tensor<64x128xf16>, tensor<64x128xf16>
  func.return %out#0, %out#1 : tensor<64x128xf16>, tensor<64x128xf16>
}
