// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

// graph.gather (an embedding lookup by i32 indices): custom and generic forms round-trip.

func.func @embed(%table: tensor<10x4xf32>, %ids: tensor<2x3xi32>, %pos: tensor<3x4xf32>, %h: tensor<7x2x8xf16>, %one: tensor<5xi32>) -> (tensor<2x3x4xf32>, tensor<5x2x8xf16>) {
  %e = graph.gather %table, %ids : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  %s = graph.add %e, %pos : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %g = graph.gather %h, %one : (tensor<7x2x8xf16>, tensor<5xi32>) -> tensor<5x2x8xf16>
  func.return %s, %g : tensor<2x3x4xf32>, tensor<5x2x8xf16>
}
// CHECK-LABEL: func.func @embed(%table: tensor<10x4xf32>, %ids: tensor<2x3xi32>
// CHECK-NEXT:    %e = graph.gather %table, %ids : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %s = graph.add %e, %pos
// CHECK-NEXT:    %g = graph.gather %h, %one : (tensor<7x2x8xf16>, tensor<5xi32>) -> tensor<5x2x8xf16>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "embed"
// CHECK-GENERIC:      "graph.gather"(%table, %ids) : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
// CHECK-GENERIC:      "graph.gather"(%h, %one) : (tensor<7x2x8xf16>, tensor<5xi32>) -> tensor<5x2x8xf16>
