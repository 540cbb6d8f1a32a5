// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

// graph.layer_norm and the layout ops (reshape, transpose, slice, concat): custom and generic
// forms round-trip.

func.func @layer_norm(%x: tensor<2x64x128xf32>, %w: tensor<128xf32>, %b: tensor<128xf32>, %h: tensor<4x8xf16>, %hw: tensor<8xf16>) -> (tensor<2x64x128xf32>, tensor<4x8xf16>) {
  %n = graph.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<2x64x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<2x64x128xf32>
  %m = graph.layer_norm %h, %hw, %hw eps 0x3FC0000000000000 : (tensor<4x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
  func.return %n, %m : tensor<2x64x128xf32>, tensor<4x8xf16>
}
// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT:    %n = graph.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<2x64x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<2x64x128xf32>
// CHECK-NEXT:    %m = graph.layer_norm %h, %hw, %hw eps 0.125 : (tensor<4x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "layer_norm"
// CHECK-GENERIC:      "graph.layer_norm"(%x, %w, %b) <{eps = 1.000000e-05 : f64}> : (tensor<2x64x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<2x64x128xf32>
// CHECK-GENERIC-NEXT: "graph.layer_norm"(%h, %hw, %hw) <{eps = 1.250000e-01 : f64}>

// -----

func.func @layout(%x: tensor<1x64x128xf32>, %f: tensor<16xf8E4M3FNUZ, #graph.fp8_scale<-3>>) -> tensor<1x2x64x64xf32> {
  %r = graph.reshape %x : tensor<1x64x128xf32> -> tensor<1x64x2x64xf32>
  %t = graph.transpose %r permutation [0, 2, 1, 3] : tensor<1x64x2x64xf32> -> tensor<1x2x64x64xf32>
  %s = graph.slice %x starts [0, 0, 64] ends [1, 64, 128] steps [1, 2, 1] : tensor<1x64x128xf32> -> tensor<1x32x64xf32>
  %s2 = graph.slice %x starts [0, 1, 0] ends [1, 64, 128] steps [1, 2, 1] : tensor<1x64x128xf32> -> tensor<1x32x128xf32>
  %c = graph.concat %s, %s, %s2 axis 2 : (tensor<1x32x64xf32>, tensor<1x32x64xf32>, tensor<1x32x128xf32>) -> tensor<1x32x256xf32>
  %q = graph.reshape %f : tensor<16xf8E4M3FNUZ, #graph.fp8_scale<-3>> -> tensor<4x4xf8E4M3FNUZ, #graph.fp8_scale<-3>>
  func.return %t : tensor<1x2x64x64xf32>
}
// CHECK-LABEL: func.func @layout
// CHECK-NEXT:    %r = graph.reshape %x : tensor<1x64x128xf32> -> tensor<1x64x2x64xf32>
// CHECK-NEXT:    %t = graph.transpose %r permutation [0, 2, 1, 3] : tensor<1x64x2x64xf32> -> tensor<1x2x64x64xf32>
// CHECK-NEXT:    %s = graph.slice %x starts [0, 0, 64] ends [1, 64, 128] steps [1, 2, 1] : tensor<1x64x128xf32> -> tensor<1x32x64xf32>
// CHECK-NEXT:    %s2 = graph.slice %x starts [0, 1, 0] ends [1, 64, 128] steps [1, 2, 1] : tensor<1x64x128xf32> -> tensor<1x32x128xf32>
// CHECK-NEXT:    %c = graph.concat %s, %s, %s2 axis 2 : (tensor<1x32x64xf32>, tensor<1x32x64xf32>, tensor<1x32x128xf32>) -> tensor<1x32x256xf32>
// CHECK-NEXT:    %q = graph.reshape %f : tensor<16xf8E4M3FNUZ, #graph.fp8_scale<-3>> -> tensor<4x4xf8E4M3FNUZ, #graph.fp8_scale<-3>>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "layout"
// CHECK-GENERIC:      "graph.reshape"(%x) : (tensor<1x64x128xf32>) -> tensor<1x64x2x64xf32>
// CHECK-GENERIC-NEXT: "graph.transpose"(%r) <{permutation = array<i64: 0, 2, 1, 3>}> : (tensor<1x64x2x64xf32>) -> tensor<1x2x64x64xf32>
// CHECK-GENERIC-NEXT: "graph.slice"(%x) <{starts = array<i64: 0, 0, 64>, ends = array<i64: 1, 64, 128>, steps = array<i64: 1, 2, 1>}> : (tensor<1x64x128xf32>) -> tensor<1x32x64xf32>
// CHECK-GENERIC-NEXT: "graph.slice"(%x) <{starts = array<i64: 0, 1, 0>, ends = array<i64: 1, 64, 128>, steps = array<i64: 1, 2, 1>}> : (tensor<1x64x128xf32>) -> tensor<1x32x128xf32>
// CHECK-GENERIC-NEXT: "graph.concat"(%s, %s, %s2) <{axis = 2 : i64}> : (tensor<1x32x64xf32>, tensor<1x32x64xf32>, tensor<1x32x128xf32>) -> tensor<1x32x256xf32>
