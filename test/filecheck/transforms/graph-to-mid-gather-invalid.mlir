// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'graph-to-mid{tiles=4}'
// graph.gather's i32 indices have no device format yet: refused by name, not a traceback.

// expected-error @+1 {{graph-to-mid: argument %ids of @embed is an i32 index tensor; index inputs (graph.gather) have no device lowering yet (the NumPy reference runs them: ipu-run --reference)}}
func.func @embed(%table: tensor<10x4xf32>, %ids: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
  %e = graph.gather %table, %ids : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  func.return %e : tensor<2x3x4xf32>
}
