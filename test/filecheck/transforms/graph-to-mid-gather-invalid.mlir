// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'graph-to-mid{tiles=4}'
// An i32 argument has a device format only as graph.gather's indices (replicated on the
// table's tiles): any other use is refused by name, not a traceback. (The graph ops'
// verifiers already refuse i32 operands; an op of another dialect reaches graph-to-mid.)

func.func @embed(%table: tensor<10x4xf32>, %ids: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
  %e = graph.gather %table, %ids : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  // expected-error @+1 {{graph-to-mid: argument %ids of @embed is an i32 index tensor used as operand #0 of test.op; index tensors lower only as the indices of graph.gather or the key_mask of graph.attention}}
  "test.op"(%ids) : (tensor<2x3xi32>) -> ()
  func.return %e : tensor<2x3x4xf32>
}
