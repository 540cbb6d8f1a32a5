// The catalog is pinned to the row-plan candidates (the default catalog before the grid plan):
// this file tests the row plan; the grid plan has mid-to-tile-gemm-grid.mlir.
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64},insert-conversions' | filecheck %s
// RUN: ipu-opt %s --split-input-file --pass-pipeline='builtin.module(graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64},insert-conversions)' | filecheck %s

// Two chained GEMMs: the first one's amp_output (interleaved) result feeds the second one's
// amp_left operand, so one explicit rearrangement is inserted; %c is returned in its own format.
func.func @chain(%a: tensor<64x64xf16>, %b: tensor<64x128xf16>, %w: tensor<128x64xf16>) -> (tensor<64x64xf16>, tensor<64x128xf16>) {
  %c = graph.gemm %a, %b : (tensor<64x64xf16>, tensor<64x128xf16>) -> tensor<64x128xf16>
  %d = graph.gemm %c, %w : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16>
  func.return %d, %c : tensor<64x64xf16>, tensor<64x128xf16>
}
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:  %c = mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r16"
// CHECK-SAME:  -> tensor<64x128xf16, #mid.format<f16, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// CHECK-NEXT:  %[[L:.*]] = mid.rearrange %c {ipu.for = "graph.gemm %d"} : tensor<64x128xf16, #mid.format<f16, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>> -> tensor<64x128xf16, #mid.format<f16, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CHECK-NEXT:  %d = mid.gemm %[[L]], %w plan
// CHECK-NEXT:  func.return %d, %c : tensor<64x64xf16, #mid.format<f16, amp_output, {{.*}}>>, tensor<64x128xf16, #mid.format<f16, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// CHECK-NOT:   unrealized_conversion_cast

// -----

// The same input consumed as the left operand of one GEMM and the right operand of another:
// the argument takes its first consumer's format, the second consumer gets a rearrangement.
func.func @shared_input(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>) {
  %y = graph.gemm %x, %x : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %y : tensor<64x64xf32>
}
// CHECK-LABEL: func.func @shared_input(%x: tensor<64x64xf32, #mid.format<f32, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>>)
// CHECK-NEXT:  %[[R:.*]] = mid.rearrange %x {ipu.for = "graph.gemm %y"} : tensor<64x64xf32, #mid.format<f32, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>> -> tensor<64x64xf32, #mid.format<f32, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CHECK-NEXT:  %y = mid.gemm %x, %[[R]] plan #mid.plan<"amp_gemm_f32_r16"
