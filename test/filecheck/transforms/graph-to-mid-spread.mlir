// RUN: ipu-opt %s -p 'graph-to-mid{tiles=64}' | filecheck %s
// RUN: ipu-opt %s -p 'ipu-pipeline{tiles=64}' | filecheck %s --check-prefix=TILE

// Pointwise results start on the least-loaded tiles when that costs no more: %c takes tiles
// 0..15; %d, whose inputs the host writes where its plan wants them, takes the next 16 tiles
// (its bias, replicated, comes with it); %g follows %d at no cost.
func.func @two(%a: tensor<16x8xf32>, %b: tensor<16x8xf32>, %e: tensor<16x8xf32>, %f: tensor<8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %c = graph.add %a, %b : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %d = graph.add %e, %f : (tensor<16x8xf32>, tensor<8xf32>) -> tensor<16x8xf32>
  %g = graph.gelu %d : tensor<16x8xf32> -> tensor<16x8xf32>
  func.return %c, %g : tensor<16x8xf32>, tensor<16x8xf32>
}
// CHECK:      %c = mid.add %a, %b plan #mid.plan<"add_split0",
// CHECK-SAME: #mid.operand<out : output, #mid.format<f32, row_major, [1 x 16 pad, 1 x 1 pad], replication = 1, group = 16, standard>
// CHECK:      %d = mid.add %e, %f plan #mid.plan<"add_split0_at16",
// CHECK-SAME: #mid.operand<rhs : input, #mid.format<f32, row_major, [1 x 1 pad], replication = 16, group = 16, standard, first_tile = 16>
// CHECK-SAME: #mid.operand<out : output, #mid.format<f32, row_major, [1 x 16 pad, 1 x 1 pad], replication = 1, group = 16, standard, first_tile = 16>
// CHECK:      %g = mid.gelu %d plan #mid.plan<"gelu_follow0",
// CHECK-SAME: first_tile = 16>

// TILE: tile.kernel @add(%c{{.*}} on #tile.tiles<0 to 16>
// TILE: tile.kernel @add(%d{{.*}} on #tile.tiles<16 to 32>
// TILE: tile.kernel @gelu({{.*}} on #tile.tiles<16 to 32>
