// linalg input given to the pipeline without convert-linalg-to-graph: graph-to-mid names the
// first op it cannot take, at its line, and the pass that converts it (ipu-opt and xdsl-opt).
// RUN: ipu-opt %s --verify-diagnostics -p 'ipu-pipeline{tiles=4}'
// RUN: not xdsl-opt %s -p 'ipu-pipeline{tiles=4}' 2>&1 | filecheck %s --check-prefix=XDSL
func.func @mm(%a: tensor<64x128xf32>, %b: tensor<128x32xf32>) -> tensor<64x32xf32> {
  // expected-error @+1 {{graph-to-mid: tensor.empty (result %e) is not a graph op; run convert-linalg-to-graph first}}
  %e = tensor.empty() : tensor<64x32xf32>
  %c = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x32xf32>) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  func.return %c : tensor<64x32xf32>
}
// XDSL-NOT: Traceback
// XDSL: error: graph-to-mid: tensor.empty (result %e) is not a graph op; run convert-linalg-to-graph first
// XDSL-NOT: Traceback
