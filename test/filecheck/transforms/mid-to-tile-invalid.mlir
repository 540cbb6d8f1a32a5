// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'graph-to-mid{tiles=4},insert-conversions,mid-to-tile,mid-to-tile'

// Running the pass on its own output is a diagnostic, not a complaint about tile ops.
// expected-error @+1 {{mid-to-tile: the function is at the tile level already (tile.buffer %a); run mid-to-tile once}}
func.func @gemm(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %c = graph.gemm %a, %b : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  func.return %c : tensor<64x64xf16>
}
