// RUN: ipu-opt %s --split-input-file -p insert-conversions | filecheck %s

// Bridges as graph-to-mid leaves them, covering every conversion shape.
#RM16 = #mid.format<f16, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>
#RM32 = #mid.format<f32, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>
#L16 = #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>
#L32 = #mid.format<f32, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>
func.func @casts(%a: tensor<32x64xf32, #RM32>, %h: tensor<32x64xf16, #RM16>) -> (tensor<32x64xf16, #L16>, tensor<32x64xf32, #L32>, tensor<32x64xf16, #RM16>, tensor<32x64xf32, #RM32>) {
  // narrowing + layout change: cast first (where the data is), then move the f16 data
  %n = builtin.unrealized_conversion_cast %a : tensor<32x64xf32, #RM32> to tensor<32x64xf16, #L16>
  // widening + layout change: move the f16 data first, then cast
  %w = builtin.unrealized_conversion_cast %h : tensor<32x64xf16, #RM16> to tensor<32x64xf32, #L32>
  // precision only
  %p = builtin.unrealized_conversion_cast %a : tensor<32x64xf32, #RM32> to tensor<32x64xf16, #RM16>
  // identical types: the bridge disappears
  %i = builtin.unrealized_conversion_cast %a : tensor<32x64xf32, #RM32> to tensor<32x64xf32, #RM32>
  func.return %n, %w, %p, %i : tensor<32x64xf16, #L16>, tensor<32x64xf32, #L32>, tensor<32x64xf16, #RM16>, tensor<32x64xf32, #RM32>
}
// CHECK-LABEL: func.func @casts
// CHECK-NEXT:  %[[N1:.*]] = mid.cast_precision %a : tensor<32x64xf32, #mid.format<f32, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>> -> tensor<32x64xf16, #mid.format<f16, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CHECK-NEXT:  %[[N2:.*]] = mid.rearrange %[[N1]] : tensor<32x64xf16, #mid.format<f16, row_major, {{.*}}>> -> tensor<32x64xf16, #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CHECK-NEXT:  %[[W1:.*]] = mid.rearrange %h : tensor<32x64xf16, #mid.format<f16, row_major, {{.*}}>> -> tensor<32x64xf16, #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CHECK-NEXT:  %[[W2:.*]] = mid.cast_precision %[[W1]] : tensor<32x64xf16, #mid.format<f16, amp_left, {{.*}}>> -> tensor<32x64xf32, #mid.format<f32, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CHECK-NEXT:  %[[P:.*]] = mid.cast_precision %a : tensor<32x64xf32, #mid.format<f32, row_major, {{.*}}>> -> tensor<32x64xf16, #mid.format<f16, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CHECK-NEXT:  func.return %[[N2]], %[[W2]], %[[P]], %a :

// -----

// Bridges that are not between mid tensors are not ours and stay.
func.func @foreign(%x: tensor<4xf32>) -> i32 {
  %y = builtin.unrealized_conversion_cast %x : tensor<4xf32> to i32
  func.return %y : i32
}
// CHECK-LABEL: func.func @foreign
// CHECK-NEXT:  %y = builtin.unrealized_conversion_cast %x : tensor<4xf32> to i32
