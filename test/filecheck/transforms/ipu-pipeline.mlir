// ipu-pipeline{tiles=4} is exactly its six passes in order, spelled either way.
// RUN: ipu-opt %s --split-input-file -p 'ipu-pipeline{tiles=4}' > %t.pipeline
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4},insert-conversions,normalize-repeats,mid-to-tile,place-memory,schedule-exchange' > %t.explicit
// RUN: ipu-opt %s --split-input-file --pass-pipeline='builtin.module(ipu-pipeline{tiles=4})' > %t.mlir-spelling
// RUN: diff %t.pipeline %t.explicit
// RUN: diff %t.pipeline %t.mlir-spelling
// RUN: filecheck %s < %t.pipeline
// profiling=cycles reaches the module's configuration (the package writer and ipu-run read it).
// RUN: ipu-opt %s --split-input-file -p 'ipu-pipeline{tiles=4 profiling=cycles}' | filecheck %s --check-prefix=PROFILE
// PROFILE: ipu.config = #mid.config<target = "ipu21", tiles = 4, {{.*}}, profiling = cycles>

// FP16 [100x72] x [72x64]: padded by default (100 -> 128 rows, 72 -> 128 inner), rejected
// with indivisible=reject.
func.func @gemm(%a: tensor<100x72xf16>, %b: tensor<72x64xf16>) -> tensor<100x64xf16> {
  %c = graph.gemm %a, %b : (tensor<100x72xf16>, tensor<72x64xf16>) -> tensor<100x64xf16>
  func.return %c : tensor<100x64xf16>
}

// The output reaches the exchange level: config, placed buffers, scheduled exchanges, rows.
// The selector picks the grid plan (a 4 x 1 grid: B's K blocks go down the one grid column
// in one group; `ipu-run` of this function on 4 tiles: PASS, 7515 modeled cycles, and the
// selector's estimate, which the function keeps, is the same).
// CHECK:      builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad
// CHECK:        func.func @gemm() attributes {ipu.estimate = 7515 : i64} {
// CHECK-NEXT:     %a = tile.buffer @a input 0 {{.*}} from tensor<100x72xf16, {{.*}}> address 0x{{[0-9a-f]+}}
// CHECK-NEXT:     %b = tile.buffer @b input 1 {{.*}} address 0x{{[0-9a-f]+}}
// CHECK-NEXT:     %c = tile.buffer @c output 0 {{.*}} address 0x{{[0-9a-f]+}}
// CHECK-NEXT:     %c_lhs_slot = tile.buffer @c_lhs_slot scratch {{.*}} address 0x{{[0-9a-f]+}}
// CHECK:          tile.exchange {{.*}} groups 1 shift {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [{{.*}}], receiver_rows = [{{.*}}]{{.*}}row_address = 0x4c000
// CHECK:          tile.exchange {{.*}} groups 1 shift {{.*}} schedule #tile.schedule<rows = [@x1_send, @x1_receive]{{.*}}row_address = 0x4c{{[0-9a-f]+}}
// CHECK:        exchange.row @x0_send
// CHECK:        exchange.row @x1_receive

// -----

// FP32 broadcast batch, the same equivalence.
func.func @batched(%a: tensor<2x1x48x64xf32>, %b: tensor<3x64x64xf32>) -> tensor<2x3x48x64xf32> {
  %c = graph.gemm %a, %b : (tensor<2x1x48x64xf32>, tensor<3x64x64xf32>) -> tensor<2x3x48x64xf32>
  func.return %c : tensor<2x3x48x64xf32>
}
// CHECK:        func.func @batched()
// CHECK:          tile.exchange 4096 words {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive]
// CHECK:        exchange.row @x0_receive
