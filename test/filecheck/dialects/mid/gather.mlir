// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

// mid.gather and the i32 (index) storage precision round-trip through both forms.
func.func @embed(%table: tensor<10x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>, %ids: tensor<3xi32, #mid.format<i32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>>) -> tensor<3x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>> {
  %e = mid.gather %table, %ids plan #mid.plan<"gather_split1", #mid.dispatch<pointwise, init = @gather_rows>, accumulate = f32, amp = none, operands = [#mid.operand<table : input, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>, align = 8, tail = 0>, #mid.operand<indices : input, #mid.format<i32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>, align = 8, tail = 0>], distinct = [], alias = none> : (tensor<10x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>, tensor<3xi32, #mid.format<i32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>>) -> tensor<3x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>
  func.return %e : tensor<3x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 2 pad], replication = 1, group = 2, standard>>
}
// CHECK: %e = mid.gather %table, %ids plan #mid.plan<"gather_split1", #mid.dispatch<pointwise, init = @gather_rows>
// CHECK-SAME: #mid.format<i32, row_major, [1 x 1 pad], replication = 2, group = 2, standard>
// CHECK-GENERIC: "mid.gather"(%table, %ids) <{plan = #mid.plan<"gather_split1"
