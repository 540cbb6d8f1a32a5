// Without normalize-repeats' check (run on its own here, the sequence is stored normalized
// already on one tile): mid-to-tile still refuses 12-byte blocks that must be 8-byte aligned.
// RUN: ipu-opt %s --verify-diagnostics -p 'graph-to-mid{tiles=1},insert-conversions,mid-to-tile'
func.func @odd(%x0: tensor<4x3xf32>, %bs: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{mid-to-tile: sequence operand #0 (%bs) advances by 12 bytes per iteration, not a multiple of its 8-byte alignment}}
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4x3xf32>) sequence(%b = %bs : tensor<2x3xf32>) {
    %y = graph.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    graph.yield %y : tensor<4x3xf32>
  } -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}
