// RUN: ipu-opt %s --split-input-file --verify-diagnostics

"test.op"() {f = #mid.format<i32, amp_left, [1 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>} : () -> ()
// expected-error @unknown {{format: i32 (index) tensors are stored row_major, not amp_left}}

// -----

func.func @float_indices(%table: tensor<10x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>, %ids: tensor<3xf32, #mid.format<f32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>>) -> tensor<3x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>> {
  // expected-error @+1 {{mid.gather: indices must be i32 stored as i32, got f32 stored as f32}}
  %e = mid.gather %table, %ids plan #mid.plan<"gather_split1", #mid.dispatch<pointwise, init = @gather_rows>, accumulate = f32, amp = none, operands = [#mid.operand<table : input, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>, align = 8, tail = 0>, #mid.operand<indices : input, #mid.format<i32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>, align = 8, tail = 0>], distinct = [], alias = none> : (tensor<10x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>, tensor<3xf32, #mid.format<f32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>>) -> tensor<3x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>
  func.return %e : tensor<3x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>
}

// -----

func.func @shape(%table: tensor<10x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>, %ids: tensor<3xi32, #mid.format<i32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>>) -> tensor<4x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>> {
  // expected-error @+1 {{mid.gather: result shape [4, 4] does not match}}
  %e = mid.gather %table, %ids plan #mid.plan<"gather_split1", #mid.dispatch<pointwise, init = @gather_rows>, accumulate = f32, amp = none, operands = [#mid.operand<table : input, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>, align = 8, tail = 0>, #mid.operand<indices : input, #mid.format<i32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>, align = 8, tail = 0>], distinct = [], alias = none> : (tensor<10x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>, tensor<3xi32, #mid.format<i32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>>) -> tensor<4x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>
  func.return %e : tensor<4x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>
}

// -----

func.func @element(%table: tensor<10x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>, %ids: tensor<3xi32, #mid.format<i32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>>) -> tensor<3x4xf16, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>> {
  // expected-error @+1 {{mid.gather: the result's element type f16 is not the table's f32}}
  %e = mid.gather %table, %ids plan #mid.plan<"gather_split1", #mid.dispatch<pointwise, init = @gather_rows>, accumulate = f32, amp = none, operands = [], distinct = [], alias = none> : (tensor<10x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>, tensor<3xi32, #mid.format<i32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>>) -> tensor<3x4xf16, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>
  func.return %e : tensor<3x4xf16, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>
}
