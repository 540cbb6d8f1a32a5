// RUN: ipu-opt %s -p 'graph-to-mid{tiles=64},insert-conversions' | filecheck %s
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=64},insert-conversions' | ipu-opt | filecheck %s

// One conversion per value and format: the three projections of one layer norm want its
// result in the same amp_left format, and the second and third take the first one's
// mid.rearrange (selection priced it once, at %q).
func.func @qkv(%x: tensor<128x256xf16>, %w: tensor<256xf16>, %b: tensor<256xf16>, %wq: tensor<256x256xf16>, %wk: tensor<256x256xf16>, %wv: tensor<256x256xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>) {
  %n = graph.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<128x256xf16>, tensor<256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
  %q = graph.gemm %n, %wq : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  %k = graph.gemm %n, %wk : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  %v = graph.gemm %n, %wv : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  func.return %q, %k, %v : tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>
}
// CHECK:      %n = mid.layer_norm %x
// CHECK-NEXT: %[[N:.*]] = mid.rearrange %n {ipu.for = "graph.gemm %q"}
// CHECK-NOT:  mid.rearrange
// CHECK:      %q = mid.gemm %[[N]], %wq
// CHECK-NOT:  mid.rearrange
// CHECK:      %k = mid.gemm %[[N]], %wk
// CHECK-NOT:  mid.rearrange
// CHECK:      %v = mid.gemm %[[N]], %wv
