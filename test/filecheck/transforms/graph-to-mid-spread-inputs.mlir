// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f32_r16 spread-inputs=true}' | filecheck %s
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f32_r16 spread-inputs=true},insert-conversions' | filecheck %s --check-prefix=CONV
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f32_r16}' | filecheck %s --check-prefix=PLAIN

// Both GEMMs compute on tile 0. With spread-inputs the second weight is stored on the
// least-loaded tile (tile 1) and brought to its GEMM's tile by a rearrange; without it both
// weights sit on tile 0.
func.func @heads(%x: tensor<16x64xf32>, %w0: tensor<64x64xf32>, %w1: tensor<64x64xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>) {
  %g0 = graph.gemm %x, %w0 : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %g1 = graph.gemm %x, %w1 : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  func.return %g0, %g1 : tensor<16x64xf32>, tensor<16x64xf32>
}
// CHECK-LABEL: func.func @heads
// CHECK-SAME:  %w0: tensor<64x64xf32, #mid.format<f32, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 16, standard>>
// CHECK-SAME:  %w1: tensor<64x64xf32, #mid.format<f32, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 16, standard, first_tile = 1>>
// CHECK:       %g0 = mid.gemm %x, %w0 plan
// CHECK-NEXT:  %w1_1 = builtin.unrealized_conversion_cast %w1 : tensor<64x64xf32, #mid.format<{{.*}}first_tile = 1>> to tensor<64x64xf32, #mid.format<f32, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 16, standard>> {ipu.for = "graph.gemm %g1"}
// CHECK-NEXT:  %g1 = mid.gemm %x, %w1_1 plan

// CONV:        mid.rearrange %w1
// CONV-NOT:    mid.rearrange

// PLAIN-LABEL: func.func @heads
// PLAIN-NOT:   first_tile
// PLAIN:       %g1 = mid.gemm %x, %w1 plan
