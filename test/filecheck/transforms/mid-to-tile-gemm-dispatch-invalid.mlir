// RUN: ipu-opt %s --verify-diagnostics -p mid-to-tile
// mid-to-tile lowers a mid.gemm by its plan's dispatch: gemm_blocks (row plan) or gemm_grid.
// The plan of graph-to-mid{tiles=1 catalog=amp_gemm_f16_r16} with its dispatch replaced by a pointwise one:
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 1, indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f16_r16"], scheduling = in_order, profiling = off>} {
  func.func @f(%a: tensor<32x64xf16, #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>, %b: tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<32x64xf16, #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>> {
    %c = mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r16", #mid.dispatch<pointwise, init = @amp_gemm_f16_init>, accumulate = f32, amp = "A16/B16x16/C16", operands = [#mid.operand<lhs : left, #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>, align = 32, tail = 16>, #mid.operand<rhs : right, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>, align = 32, tail = 0>, #mid.operand<out : output, #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>, align = 32, tail = 0>], distinct = [(out, lhs)], alias = none> : (tensor<32x64xf16, #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>, tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<32x64xf16, #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>>
    func.return %c : tensor<32x64xf16, #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>>
  }
}

// expected-error @unknown {{mid-to-tile: mid.gemm %c: dispatch 'pointwise' is not gemm_blocks, gemm_grid, gemm_ksplit or gemm_grid3d}}
