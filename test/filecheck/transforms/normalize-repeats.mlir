// The catalog is pinned to the row-plan candidates (the default catalog before the grid plan):
// this file tests the row plan; the grid plan has mid-to-tile-gemm-grid.mlir.
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64},insert-conversions,normalize-repeats' | filecheck %s
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4 inputs=row_major catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64},insert-conversions,normalize-repeats' | filecheck %s --check-prefix=ROWMAJOR

// A weight sequence: the body's GEMM wants each element as amp_right 64x64 blocks; the
// sequence becomes the same format with a whole leading axis (block i of every tile's shard
// is element i). Input policy consumer: the host writes that layout, no conversion.
func.func @seq(%x0: tensor<64x64xf16>, %ws: tensor<3x64x64xf16>) -> tensor<64x64xf16> {
  %out = graph.repeat 3 carried(%x = %x0 : tensor<64x64xf16>) sequence(%w = %ws : tensor<3x64x64xf16>) {
    %y = graph.gemm %x, %w : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    graph.yield %y : tensor<64x64xf16>
  } -> tensor<64x64xf16>
  func.return %out : tensor<64x64xf16>
}
// CHECK-LABEL: func.func @seq
// CHECK-SAME: %ws: tensor<3x64x64xf16, #mid.format<f16, amp_right, [1 x 1 pad, 64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CHECK-NEXT: %out = "mid.repeat"(%x0, %ws) <{count = 3 : i64, operandSegmentSizes = array<i32: 1, 0, 1>}> ({
// CHECK-NEXT: ^bb0(%x: {{.*}}, %w: tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>):
// CHECK: mid.yield
// ROWMAJOR-LABEL: func.func @seq
// ROWMAJOR: mid.rearrange %ws {ipu.for = "graph.repeat %out (sequence #0, normalized once outside the body)"} : tensor<3x64x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>> -> tensor<3x64x64xf16, #mid.format<f16, amp_right, [1 x 1 pad, 64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// ROWMAJOR-NEXT: "mid.repeat"

// -----

// Nested: the inner repeat's sequence is the outer body's element. It is retyped to the
// inner normalized format, and the outer sequence then stores blocks of blocks (two whole
// leading axes): still one base-pointer increment per loop.
func.func @nested(%x0: tensor<64x64xf16>, %ws: tensor<3x2x64x64xf16>) -> tensor<64x64xf16> {
  %out = graph.repeat 3 carried(%x = %x0 : tensor<64x64xf16>) sequence(%wl = %ws : tensor<3x2x64x64xf16>) {
    %in = graph.repeat 2 carried(%a = %x : tensor<64x64xf16>) sequence(%w = %wl : tensor<2x64x64xf16>) {
      %y = graph.gemm %a, %w : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
      graph.yield %y : tensor<64x64xf16>
    } -> tensor<64x64xf16>
    graph.yield %in : tensor<64x64xf16>
  } -> tensor<64x64xf16>
  func.return %out : tensor<64x64xf16>
}
// CHECK-LABEL: func.func @nested
// CHECK-SAME: %ws: tensor<3x2x64x64xf16, #mid.format<f16, amp_right, [1 x 1 pad, 1 x 1 pad, 64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CHECK: ^bb0(%x: {{.*}}, %wl: tensor<2x64x64xf16, #mid.format<f16, amp_right, [1 x 1 pad, 64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>):
// CHECK-NEXT: %in = "mid.repeat"(%x, %wl)
// CHECK-NEXT: ^bb{{[0-9]+}}(%a: {{.*}}, %w: tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>):
// ROWMAJOR-LABEL: func.func @nested
// ROWMAJOR: mid.rearrange %ws {{.*}} -> tensor<3x2x64x64xf16, #mid.format<f16, amp_right, [1 x 1 pad, 1 x 1 pad, 64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// ROWMAJOR-NOT: mid.rearrange %wl

// -----

// Consecutive blocks of 12 bytes cannot each start 8-byte aligned, as the add asks: the
// element is stored padded to 16 bytes ([4 x 1 pad]) and rearranged back to the add's
// format at the start of the body.
func.func @odd(%x0: tensor<4x3xf32>, %bs: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4x3xf32>) sequence(%b = %bs : tensor<2x3xf32>) {
    %y = graph.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    graph.yield %y : tensor<4x3xf32>
  } -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}
// CHECK-LABEL: func.func @odd
// CHECK-SAME: %bs: tensor<2x3xf32, #mid.format<f32, row_major, [1 x 1 pad, 4 x 1 pad], replication = 4, group = 4, standard>>
// CHECK: ^bb0(%x: {{.*}}, %b: tensor<3xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 4, group = 4, standard>>):
// CHECK-NEXT: %0 = mid.rearrange %b {ipu.for = "graph.repeat %r (sequence #0: its element is stored padded to an aligned stride)"} : {{.*}} -> tensor<3xf32, #mid.format<f32, row_major, [1 x 1 pad], replication = 4, group = 4, standard>>
// CHECK-NEXT: %y = mid.add %x, %0
