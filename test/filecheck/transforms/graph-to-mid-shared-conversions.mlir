// RUN: ipu-opt %s -p 'graph-to-mid{tiles=64},insert-conversions' | filecheck %s
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=64},insert-conversions' | ipu-opt | filecheck %s

// One conversion per value and format: the three projections of one layer norm want its
// result in the same amp_left format, and the second and third take the first one's
// mid.rearrange (selection priced it once, at %q). The layer norm's input is computed (a
// gelu); of a graph input see @qkv_of_input.
func.func @qkv(%x: tensor<128x256xf16>, %w: tensor<256xf16>, %b: tensor<256xf16>, %wq: tensor<256x256xf16>, %wk: tensor<256x256xf16>, %wv: tensor<256x256xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>) {
  %h = graph.gelu %x : tensor<128x256xf16> -> tensor<128x256xf16>
  %n = graph.layer_norm %h, %w, %b eps 1.0e-05 : (tensor<128x256xf16>, tensor<256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
  %q = graph.gemm %n, %wq : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  %k = graph.gemm %n, %wk : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  %v = graph.gemm %n, %wv : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  func.return %q, %k, %v : tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>
}
// CHECK:      %n = mid.layer_norm %h
// CHECK-NEXT: %[[N:.*]] = mid.rearrange %n {ipu.for = "graph.gemm %q"}
// CHECK-NOT:  mid.rearrange
// CHECK:      %q = mid.gemm %[[N]], %wq
// CHECK-NOT:  mid.rearrange
// CHECK:      %k = mid.gemm %[[N]], %wk
// CHECK-NOT:  mid.rearrange
// CHECK:      %v = mid.gemm %[[N]], %wv

// A layer norm of a graph input: the host writes %x as the layer norm wants it, and it takes
// the projections' amp_left panels (the column split keeps them): nothing to convert.
func.func @qkv_of_input(%x: tensor<128x256xf16>, %w: tensor<256xf16>, %b: tensor<256xf16>, %wq: tensor<256x256xf16>, %wk: tensor<256x256xf16>, %wv: tensor<256x256xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>) {
  %n = graph.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<128x256xf16>, tensor<256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
  %q = graph.gemm %n, %wq : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  %k = graph.gemm %n, %wk : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  %v = graph.gemm %n, %wv : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  func.return %q, %k, %v : tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>
}
// CHECK-LABEL: func.func @qkv_of_input
// CHECK-SAME:  %x: tensor<128x256xf16, #mid.format<f16, amp_left,
// CHECK:       %n = mid.layer_norm %x, %w, %b eps {{.*}} plan #mid.plan<"layer_norm_cols_wanted0"
// CHECK-NOT:   mid.rearrange
// CHECK:       %q = mid.gemm %n, %wq
// CHECK-NOT:   mid.rearrange
// CHECK:       %k = mid.gemm %n, %wk
// CHECK-NOT:   mid.rearrange
// CHECK:       %v = mid.gemm %n, %wv
