// RUN: ipu-opt %s --split-input-file --verify-diagnostics
// Every diagnostic of graph.layer_norm and the layout ops, in the user's terms.

func.func @layer_norm_weight(%x: tensor<4x8xf32>, %w: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{graph.layer_norm: weight has shape [4], expected [8] (one element per entry of the normalized last axis of [4, 8])}}
  %n = graph.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @layer_norm_scalar(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+1 {{graph.layer_norm: the input has shape [] and no axis to normalize}}
  %n = graph.layer_norm %x, %w, %w eps 1.0e-05 : (tensor<f32>, tensor<1xf32>, tensor<1xf32>) -> tensor<f32>
  func.return
}

// -----

func.func @layer_norm_bias(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{graph.layer_norm: bias has shape [1, 8], expected [8] (one element per entry of the normalized last axis of [4, 8])}}
  %n = graph.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @layer_norm_eps(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{graph.layer_norm: eps must be a finite positive number, got 0.0}}
  %n = graph.layer_norm %x, %w, %w eps 0.0 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @layer_norm_hex_eps(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{graph.layer_norm: a hexadecimal eps is the 64 bits of an f64}}
  %n = graph.layer_norm %x, %w, %w eps -0x1 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @layer_norm_element_types(%x: tensor<4x8xf32>, %w: tensor<8xf16>) {
  // expected-error @+1 {{graph.layer_norm: weight element type f16 differs from input element type f32}}
  %n = graph.layer_norm %x, %w, %w eps 1.0e-05 : (tensor<4x8xf32>, tensor<8xf16>, tensor<8xf16>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @layer_norm_result(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{graph.layer_norm: result shape [8, 4] does not match [4, 8] (the input shape)}}
  %n = graph.layer_norm %x, %w, %w eps 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

func.func @reshape_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.reshape: result shape [4, 4] holds 16 elements, the input [4, 8] holds 32}}
  %r = graph.reshape %x : tensor<4x8xf32> -> tensor<4x4xf32>
  func.return
}

// -----

func.func @reshape_element_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.reshape: result element type f16 differs from input element type f32}}
  %r = graph.reshape %x : tensor<4x8xf32> -> tensor<32xf16>
  func.return
}

// -----

func.func @transpose_not_permutation(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{graph.transpose: permutation [0, 1, 1] is not a permutation of the 3 axes 0..2 of the input}}
  %t = graph.transpose %x permutation [0, 1, 1] : tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  func.return
}

// -----

func.func @transpose_rank(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{graph.transpose: permutation [1, 0] is not a permutation of the 3 axes 0..2 of the input}}
  %t = graph.transpose %x permutation [1, 0] : tensor<2x4x8xf32> -> tensor<4x2xf32>
  func.return
}

// -----

func.func @transpose_result(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{graph.transpose: result shape [2, 4, 8] does not match [2, 8, 4] (the input [2, 4, 8] permuted by [0, 2, 1])}}
  %t = graph.transpose %x permutation [0, 2, 1] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  func.return
}

// -----

func.func @slice_entries(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.slice: starts has 1 entries for an input of rank 2 [4, 8]; give one per axis}}
  %s = graph.slice %x starts [0] ends [4] steps [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @slice_step(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.slice: step -1 at axis 1 must be >= 1}}
  %s = graph.slice %x starts [0, 0] ends [4, 8] steps [1, -1] : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

func.func @slice_bounds(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.slice: axis 1 takes [4, 9) of extent 8; slices need 0 <= start < end <= extent}}
  %s = graph.slice %x starts [0, 4] ends [4, 9] steps [1, 1] : tensor<4x8xf32> -> tensor<4x5xf32>
  func.return
}

// -----

func.func @slice_empty(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.slice: axis 0 takes [2, 2) of extent 4; slices need 0 <= start < end <= extent}}
  %s = graph.slice %x starts [2, 0] ends [2, 8] steps [1, 1] : tensor<4x8xf32> -> tensor<1x8xf32>
  func.return
}

// -----

func.func @slice_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.slice: result shape [4, 3] does not match [4, 4] (starts [0, 1], ends [4, 8], steps [1, 2] of [4, 8])}}
  %s = graph.slice %x starts [0, 1] ends [4, 8] steps [1, 2] : tensor<4x8xf32> -> tensor<4x3xf32>
  func.return
}

// -----

func.func @concat_none() {
  // expected-error @+1 {{graph.concat: needs at least one input}}
  %c = graph.concat axis 0 : () -> tensor<4xf32>
  func.return
}

// -----

func.func @concat_axis(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.concat: axis 2 is outside the axes 0..1 of input #0 [4, 8]}}
  %c = graph.concat %a, %a axis 2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  func.return
}

// -----

func.func @concat_rank(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{graph.concat: input #1 [8] has rank 1, input #0 [4, 8] has rank 2}}
  %c = graph.concat %a, %b axis 0 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<5x8xf32>
  func.return
}

// -----

func.func @concat_extent(%a: tensor<4x8xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+1 {{graph.concat: input #1 [4, 6] differs from input #0 [4, 8] at axis 1; only the concatenation axis 0 may differ}}
  %c = graph.concat %a, %b axis 0 : (tensor<4x8xf32>, tensor<4x6xf32>) -> tensor<8x8xf32>
  func.return
}

// -----

func.func @concat_element_types(%a: tensor<4x8xf32>, %b: tensor<4x8xf16>) {
  // expected-error @+1 {{graph.concat: input #1 element type f16 differs from input #0 element type f32}}
  %c = graph.concat %a, %b axis 0 : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<8x8xf32>
  func.return
}

// -----

func.func @concat_result(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.concat: result shape [8, 8] does not match [4, 16] (the inputs joined along axis 1)}}
  %c = graph.concat %a, %a axis 1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  func.return
}

// -----

func.func @layout_operand_type(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.transpose: f32 should be of base attribute tensor}}
  %c = graph.transpose %a permutation [1, 0] : f32 -> tensor<8x4xf32>
  func.return
}
