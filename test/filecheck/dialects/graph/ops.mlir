// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

func.func @gemm(%a: tensor<128x256xf16>, %b: tensor<256x64xf16>, %a4: tensor<2x1x128x64xf32>, %e: tensor<3x32x64xf32>) -> (tensor<128x64xf16>, tensor<2x3x128x32xf32>, tensor<3x64x64xf32>) {
  %c = graph.gemm %a, %b : (tensor<128x256xf16>, tensor<256x64xf16>) -> tensor<128x64xf16>
  %d = graph.gemm %a4, %e transpose_rhs : (tensor<2x1x128x64xf32>, tensor<3x32x64xf32>) -> tensor<2x3x128x32xf32>
  %t = graph.gemm %e, %e transpose_lhs : (tensor<3x32x64xf32>, tensor<3x32x64xf32>) -> tensor<3x64x64xf32>
  func.return %c, %d, %t : tensor<128x64xf16>, tensor<2x3x128x32xf32>, tensor<3x64x64xf32>
}
// CHECK-LABEL: func.func @gemm
// CHECK-NEXT:    %c = graph.gemm %a, %b : (tensor<128x256xf16>, tensor<256x64xf16>) -> tensor<128x64xf16>
// CHECK-NEXT:    %d = graph.gemm %a4, %e transpose_rhs : (tensor<2x1x128x64xf32>, tensor<3x32x64xf32>) -> tensor<2x3x128x32xf32>
// CHECK-NEXT:    %t = graph.gemm %e, %e transpose_lhs : (tensor<3x32x64xf32>, tensor<3x32x64xf32>) -> tensor<3x64x64xf32>
// CHECK-GENERIC:      "graph.gemm"(%a, %b) : (tensor<128x256xf16>, tensor<256x64xf16>) -> tensor<128x64xf16>
// CHECK-GENERIC-NEXT: "graph.gemm"(%a4, %e) <{transpose_rhs}> : (tensor<2x1x128x64xf32>, tensor<3x32x64xf32>) -> tensor<2x3x128x32xf32>
// CHECK-GENERIC-NEXT: "graph.gemm"(%e, %e) <{transpose_lhs}> : (tensor<3x32x64xf32>, tensor<3x32x64xf32>) -> tensor<3x64x64xf32>
