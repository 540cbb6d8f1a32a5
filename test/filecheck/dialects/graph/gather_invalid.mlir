// RUN: ipu-opt %s --split-input-file --verify-diagnostics
// Every diagnostic of graph.gather, in the user's terms.

func.func @i64_indices(%t: tensor<10x4xf32>, %ids: tensor<3xi64>) {
  // expected-error @+1 {{graph.gather: indices has type tensor<3xi64>; indices are i32 tensors without encoding}}
  %e = graph.gather %t, %ids : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return
}

// -----

func.func @float_indices(%t: tensor<10x4xf32>, %ids: tensor<3xf32>) {
  // expected-error @+1 {{graph.gather: indices has type tensor<3xf32>; indices are i32 tensors without encoding}}
  %e = graph.gather %t, %ids : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

func.func @integer_table(%t: tensor<10x4xi32>, %ids: tensor<3xi32>) {
  // expected-error @+1 {{graph.gather: table has element type i32; graph tensors are f32, f16 or f8E4M3FNUZ}}
  %e = graph.gather %t, %ids : (tensor<10x4xi32>, tensor<3xi32>) -> tensor<3x4xi32>
  func.return
}

// -----

func.func @scalar_table(%t: tensor<f32>, %ids: tensor<3xi32>) {
  // expected-error @+1 {{graph.gather: the table has shape [] and no rows to gather}}
  %e = graph.gather %t, %ids : (tensor<f32>, tensor<3xi32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @result_shape(%t: tensor<10x4xf32>, %ids: tensor<2x3xi32>) {
  // expected-error @+1 {{graph.gather: result shape [6, 4] does not match [2, 3, 4] (the indices' shape [2, 3] followed by the table's trailing axes [4])}}
  %e = graph.gather %t, %ids : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<6x4xf32>
  func.return
}

// -----

func.func @element_type(%t: tensor<10x4xf32>, %ids: tensor<3xi32>) {
  // expected-error @+1 {{graph.gather: result element type f16 differs from table element type f32}}
  %e = graph.gather %t, %ids : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf16>
  func.return
}

// -----

func.func @dynamic_indices(%t: tensor<10x4xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{graph.gather: indices must have static extents >= 1, got tensor<?xi32>}}
  %e = graph.gather %t, %ids : (tensor<10x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @computed_indices(%t: tensor<10x4xf32>, %ids: tensor<3xi32>) {
  graph.repeat 1 invariant(%i = %ids : tensor<3xi32>, %tt = %t : tensor<10x4xf32>) {
    // expected-error @+1 {{graph.gather: indices must be an argument of the graph function (index tensors are inputs the host writes; no graph op computes them)}}
    %e = graph.gather %tt, %i : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
    graph.yield
  }
  func.return
}
