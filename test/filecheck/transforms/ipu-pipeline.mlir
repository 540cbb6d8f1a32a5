// ipu-pipeline{tiles=4} is exactly the five passes in order, spelled either way.
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'ipu-pipeline{tiles=4}' > %t.pipeline
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'graph-to-mid{tiles=4},insert-conversions,mid-to-tile,place-memory,schedule-exchange' > %t.explicit
// RUN: ipu-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(ipu-pipeline{tiles=4})' > %t.mlir-spelling
// RUN: diff %t.pipeline %t.explicit
// RUN: diff %t.pipeline %t.mlir-spelling
// RUN: filecheck %s < %t.pipeline
// indivisible=reject reaches graph-to-mid: 100 rows are no multiple of any row block.
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'ipu-pipeline{tiles=4 indivisible=reject}' | filecheck %s --check-prefix=REJECT
// profiling=cycles reaches the module's configuration (the package writer and ipu-run read it).
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'ipu-pipeline{tiles=4 profiling=cycles}' | filecheck %s --check-prefix=PROFILE
// PROFILE: ipu.config = #mid.config<target = "ipu21", tiles = 4, {{.*}}, profiling = cycles>

// FP16 [100x72] x [72x64]: padded by default (100 -> 128 rows, 72 -> 128 inner), rejected
// with indivisible=reject.
func.func @gemm(%a: tensor<100x72xf16>, %b: tensor<72x64xf16>) -> tensor<100x64xf16> {
  %c = graph.gemm %a, %b : (tensor<100x72xf16>, tensor<72x64xf16>) -> tensor<100x64xf16>
  func.return %c : tensor<100x64xf16>
}

// The output reaches the exchange level: config, placed buffers, scheduled exchanges, rows.
// The selector picks the grid plan (a 4 x 1 grid: B's K blocks go down the one grid column
// in one group; `ipu-run` of this function on 4 tiles: PASS, 9563 modeled cycles).
// CHECK:      builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad
// CHECK:        func.func @gemm() {
// CHECK-NEXT:     %a = tile.buffer @a input 0 {{.*}} from tensor<100x72xf16, {{.*}}> address 0x{{[0-9a-f]+}}
// CHECK-NEXT:     %b = tile.buffer @b input 1 {{.*}} address 0x{{[0-9a-f]+}}
// CHECK-NEXT:     %c = tile.buffer @c output 0 {{.*}} address 0x{{[0-9a-f]+}}
// CHECK-NEXT:     %c_lhs_slot = tile.buffer @c_lhs_slot scratch {{.*}} address 0x{{[0-9a-f]+}}
// CHECK:          tile.exchange {{.*}} groups 1 shift {{.*}} rows [@x0_send, @x0_receive] sender_rows array<i32: {{.*}}> receiver_rows array<i32: {{.*}}> {{.*}}row_address 0x4c000
// CHECK:          tile.exchange {{.*}} groups 1 shift {{.*}} rows [@x1_send, @x1_receive] {{.*}}row_address 0x4c{{[0-9a-f]+}}
// CHECK:        exchange.row @x0_send
// CHECK:        exchange.row @x1_receive

// REJECT: graph.gemm %c: no valid operator plan: amp_gemm_f16_r16, amp_gemm_f16_grid, amp_gemm_f16_ksplit: lhs axis -2 extent 100 is not a multiple of block 16 and the tiling rejects padding; amp_gemm_f16_r32: lhs axis -2 extent 100 is not a multiple of block 32 and the tiling rejects padding; amp_gemm_f16_r64: lhs axis -2 extent 100 is not a multiple of block 64 and the tiling rejects padding; amp_gemm_f32_r16, amp_gemm_f32_r32, amp_gemm_f32_r64, amp_gemm_f32_grid, amp_gemm_f32_ksplit: init kernel @amp_gemm_f32_init does not run f16 operands; amp_gemm_f8_r16, amp_gemm_f8_r32, amp_gemm_f8_r64, amp_gemm_f8_grid: init kernel @amp_gemm_f8_init does not run f16 operands

// -----

// FP32 broadcast batch, the same equivalence.
func.func @batched(%a: tensor<2x1x48x64xf32>, %b: tensor<3x64x64xf32>) -> tensor<2x3x48x64xf32> {
  %c = graph.gemm %a, %b : (tensor<2x1x48x64xf32>, tensor<3x64x64xf32>) -> tensor<2x3x48x64xf32>
  func.return %c : tensor<2x3x48x64xf32>
}
// CHECK:        func.func @batched() {
// CHECK:          tile.exchange 4096 words {{.*}} rows [@x0_send, @x0_receive]
// CHECK:        exchange.row @x0_receive
// REJECT:       func.func @batched() {
// REJECT:         tile.exchange 4096 words {{.*}} rows [@x0_send, @x0_receive]
