// Option and policy diagnostics of graph-to-mid, one run each.
// RUN: not ipu-opt %s -p 'graph-to-mid{tiles=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not ipu-opt %s -p 'graph-to-mid{tiles=1473}' 2>&1 | filecheck %s --check-prefix=MANY
// RUN: not ipu-opt %s --pass-pipeline='builtin.module(graph-to-mid{tiles=1473})' 2>&1 | filecheck %s --check-prefix=MANY
// RUN: not ipu-opt %s -p 'graph-to-mid' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not ipu-opt %s -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16,amp_gemm_f8}' 2>&1 | filecheck %s --check-prefix=CATALOG
// RUN: not ipu-opt %s -p 'graph-to-mid{tiles=4 target=gc200}' 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not ipu-opt %s -p 'graph-to-mid{tiles=4 indivisible=reject}' 2>&1 | filecheck %s --check-prefix=REJECT
// RUN: not ipu-opt %s --pass-pipeline='builtin.module(graph-to-mid{tiles=4 indivisible=reject})' 2>&1 | filecheck %s --check-prefix=REJECT
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r64}' | filecheck %s --check-prefix=ONLY64
// Padding of the row plan (catalog pinned to the row plans) and of the grid plan the default
// catalog picks (ipu-run on 4 tiles: PASS):
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4 indivisible=pad catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64}' | filecheck %s --check-prefix=PAD
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4 indivisible=pad}' | filecheck %s --check-prefix=PADGRID

// 100 rows are not a multiple of any row block, 70 columns not a multiple of 64.
func.func @indivisible(%a: tensor<100x64xf16>, %b: tensor<64x70xf16>) -> tensor<100x70xf16> {
  %c = graph.gemm %a, %b : (tensor<100x64xf16>, tensor<64x70xf16>) -> tensor<100x70xf16>
  func.return %c : tensor<100x70xf16>
}

// ZERO: graph-to-mid: tiles=0 is outside 1..1472, the tile count of target ipu21
// MANY: graph-to-mid: tiles=1473 is outside 1..1472, the tile count of target ipu21
// MISSING: graph-to-mid: option tiles is required (tiles=N)
// CATALOG: graph-to-mid: unknown GEMM candidate(s) amp_gemm_f8; known: amp_gemm_f16_r16, amp_gemm_f16_r32, amp_gemm_f16_r64, amp_gemm_f32_r16, amp_gemm_f32_r32, amp_gemm_f32_r64, amp_gemm_f8_r16, amp_gemm_f8_r32, amp_gemm_f8_r64, amp_gemm_f16_grid, amp_gemm_f32_grid, amp_gemm_f8_grid, amp_gemm_f16_r16_p16, amp_gemm_f16_r32_p16, amp_gemm_f16_r64_p16, amp_gemm_f16_grid_p16
// TARGET: graph-to-mid: unknown target 'gc200'; known targets: ipu21
// REJECT: graph.gemm %c: no valid operator plan: amp_gemm_f16_r16, amp_gemm_f16_grid: lhs axis -2 extent 100 is not a multiple of block 16 and the tiling rejects padding; amp_gemm_f16_r32: lhs axis -2 extent 100 is not a multiple of block 32 and the tiling rejects padding; amp_gemm_f16_r64: lhs axis -2 extent 100 is not a multiple of block 64 and the tiling rejects padding; amp_gemm_f32_r16, amp_gemm_f32_r32, amp_gemm_f32_r64, amp_gemm_f32_grid, amp_gemm_f32_ksplit: init kernel @amp_gemm_f32_init does not run f16 operands; amp_gemm_f8_r16, amp_gemm_f8_r32, amp_gemm_f8_r64, amp_gemm_f8_grid: init kernel @amp_gemm_f8_init does not run f16 operands; amp_gemm_f16_ksplit: the K-split plan gives each of its two layers half of K; K has 1 block(s) of 64, an odd number
// ONLY64: ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f16_r64"], scheduling = in_order, profiling = off>
// ONLY64: mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r64"
// PAD: func.func @indivisible(%a: tensor<100x64xf16, #mid.format<f16, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, %b: tensor<64x70xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 2 pad], replication = 1, group = 4, standard>>) -> tensor<100x70xf16, #mid.format<f16, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// PAD: mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r16"
// The grid plan on 4 tiles: a 4 x 1 grid (16-row blocks, N = 70 in one 64-column block per
// tile), A's K (one block) in C = 1 chunk, B's K cut into R = 4 chunks (padded).
// PADGRID: func.func @indivisible(%a: tensor<100x64xf16, #mid.format<f16, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, %b: tensor<64x70xf16, #mid.format<f16, amp_right, [64 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>>) -> tensor<100x70xf16, #mid.format<f16, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// PADGRID: mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_grid", #mid.dispatch<gemm_grid, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>
