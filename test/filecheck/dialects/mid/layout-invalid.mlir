// RUN: ipu-opt %s --split-input-file --verify-diagnostics

// Verifier errors of mid.layer_norm and the layout ops.

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#V = #mid.format<f32, row_major, [1 x 1 pad], replication = 1, group = 1, standard>
#L = #mid.plan<"p", #mid.dispatch<pointwise, init = @layer_norm>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<weight : input, #V, align = 8, tail = 0>, #mid.operand<bias : input, #V, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @layer_norm_result(%x: tensor<4x8xf32, #F>, %w: tensor<8xf32, #V>) {
  // expected-error @+1 {{mid.layer_norm: result shape [8, 4] does not match [4, 8] (the input shape)}}
  %o = mid.layer_norm %x, %w, %w eps 1.0e-05 plan #L : (tensor<4x8xf32, #F>, tensor<8xf32, #V>, tensor<8xf32, #V>) -> tensor<8x4xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#V = #mid.format<f32, row_major, [1 x 1 pad], replication = 1, group = 1, standard>
#L = #mid.plan<"p", #mid.dispatch<pointwise, init = @layer_norm>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<weight : input, #F, align = 8, tail = 0>, #mid.operand<bias : input, #V, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @layer_norm_weight(%x: tensor<4x8xf32, #F>, %w: tensor<1x8xf32, #F>, %b: tensor<8xf32, #V>) {
  // expected-error @+1 {{mid.layer_norm: weight has shape [1, 8], expected [8] (one element per entry of the normalized last axis of [4, 8])}}
  %o = mid.layer_norm %x, %w, %b eps 1.0e-05 plan #L : (tensor<4x8xf32, #F>, tensor<1x8xf32, #F>, tensor<8xf32, #V>) -> tensor<4x8xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#V = #mid.format<f32, row_major, [1 x 1 pad], replication = 1, group = 1, standard>
#L = #mid.plan<"p", #mid.dispatch<pointwise, init = @layer_norm>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<weight : input, #V, align = 8, tail = 0>, #mid.operand<bias : input, #V, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @layer_norm_eps(%x: tensor<4x8xf32, #F>, %w: tensor<8xf32, #V>) {
  // expected-error @+1 {{mid.layer_norm: eps must be a finite positive number, got 0.0}}
  %o = mid.layer_norm %x, %w, %w eps 0.0 plan #L : (tensor<4x8xf32, #F>, tensor<8xf32, #V>, tensor<8xf32, #V>) -> tensor<4x8xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#H = #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#P = #mid.plan<"p", #mid.dispatch<pointwise, init = @view_shard>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #H, align = 8, tail = 0>], distinct = [], alias = none>
func.func @layout_storage(%x: tensor<4x6xf32, #F>) {
  // expected-error @+1 {{mid.reshape: out is stored as f16, src as f32: layout ops keep the storage precision}}
  %o = mid.reshape %x plan #P : tensor<4x6xf32, #F> -> tensor<6x4xf32, #H>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#P = #mid.plan<"p", #mid.dispatch<pointwise, init = @view_shard>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @reshape_count(%x: tensor<4x6xf32, #F>) {
  // expected-error @+1 {{mid.reshape: result shape [5, 4] holds 20 elements, the input [4, 6] holds 24}}
  %o = mid.reshape %x plan #P : tensor<4x6xf32, #F> -> tensor<5x4xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#P = #mid.plan<"p", #mid.dispatch<pointwise, init = @view_shard>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @transpose_permutation(%x: tensor<4x6xf32, #F>) {
  // expected-error @+1 {{mid.transpose: permutation [0, 0] is not a permutation of the 2 axes 0..1 of the input}}
  %o = mid.transpose %x permutation [0, 0] plan #P : tensor<4x6xf32, #F> -> tensor<4x4xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#P = #mid.plan<"p", #mid.dispatch<pointwise, init = @view_shard>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @transpose_result(%x: tensor<4x6xf32, #F>) {
  // expected-error @+1 {{mid.transpose: result shape [4, 6] does not match [6, 4] (the input [4, 6] permuted by [1, 0])}}
  %o = mid.transpose %x permutation [1, 0] plan #P : tensor<4x6xf32, #F> -> tensor<4x6xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#P = #mid.plan<"p", #mid.dispatch<pointwise, init = @view_shard>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @slice_bounds(%x: tensor<4x6xf32, #F>) {
  // expected-error @+1 {{mid.slice: axis 1 takes [4, 8) of extent 6; slices need 0 <= start < end <= extent}}
  %o = mid.slice %x starts [0, 4] ends [4, 8] steps [1, 1] plan #P : tensor<4x6xf32, #F> -> tensor<4x4xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#P = #mid.plan<"p", #mid.dispatch<pointwise, init = @view_shard>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @slice_result(%x: tensor<4x6xf32, #F>) {
  // expected-error @+1 {{mid.slice: result shape [4, 6] does not match [4, 3] (starts [0, 0], ends [4, 6], steps [1, 2] of [4, 6])}}
  %o = mid.slice %x starts [0, 0] ends [4, 6] steps [1, 2] plan #P : tensor<4x6xf32, #F> -> tensor<4x6xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#C = #mid.plan<"p", #mid.dispatch<pointwise, init = @view_shard>, accumulate = f32, amp = none, operands = [#mid.operand<input0 : input, #F, align = 8, tail = 0>, #mid.operand<input1 : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @concat_axis(%a: tensor<4x6xf32, #F>, %b: tensor<3x6xf32, #F>) {
  // expected-error @+1 {{mid.concat: input #1 [3, 6] differs from input #0 [4, 6] at axis 0; only the concatenation axis 1 may differ}}
  %o = mid.concat %a, %b axis 1 plan #C : (tensor<4x6xf32, #F>, tensor<3x6xf32, #F>) -> tensor<4x12xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#C = #mid.plan<"p", #mid.dispatch<pointwise, init = @view_shard>, accumulate = f32, amp = none, operands = [#mid.operand<input0 : input, #F, align = 8, tail = 0>, #mid.operand<input1 : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @concat_result(%a: tensor<4x6xf32, #F>, %b: tensor<4x2xf32, #F>) {
  // expected-error @+1 {{mid.concat: result shape [4, 6] does not match [4, 8] (the inputs joined along axis 1)}}
  %o = mid.concat %a, %b axis 1 plan #C : (tensor<4x6xf32, #F>, tensor<4x2xf32, #F>) -> tensor<4x6xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#P = #mid.plan<"p", #mid.dispatch<pointwise, init = @view_shard>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @concat_plan_names(%a: tensor<4x6xf32, #F>) {
  // expected-error @+1 {{mid.concat: plan p has no entry for operand 'input0'}}
  %o = mid.concat %a axis 1 plan #P : (tensor<4x6xf32, #F>) -> tensor<4x6xf32, #F>
  func.return
}
