// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4 inputs=row_major}' | filecheck %s

// graph-to-mid lowers a repeat's body with the same operators. The carried %x takes the
// format of its first consumer's plan even under the row_major input policy: gelu cuts
// columns (split1) because its add consumer is priced too, and after a column cut the bias
// is split over the tiles instead of replicated on each. The repeat's operands are bridged
// into the body arguments' formats outside the body.
func.func @carry(%x0: tensor<64x64xf16>, %b: tensor<64xf16>) -> tensor<64x64xf16> {
  %out = graph.repeat 4 carried(%x = %x0 : tensor<64x64xf16>) invariant(%bias = %b : tensor<64xf16>) {
    %y = graph.gelu %x : tensor<64x64xf16> -> tensor<64x64xf16>
    %z = graph.add %y, %bias : (tensor<64x64xf16>, tensor<64xf16>) -> tensor<64x64xf16>
    graph.yield %z : tensor<64x64xf16>
  } -> tensor<64x64xf16>
  func.return %out : tensor<64x64xf16>
}
// CHECK-LABEL: func.func @carry
// CHECK-NEXT: %x0_1 = builtin.unrealized_conversion_cast %x0 : {{.*}} to tensor<64x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 4 pad], replication = 1, group = 4, standard>> {ipu.for = "graph.repeat %out"}
// CHECK-NEXT: %b_1 = builtin.unrealized_conversion_cast %b : {{.*}} to tensor<64xf16, #mid.format<f16, row_major, [1 x 4 pad], replication = 1, group = 4, standard>> {ipu.for = "graph.repeat %out"}
// CHECK-NEXT: %out = "mid.repeat"(%x0_1, %b_1) <{count = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> ({
// CHECK-NEXT: ^bb0(%x: tensor<64x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 4 pad], replication = 1, group = 4, standard>>, %bias: tensor<64xf16, #mid.format<f16, row_major, [1 x 4 pad], replication = 1, group = 4, standard>>):
// CHECK-NEXT: %y = mid.gelu %x plan #mid.plan<"gelu_split1"
// CHECK-NEXT: %z = mid.add %y, %bias plan #mid.plan<"add_follow0"
// CHECK-NEXT: mid.yield %z : tensor<64x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 4 pad], replication = 1, group = 4, standard>>
// CHECK-NEXT: }) {ipu.estimate = {{[0-9]+}} : i64} : ({{.*}}) -> tensor<64x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 4 pad], replication = 1, group = 4, standard>>

// -----

// A yielded value in another format than the carried one (the GEMM's amp_output, where its
// lhs took amp_left) would be bridged before the yield, every iteration: graph-to-mid lowers
// the function again with the carried %x in the yielded format from the start and keeps that
// lowering, which is cheaper here. The conversion moves to the GEMM's operand and the hint
// (graph_to_mid.carried_formats) does not outlive the pass. The sequence keeps its
// (row-major) input format until normalize-repeats.
func.func @seq(%x0: tensor<64x64xf16>, %ws: tensor<3x64x64xf16>) -> tensor<64x64xf16> {
  %out = graph.repeat 3 carried(%x = %x0 : tensor<64x64xf16>) sequence(%w = %ws : tensor<3x64x64xf16>) {
    %y = graph.gemm %x, %w : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    graph.yield %y : tensor<64x64xf16>
  } -> tensor<64x64xf16>
  func.return %out : tensor<64x64xf16>
}
// CHECK-LABEL: func.func @seq
// CHECK-SAME: %ws: tensor<3x64x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>
// CHECK-NEXT: %x0_1 = builtin.unrealized_conversion_cast %x0 : {{.*}} to tensor<64x64xf16, #mid.format<f16, amp_output, {{.*}}> {ipu.for = "graph.repeat %out"}
// CHECK-NEXT: "mid.repeat"(%x0_1, %ws)
// CHECK-NEXT: ^bb0(%x: tensor<64x64xf16, #mid.format<f16, amp_output, {{.*}}>, %w:
// CHECK-NEXT: %x_1 = builtin.unrealized_conversion_cast %x : {{.*}} to tensor<64x64xf16, #mid.format<f16, amp_left, {{.*}}> {ipu.for = "graph.gemm %y"}
// CHECK-NEXT: %y = mid.gemm %x_1, %w
// CHECK-NEXT: mid.yield %y : tensor<64x64xf16, #mid.format<f16, amp_output, {{.*}}>
// CHECK-NOT: graph_to_mid.carried_formats
