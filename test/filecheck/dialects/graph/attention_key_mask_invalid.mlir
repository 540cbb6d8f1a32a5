// RUN: ipu-opt %s --split-input-file --verify-diagnostics
// Every diagnostic of graph.attention's key mask, in the user's terms.

func.func @i64_mask(%q: tensor<2x4x16x32xf32>, %m: tensor<2x16xi64>) {
  // expected-error @+1 {{graph.attention: key_mask has type tensor<2x16xi64>; indices are i32 tensors without encoding}}
  %o = graph.attention %q, %q, %q key_mask %m : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x16xi64>) -> tensor<2x4x16x32xf32>
  func.return
}

// -----

func.func @float_mask(%q: tensor<2x4x16x32xf32>, %m: tensor<2x16xf32>) {
  // expected-error @+1 {{graph.attention: key_mask has type tensor<2x16xf32>; indices are i32 tensors without encoding}}
  %o = graph.attention %q, %q, %q key_mask %m : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x16xf32>) -> tensor<2x4x16x32xf32>
  func.return
}

// -----

func.func @four_d_mask(%q: tensor<2x4x16x32xf32>, %m: tensor<2x1x1x16xi32>) {
  // expected-error @+1 {{graph.attention: key_mask has shape [2, 1, 1, 16], expected [2, 16] (the batch axes [2] of the query, then one entry per key: a key padding mask, the same for every head and query row)}}
  %o = graph.attention %q, %q, %q key_mask %m : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x1x1x16xi32>) -> tensor<2x4x16x32xf32>
  func.return
}

// -----

func.func @query_length_mask(%q: tensor<2x4x8x32xf32>, %k: tensor<2x4x16x32xf32>, %m: tensor<2x8xi32>) {
  // expected-error @+1 {{graph.attention: key_mask has shape [2, 8], expected [2, 16] (the batch axes [2] of the query, then one entry per key: a key padding mask, the same for every head and query row)}}
  %o = graph.attention %q, %k, %k key_mask %m : (tensor<2x4x8x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x8xi32>) -> tensor<2x4x8x32xf32>
  func.return
}

// -----

func.func @general_mask(%q: tensor<2x4x16x32xf32>, %m: tensor<2x16x16xi32>) {
  // expected-error @+1 {{graph.attention: key_mask has shape [2, 16, 16], expected [2, 16]}}
  %o = graph.attention %q, %q, %q key_mask %m : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x16x16xi32>) -> tensor<2x4x16x32xf32>
  func.return
}

// -----

func.func @repeat_body_mask(%q: tensor<2x4x16x32xf32>, %m: tensor<2x16xi32>) {
  %r = graph.repeat 2 carried(%x = %q : tensor<2x4x16x32xf32>) invariant(%mm = %m : tensor<2x16xi32>) {
    // expected-error @+1 {{graph.attention: key_mask must be an argument of the graph function (a key mask is an input the host writes; no graph op computes i32 tensors)}}
    %o = graph.attention %x, %x, %x key_mask %mm : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x16xi32>) -> tensor<2x4x16x32xf32>
    graph.yield %o : tensor<2x4x16x32xf32>
  } -> tensor<2x4x16x32xf32>
  func.return
}
