// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

// Every mid attribute, standalone and nested, round-trips through the custom and generic forms.
"test.op"() {
  axis = #mid.axis<16 x 4 reject>,
  f16 = #mid.format<f16, amp_left, [1 x 1 pad, 16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>,
  f32 = #mid.format<f32, amp_right, [64 x 2 reject, 64 x 2 pad], replication = 2, group = 16, standard>,
  f8 = #mid.format<f8f143<-3>, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>,
  rm = #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>,
  gemm_dispatch = #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>,
  pointwise = #mid.dispatch<pointwise, init = @gelu_f16>,
  operand = #mid.operand<lhs : left, #mid.format<f16, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 16>,
  plan = #mid.plan<"pw", #mid.dispatch<pointwise, init = @gelu_f16>, accumulate = f32, amp = none, operands = [#mid.operand<x : input, #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>], distinct = [], alias = x>,
  config = #mid.config<target = "ipu21", tiles = 1472, indivisible = reject, inputs = row_major, catalog = [], scheduling = in_order, profiling = cycles>
} : () -> ()

// CHECK:      "test.op"() {axis = #mid.axis<16 x 4 reject>,
// CHECK-SAME: f16 = #mid.format<f16, amp_left, [1 x 1 pad, 16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>,
// CHECK-SAME: f32 = #mid.format<f32, amp_right, [64 x 2 reject, 64 x 2 pad], replication = 2, group = 16, standard>,
// CHECK-SAME: f8 = #mid.format<f8f143<-3>, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>,
// CHECK-SAME: rm = #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>,
// CHECK-SAME: gemm_dispatch = #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>,
// CHECK-SAME: pointwise = #mid.dispatch<pointwise, init = @gelu_f16>,
// CHECK-SAME: operand = #mid.operand<lhs : left, #mid.format<f16, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 16>,
// CHECK-SAME: plan = #mid.plan<"pw", #mid.dispatch<pointwise, init = @gelu_f16>, accumulate = f32, amp = none, operands = [#mid.operand<x : input, #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>], distinct = [], alias = x>,
// CHECK-SAME: config = #mid.config<target = "ipu21", tiles = 1472, indivisible = reject, inputs = row_major, catalog = [], scheduling = in_order, profiling = cycles>}
// CHECK-GENERIC: "test.op"() {axis = #mid.axis<16 x 4 reject>, f16 = #mid.format<f16, amp_left, [1 x 1 pad, 16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard>,

// -----

// The mid ops, on tensors whose encoding is their format; the module carries the config.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f16_r16"], scheduling = in_order, profiling = off>} {
  func.func @ops(%a: tensor<2x32x64xf16, #mid.format<f16, amp_left, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, %b: tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>) -> tensor<2x32x64xf32, #mid.format<f8f143<-3>, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>> {
    %c = mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r16", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>, accumulate = f32, amp = "A16/B16x16/C16", operands = [#mid.operand<lhs : left, #mid.format<f16, amp_left, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 16>, #mid.operand<rhs : right, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 0>, #mid.operand<out : output, #mid.format<f16, amp_output, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>, align = 32, tail = 0>], distinct = [(out, lhs)], alias = none> : (tensor<2x32x64xf16, #mid.format<f16, amp_left, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>) -> tensor<2x32x64xf16, #mid.format<f16, amp_output, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
    %d = mid.rearrange %c : tensor<2x32x64xf16, #mid.format<f16, amp_output, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>> -> tensor<2x32x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
    %e = mid.cast_precision %d : tensor<2x32x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>> -> tensor<2x32x64xf32, #mid.format<f8f143<-3>, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
    func.return %e : tensor<2x32x64xf32, #mid.format<f8f143<-3>, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
  }
}

// CHECK:      builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f16_r16"], scheduling = in_order, profiling = off>} {
// CHECK-NEXT:   func.func @ops(%a: tensor<2x32x64xf16, #mid.format<f16, amp_left, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, %b: tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>) -> tensor<2x32x64xf32, #mid.format<f8f143<-3>, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>> {
// CHECK-NEXT:     %c = mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r16", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>, accumulate = f32, amp = "A16/B16x16/C16", operands = [#mid.operand<lhs : left, #mid.format<f16, amp_left, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 16>, #mid.operand<rhs : right, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 0>, #mid.operand<out : output, #mid.format<f16, amp_output, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>, align = 32, tail = 0>], distinct = [(out, lhs)], alias = none> : (tensor<2x32x64xf16, #mid.format<f16, amp_left, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>) -> tensor<2x32x64xf16, #mid.format<f16, amp_output, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// CHECK-NEXT:     %d = mid.rearrange %c : tensor<2x32x64xf16, #mid.format<f16, amp_output, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>> -> tensor<2x32x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CHECK-NEXT:     %e = mid.cast_precision %d : tensor<2x32x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>> -> tensor<2x32x64xf32, #mid.format<f8f143<-3>, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CHECK-NEXT:     func.return %e : tensor<2x32x64xf32, #mid.format<f8f143<-3>, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>

// CHECK-GENERIC:      "builtin.module"() ({
// CHECK-GENERIC:      %c = "mid.gemm"(%a, %b) <{plan = #mid.plan<"amp_gemm_f16_r16", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>, accumulate = f32, amp = "A16/B16x16/C16", operands = [#mid.operand<lhs : left, {{.*}}>], distinct = [(out, lhs)], alias = none>}> : (tensor<2x32x64xf16, #mid.format<f16, amp_left, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, {{.*}}) -> tensor<2x32x64xf16, #mid.format<f16, amp_output, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// CHECK-GENERIC-NEXT: %d = "mid.rearrange"(%c) : (tensor<2x32x64xf16, #mid.format<f16, amp_output, {{.*}}>>) -> tensor<2x32x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CHECK-GENERIC-NEXT: %e = "mid.cast_precision"(%d) : (tensor<2x32x64xf16, #mid.format<f16, row_major, {{.*}}>>) -> tensor<2x32x64xf32, #mid.format<f8f143<-3>, row_major, [1 x 1 pad, 16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CHECK-GENERIC:      }) {ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f16_r16"], scheduling = in_order, profiling = off>} : () -> ()
