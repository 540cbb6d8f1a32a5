// The catalog is pinned to the row-plan candidates (the default catalog before the grid plan):
// this file tests the row plan; the grid plan has mid-to-tile-gemm-grid.mlir.
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=1 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64}' | filecheck %s --check-prefixes=CHECK,T1
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64}' | filecheck %s --check-prefixes=CHECK,T4
// RUN: ipu-opt %s --pass-pipeline='builtin.module(graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64})' | filecheck %s --check-prefixes=CHECK,T4
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64}' | filecheck %s --check-prefixes=CHECK,T16

// FP16 128x256 @ 256x64: rows in 16-blocks over R = min(T, 8) tiles, K in one 64-block
// partition on the left, right blocks (4 x 1) spread over min(4, T) tiles along K.
func.func @f16(%a: tensor<128x256xf16>, %b: tensor<256x64xf16>) -> tensor<128x64xf16> {
  %c = graph.gemm %a, %b : (tensor<128x256xf16>, tensor<256x64xf16>) -> tensor<128x64xf16>
  func.return %c : tensor<128x64xf16>
}

// T1:       builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 1, indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f16_r16", "amp_gemm_f16_r32", "amp_gemm_f16_r64", "amp_gemm_f32_r16", "amp_gemm_f32_r32", "amp_gemm_f32_r64", "amp_gemm_f8_r16", "amp_gemm_f8_r32", "amp_gemm_f8_r64"], scheduling = in_order, profiling = off>}
// T4:       builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 4,
// T16:      builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 16,

// CHECK-LABEL: func.func @f16
// T1-SAME:  (%a: tensor<128x256xf16, #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>, %b: tensor<256x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<128x64xf16, #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>>
// T4-SAME:  (%a: tensor<128x256xf16, #mid.format<f16, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, %b: tensor<256x64xf16, #mid.format<f16, amp_right, [64 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>>) -> tensor<128x64xf16, #mid.format<f16, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// T16-SAME: (%a: tensor<128x256xf16, #mid.format<f16, amp_left, [16 x 8 pad, 64 x 1 pad], replication = 1, group = 16, standard>>, %b: tensor<256x64xf16, #mid.format<f16, amp_right, [64 x 4 pad, 64 x 1 pad], replication = 1, group = 16, standard>>) -> tensor<128x64xf16, #mid.format<f16, amp_output, [16 x 8 pad, 64 x 1 pad], replication = 1, group = 16, interleaved>>
// CHECK-NEXT: %c = mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r16", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16p32_init, accum = @amp_gemm_f16p32_accum>, accumulate = f32, amp = "A16/B16x16/C16", operands = [
// T1-SAME:  #mid.operand<lhs : left, #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>, align = 32, tail = 16>, #mid.operand<rhs : right, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>, align = 32, tail = 0>, #mid.operand<out : output, #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>, align = 32, tail = 0>
// T4-SAME:  #mid.operand<lhs : left, #mid.format<f16, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 16>, #mid.operand<rhs : right, #mid.format<f16, amp_right, [64 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 0>, #mid.operand<out : output, #mid.format<f16, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>, align = 32, tail = 0>
// T16-SAME: #mid.operand<lhs : left, #mid.format<f16, amp_left, [16 x 8 pad, 64 x 1 pad], replication = 1, group = 16, standard>, align = 32, tail = 16>, #mid.operand<rhs : right, #mid.format<f16, amp_right, [64 x 4 pad, 64 x 1 pad], replication = 1, group = 16, standard>, align = 32, tail = 0>, #mid.operand<out : output, #mid.format<f16, amp_output, [16 x 8 pad, 64 x 1 pad], replication = 1, group = 16, interleaved>, align = 32, tail = 0>
// CHECK-SAME: ], distinct = [(out, lhs)], alias = none>
// CHECK-NEXT: func.return %c



