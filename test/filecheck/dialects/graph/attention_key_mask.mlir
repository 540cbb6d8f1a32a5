// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

// graph.attention with a key padding mask (an i32 [batch..., Sk] function argument, 0 = the
// key is masked for every head and query row): custom and generic forms round-trip, with and
// without causal and scale.

func.func @bert(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x16x32xf32>, %v: tensor<2x4x16x32xf32>, %m: tensor<2x16xi32>, %h: tensor<3x8x16xf16>, %hm: tensor<8xi32>) -> (tensor<2x4x16x32xf32>, tensor<3x8x16xf16>) {
  %o = graph.attention %q, %k, %v key_mask %m : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x16xi32>) -> tensor<2x4x16x32xf32>
  %c = graph.attention %h, %h, %h key_mask %hm causal scale 0.125 : (tensor<3x8x16xf16>, tensor<3x8x16xf16>, tensor<3x8x16xf16>, tensor<8xi32>) -> tensor<3x8x16xf16>
  func.return %o, %c : tensor<2x4x16x32xf32>, tensor<3x8x16xf16>
}
// CHECK-LABEL: func.func @bert(
// CHECK-NEXT:    %o = graph.attention %q, %k, %v key_mask %m : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x16xi32>) -> tensor<2x4x16x32xf32>
// CHECK-NEXT:    %c = graph.attention %h, %h, %h key_mask %hm causal scale 0.125 : (tensor<3x8x16xf16>, tensor<3x8x16xf16>, tensor<3x8x16xf16>, tensor<8xi32>) -> tensor<3x8x16xf16>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "bert"
// CHECK-GENERIC:      "graph.attention"(%q, %k, %v, %m) : (tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32>, tensor<2x16xi32>) -> tensor<2x4x16x32xf32>
// CHECK-GENERIC:      "graph.attention"(%h, %h, %h, %hm) <{causal, scale = 1.250000e-01 : f64}> : (tensor<3x8x16xf16>, tensor<3x8x16xf16>, tensor<3x8x16xf16>, tensor<8xi32>) -> tensor<3x8x16xf16>
