// RUN: ipu-opt %s --verify-diagnostics -p mid-to-tile

// Hand-written mid IR whose repeat body argument for a sequence has no #mid.format: a
// diagnostic naming the argument (it was an AttributeError).
// expected-error @unknown {{mid-to-tile: mid.repeat sequence body argument #0 %w has type tensor<64x64xf16>, not a tensor with a #mid.format encoding}}
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f16_r16", "amp_gemm_f16_r32", "amp_gemm_f16_r64", "amp_gemm_f32_r16", "amp_gemm_f32_r32", "amp_gemm_f32_r64", "amp_gemm_f8_r16", "amp_gemm_f8_r32", "amp_gemm_f8_r64"], scheduling = in_order, profiling = off>} {
  func.func @seq(%x0: tensor<64x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>, %ws: tensor<3x64x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<64x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>> {
    %out = "mid.repeat"(%x0, %ws) <{count = 3 : i64, operandSegmentSizes = array<i32: 1, 0, 1>}> ({
    ^bb0(%x: tensor<64x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>, %w: tensor<64x64xf16>):
      %y = mid.add %x, %x plan #mid.plan<"add_split0", #mid.dispatch<pointwise, init = @add>, accumulate = f32, amp = none, operands = [#mid.operand<lhs : input, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<rhs : input, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>], distinct = [], alias = none> : (tensor<64x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>, tensor<64x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>) -> tensor<64x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>
      mid.yield %y : tensor<64x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>
    }) : (tensor<64x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>, tensor<3x64x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<64x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>
    func.return %out : tensor<64x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>
  }
}