// FP32, batch broadcast [2,1,100,64] x [2,64,70] -> [2,2,100,70]: batch axes 1 x 1, rows padded
// to whole row blocks, N = 70 padded to two 64-blocks (spread over min(2, T) tiles).
func.func @f32_batched(%a: tensor<2x1x100x64xf32>, %b: tensor<2x64x70xf32>) -> tensor<2x2x100x70xf32> {
  %c = graph.gemm %a, %b : (tensor<2x1x100x64xf32>, tensor<2x64x70xf32>) -> tensor<2x2x100x70xf32>
  func.return %c : tensor<2x2x100x70xf32>
}

// CHECK-LABEL: func.func @f32_batched
// T1-SAME:  (%a: tensor<2x1x100x64xf32, #mid.format<f32, amp_left, [1 x 1 pad, 1 x 1 pad, 16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>, %b: tensor<2x64x70xf32, #mid.format<f32, amp_right, [1 x 1 pad, 64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<2x2x100x70xf32, #mid.format<f32, amp_output, [1 x 1 pad, 1 x 1 pad, 16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>>
// T4-SAME:  (%a: tensor<2x1x100x64xf32, #mid.format<f32, amp_left, [1 x 1 pad, 1 x 1 pad, 16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, %b: tensor<2x64x70xf32, #mid.format<f32, amp_right, [1 x 1 pad, 64 x 1 pad, 64 x 2 pad], replication = 1, group = 4, standard>>) -> tensor<2x2x100x70xf32, #mid.format<f32, amp_output, [1 x 1 pad, 1 x 1 pad, 16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// T16-SAME: (%a: tensor<2x1x100x64xf32, #mid.format<f32, amp_left, [1 x 1 pad, 1 x 1 pad, 16 x 7 pad, 64 x 1 pad], replication = 1, group = 16, standard>>, %b: tensor<2x64x70xf32, #mid.format<f32, amp_right, [1 x 1 pad, 64 x 1 pad, 64 x 2 pad], replication = 1, group = 16, standard>>) -> tensor<2x2x100x70xf32, #mid.format<f32, amp_output, [1 x 1 pad, 1 x 1 pad, 16 x 7 pad, 64 x 1 pad], replication = 1, group = 16, interleaved>>
// CHECK-NEXT: %c = mid.gemm %a, %b plan #mid.plan<"amp_gemm_f32_r16", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f32_init, accum = @amp_gemm_f32_accum>, accumulate = f32, amp = "A8/B8x16/C16", operands = [#mid.operand<lhs : left, #mid.format<f32, amp_left,
// CHECK-SAME: distinct = [(out, lhs)], alias = none> {ipu.estimate = {{[1-9][0-9]*}} : i64} : (tensor<2x1x100x64xf32, {{.*}}>, tensor<2x64x70xf32, {{.*}}>) -> tensor<2x2x100x70xf32, #mid.format<f32, amp_output,
// CHECK-NEXT: func.return %c



// 96 rows on 4 tiles: 16-row blocks need ceil(6 / 4) = 2 blocks per tile (32 rows, last tile
// half padding); 32-row blocks use 3 tiles of 32 rows with nearer receivers: selection picks r32.
func.func @selection(%a: tensor<96x64xf16>, %b: tensor<64x64xf16>) -> tensor<96x64xf16> {
  %c = graph.gemm %a, %b : (tensor<96x64xf16>, tensor<64x64xf16>) -> tensor<96x64xf16>
  func.return %c : tensor<96x64xf16>
}
// CHECK-LABEL: func.func @selection
// T1:  mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r16"
// T4:  mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r32"
// T4-SAME: #mid.operand<lhs : left, #mid.format<f16, amp_left, [32 x 3 pad, 64 x 1 pad], replication = 1, group = 4, standard>
// T16: mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r16"
// T16-SAME: #mid.operand<lhs : left, #mid.format<f16, amp_left, [16 x 6 pad, 64 x 1 pad], replication = 1, group = 16, standard>
