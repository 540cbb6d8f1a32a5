// RUN: ipu-opt %s --split-input-file --verify-diagnostics

"test.op"() {a = #mid.axis<0 x 4 pad>} : () -> ()
// expected-error @unknown {{axis tiling: block size must be >= 1, got 0}}

// -----

"test.op"() {a = #mid.axis<16 x 0 pad>} : () -> ()
// expected-error @unknown {{axis tiling: partition count must be >= 1, got 0}}

// -----

"test.op"() {a = #mid.axis<99999999999999999999999 x 4 pad>} : () -> ()
// expected-error @unknown {{axis tiling: block size 99999999999999999999999 does not fit a tensor extent (i64)}}

// -----

"test.op"() {f = #mid.format<f8f143<32>, row_major, [1 x 1 pad], replication = 1, group = 1, standard>} : () -> ()
// expected-error @unknown {{format: f8f143 scale 32 is outside -31..31}}

// -----

"test.op"() {f = #mid.format<f8f143<-32>, row_major, [1 x 1 pad], replication = 1, group = 1, standard>} : () -> ()
// expected-error @unknown {{format: f8f143 scale -32 is outside -31..31}}

// -----

"test.op"() {f = #mid.format<f16, amp_left, [16 x 4 pad, 64 x 2 pad], replication = 2, group = 15, standard>} : () -> ()
// expected-error @unknown {{format: tile group 15 is smaller than replication 2 x 8 partitions = 16 tiles}}

// -----

"test.op"() {f = #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 0, group = 1, standard>} : () -> ()
// expected-error @unknown {{format: replication must be >= 1, got 0}}

// -----

"test.op"() {f = #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard, first_tile = -2>} : () -> ()
// expected-error @unknown {{format: first_tile must be >= 0, got -2}}

// -----

"test.op"() {d = #mid.dispatch<gemm_blocks, inner = 64, init = @amp_gemm_f16_init>} : () -> ()
// expected-error @unknown {{dispatch: gemm_blocks needs columns, accum}}

// -----

"test.op"() {d = #mid.dispatch<pointwise>} : () -> ()
// expected-error @unknown {{dispatch: pointwise needs an init kernel symbol}}

// -----

"test.op"() {d = #mid.dispatch<gemm_blocks, inner = 0, columns = 64, init = @i, accum = @a>} : () -> ()
// expected-error @unknown {{dispatch: inner block size must be >= 1, got 0}}

// -----

"test.op"() {o = #mid.operand<lhs : left, #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>, align = 24, tail = 0>} : () -> ()
// expected-error @unknown {{operand lhs: alignment 24 is not a power of two}}

// -----

"test.op"() {o = #mid.operand<lhs : left, #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>, align = 32, tail = -4>} : () -> ()
// expected-error @unknown {{operand lhs: access tail -4 is negative}}

// -----

"test.op"() {p = #mid.plan<"p", #mid.dispatch<pointwise, init = @k>, accumulate = f32, amp = none, operands = [#mid.operand<x : input, #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>], distinct = [(out, x)], alias = none>} : () -> ()
// expected-error @unknown {{plan p: distinct-memory pair (out, x) names unknown operand 'out'}}

// -----

"test.op"() {p = #mid.plan<"p", #mid.dispatch<pointwise, init = @k>, accumulate = f32, amp = none, operands = [#mid.operand<x : input, #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>], distinct = [(x, x)], alias = none>} : () -> ()
// expected-error @unknown {{plan p: distinct-memory pair (x, x) names one operand twice}}

// -----

"test.op"() {p = #mid.plan<"p", #mid.dispatch<pointwise, init = @k>, accumulate = f32, amp = none, operands = [#mid.operand<x : input, #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>, #mid.operand<x : output, #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>], distinct = [], alias = none>} : () -> ()
// expected-error @unknown {{plan p: operand names repeat: x, x}}

// -----

"test.op"() {p = #mid.plan<"p", #mid.dispatch<pointwise, init = @k>, accumulate = f32, amp = none, operands = [#mid.operand<x : input, #mid.format<f16, row_major, [7 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>], distinct = [], alias = y>} : () -> ()
// expected-error @unknown {{plan p: output may alias unknown operand 'y'}}

// -----

"test.op"() {c = #mid.config<target = "ipu21", tiles = 1473, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} : () -> ()
// expected-error @unknown {{config: tile count 1473 is outside 1..1472 for target ipu21}}

// -----

"test.op"() {c = #mid.config<target = "ipu21", tiles = 0, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} : () -> ()
// expected-error @unknown {{config: tile count 0 is outside 1..1472 for target ipu21}}

// -----

"test.op"() {c = #mid.config<target = "gc200", tiles = 4, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} : () -> ()
// expected-error @unknown {{config: unknown target 'gc200'; known targets: ipu21}}

// -----

"test.op"() {c = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = consumer, catalog = ["a", "a"], scheduling = in_order, profiling = off>} : () -> ()
// expected-error @unknown {{config: operator catalog repeats a name: ['a', 'a']}}

// -----

func.func @no_format(%x: tensor<4x4xf16>) -> tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> {
  // expected-error @+1 {{mid.rearrange: input of type tensor<4x4xf16> has no #mid.format encoding}}
  %y = mid.rearrange %x : tensor<4x4xf16> -> tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
  func.return %y : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
}

// -----

func.func @rank(%x: tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> {
  // expected-error @+1 {{mid.rearrange: input has rank 2 but its format tiles 1 axes}}
  %y = mid.rearrange %x : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad], replication = 1, group = 1, standard>> -> tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
  func.return %y : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
}

// -----

func.func @amp_rank(%x: tensor<64xf16, #mid.format<f16, row_major, [64 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<64xf16, #mid.format<f16, amp_left, [64 x 1 pad], replication = 1, group = 1, standard>> {
  %y = mid.rearrange %x : tensor<64xf16, #mid.format<f16, row_major, [64 x 1 pad], replication = 1, group = 1, standard>> -> tensor<64xf16, #mid.format<f16, amp_left, [64 x 1 pad], replication = 1, group = 1, standard>>
  func.return %y : tensor<64xf16, #mid.format<f16, amp_left, [64 x 1 pad], replication = 1, group = 1, standard>>
}
// expected-error @unknown {{format: amp_left order packs the last two axes, but the format tiles 1 axis/axes}}

// -----

func.func @same(%x: tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> {
  // expected-error @+1 {{mid.rearrange: input and result formats are identical}}
  %y = mid.rearrange %x : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> -> tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
  func.return %y : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
}

// -----

func.func @rearrange_precision(%x: tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4x4xf16, #mid.format<f32, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> {
  // expected-error @+1 {{mid.rearrange: storage precision changes from f16 to f32 (use mid.cast_precision)}}
  %y = mid.rearrange %x : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> -> tensor<4x4xf16, #mid.format<f32, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
  func.return %y : tensor<4x4xf16, #mid.format<f32, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
}

// -----

func.func @rearrange_elem(%x: tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4x4xf32, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 2, standard>> {
  // expected-error @+1 {{mid.rearrange: element type changes from f16 to f32 (use mid.cast_precision)}}
  %y = mid.rearrange %x : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> -> tensor<4x4xf32, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 2, standard>>
  func.return %y : tensor<4x4xf32, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 2, standard>>
}

// -----

func.func @rearrange_shape(%x: tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<2x8xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 2, standard>> {
  // expected-error @+1 {{mid.rearrange: shape changes from [4, 4] to [2, 8]}}
  %y = mid.rearrange %x : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> -> tensor<2x8xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 2, standard>>
  func.return %y : tensor<2x8xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 2, standard>>
}

// -----

func.func @cast_same(%x: tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4x4xf32, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> {
  // expected-error @+1 {{mid.cast_precision: storage precision f16 does not change}}
  %y = mid.cast_precision %x : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> -> tensor<4x4xf32, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
  func.return %y : tensor<4x4xf32, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
}

// -----

func.func @cast_layout(%x: tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4x4xf32, #mid.format<f32, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, interleaved>> {
  // expected-error @+1 {{mid.cast_precision: may change only the storage precision}}
  %y = mid.cast_precision %x : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> -> tensor<4x4xf32, #mid.format<f32, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, interleaved>>
  func.return %y : tensor<4x4xf32, #mid.format<f32, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, interleaved>>
}

// -----

func.func @cast_shape(%x: tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4x2xf32, #mid.format<f32, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> {
  // expected-error @+1 {{mid.cast_precision: shape changes from [4, 4] to [4, 2]}}
  %y = mid.cast_precision %x : tensor<4x4xf16, #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>> -> tensor<4x2xf32, #mid.format<f32, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
  func.return %y : tensor<4x2xf32, #mid.format<f32, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>
}

// -----

#L = #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>
#R = #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>
#O = #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>
#P = #mid.plan<"p", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>, accumulate = f32, amp = "A16/B16x16/C16", operands = [#mid.operand<lhs : left, #L, align = 32, tail = 16>, #mid.operand<rhs : right, #R, align = 32, tail = 0>, #mid.operand<out : output, #O, align = 32, tail = 0>], distinct = [(out, lhs)], alias = none>
func.func @gemm_k(%a: tensor<16x64xf16, #L>, %b: tensor<32x64xf16, #R>) -> tensor<16x64xf16, #O> {
  // expected-error @+1 {{mid.gemm: contraction extents differ: lhs [16, 64] axis -1 is 64, rhs [32, 64] axis -2 is 32}}
  %c = mid.gemm %a, %b plan #P : (tensor<16x64xf16, #L>, tensor<32x64xf16, #R>) -> tensor<16x64xf16, #O>
  func.return %c : tensor<16x64xf16, #O>
}

// -----

#L = #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>
#R = #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>
#O = #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>
#P = #mid.plan<"p", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>, accumulate = f32, amp = "A16/B16x16/C16", operands = [#mid.operand<lhs : left, #L, align = 32, tail = 16>, #mid.operand<rhs : right, #R, align = 32, tail = 0>, #mid.operand<out : output, #O, align = 32, tail = 0>], distinct = [(out, lhs)], alias = none>
func.func @gemm_out(%a: tensor<16x64xf16, #L>, %b: tensor<64x64xf16, #R>) -> tensor<32x64xf16, #O> {
  // expected-error @+1 {{mid.gemm: result shape [32, 64] does not match [16, 64]}}
  %c = mid.gemm %a, %b plan #P : (tensor<16x64xf16, #L>, tensor<64x64xf16, #R>) -> tensor<32x64xf16, #O>
  func.return %c : tensor<32x64xf16, #O>
}

// -----

#L = #mid.format<f16, amp_left, [1 x 1 pad, 16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>
#R = #mid.format<f16, amp_right, [1 x 1 pad, 64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>
#O = #mid.format<f16, amp_output, [1 x 1 pad, 16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>
#P = #mid.plan<"p", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>, accumulate = f32, amp = "A16/B16x16/C16", operands = [#mid.operand<lhs : left, #L, align = 32, tail = 16>, #mid.operand<rhs : right, #R, align = 32, tail = 0>, #mid.operand<out : output, #O, align = 32, tail = 0>], distinct = [(out, lhs)], alias = none>
func.func @gemm_batch(%a: tensor<2x16x64xf16, #L>, %b: tensor<3x64x64xf16, #R>) -> tensor<2x16x64xf16, #O> {
  // expected-error @+1 {{mid.gemm: batch axes of lhs and rhs [2] and [3] do not broadcast: extents 2 and 3 at axis -1 (counted from the last axis)}}
  %c = mid.gemm %a, %b plan #P : (tensor<2x16x64xf16, #L>, tensor<3x64x64xf16, #R>) -> tensor<2x16x64xf16, #O>
  func.return %c : tensor<2x16x64xf16, #O>
}

// -----

#L = #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>
#L2 = #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 2, standard>
#R = #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>
#O = #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>
#P = #mid.plan<"p", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>, accumulate = f32, amp = "A16/B16x16/C16", operands = [#mid.operand<lhs : left, #L, align = 32, tail = 16>, #mid.operand<rhs : right, #R, align = 32, tail = 0>, #mid.operand<out : output, #O, align = 32, tail = 0>], distinct = [(out, lhs)], alias = none>
func.func @gemm_plan_format(%a: tensor<16x64xf16, #L2>, %b: tensor<64x64xf16, #R>) -> tensor<16x64xf16, #O> {
  // expected-error @+1 {{mid.gemm: lhs format #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 2, standard> differs from the plan's #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>}}
  %c = mid.gemm %a, %b plan #P : (tensor<16x64xf16, #L2>, tensor<64x64xf16, #R>) -> tensor<16x64xf16, #O>
  func.return %c : tensor<16x64xf16, #O>
}

// -----

#L = #mid.format<f16, amp_left, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>
#R = #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 1, standard>
#O = #mid.format<f16, amp_output, [16 x 1 pad, 64 x 1 pad], replication = 1, group = 1, interleaved>
#P = #mid.plan<"p", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f16_init, accum = @amp_gemm_f16_accum>, accumulate = f32, amp = "A16/B16x16/C16", operands = [#mid.operand<lhs : left, #L, align = 32, tail = 16>, #mid.operand<rhs : right, #R, align = 32, tail = 0>], distinct = [], alias = none>
func.func @gemm_plan_missing(%a: tensor<16x64xf16, #L>, %b: tensor<64x64xf16, #R>) -> tensor<16x64xf16, #O> {
  // expected-error @+1 {{mid.gemm: plan p has no entry for operand 'out'}}
  %c = mid.gemm %a, %b plan #P : (tensor<16x64xf16, #L>, tensor<64x64xf16, #R>) -> tensor<16x64xf16, #O>
  func.return %c : tensor<16x64xf16, #O>
}

// -----

#R = #mid.format<f32, row_major, [1 x 1 pad], replication = 1, group = 1, standard>
#P = #mid.plan<"p", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f32_init, accum = @amp_gemm_f32_accum>, accumulate = f32, amp = "A16/B16x16/C16", operands = [], distinct = [], alias = none>
func.func @gemm_rank1(%a: tensor<64xf32, #R>, %b: tensor<64xf32, #R>) {
  // expected-error @+1 {{mid.gemm: lhs has shape [64] of rank 1; gemm operands need rank >= 2 (the last two axes are the matrix)}}
  %c = "mid.gemm"(%a, %b) <{plan = #P}> : (tensor<64xf32, #R>, tensor<64xf32, #R>) -> tensor<64xf32, #R>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#G = #mid.plan<"g", #mid.dispatch<pointwise, init = @gelu>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @gelu_shape(%a: tensor<4x8xf32, #F>) {
  // expected-error @+1 {{mid.gelu: result shape [8, 4] does not match [4, 8] (the input shape)}}
  %g = mid.gelu %a plan #G : tensor<4x8xf32, #F> -> tensor<8x4xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#A = #mid.plan<"a", #mid.dispatch<pointwise, init = @add>, accumulate = f32, amp = none, operands = [#mid.operand<lhs : input, #F, align = 8, tail = 0>, #mid.operand<rhs : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @add_shape(%a: tensor<4x8xf32, #F>, %b: tensor<1x8xf32, #F>) {
  // expected-error @+1 {{mid.add: result shape [1, 8] does not match [4, 8]}}
  %c = mid.add %a, %b plan #A : (tensor<4x8xf32, #F>, tensor<1x8xf32, #F>) -> tensor<1x8xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#T = #mid.plan<"t", #mid.dispatch<head_sharded, init = @attention>, accumulate = f32, amp = none, operands = [#mid.operand<query : input, #F, align = 8, tail = 0>, #mid.operand<key : input, #F, align = 8, tail = 0>, #mid.operand<value : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @attention_result(%q: tensor<2x4x8xf32, #F>) {
  // expected-error @+1 {{mid.attention: result shape [2, 8, 8] does not match [2, 4, 8] (the query shape)}}
  %o = mid.attention %q, %q, %q scale 0.5 plan #T : (tensor<2x4x8xf32, #F>, tensor<2x4x8xf32, #F>, tensor<2x4x8xf32, #F>) -> tensor<2x8x8xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#T = #mid.plan<"t", #mid.dispatch<head_sharded, init = @attention>, accumulate = f32, amp = none, operands = [#mid.operand<query : input, #F, align = 8, tail = 0>, #mid.operand<key : input, #F, align = 8, tail = 0>, #mid.operand<value : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @attention_heads(%q: tensor<2x4x8xf32, #F>, %k: tensor<3x4x8xf32, #F>) {
  // expected-error @+1 {{mid.attention: heads (axis -3) differ: query has 2, key/value have 3}}
  %o = mid.attention %q, %k, %k scale 0.5 plan #T : (tensor<2x4x8xf32, #F>, tensor<3x4x8xf32, #F>, tensor<3x4x8xf32, #F>) -> tensor<2x4x8xf32, #F>
  func.return
}

// -----

#F = #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>
#T = #mid.plan<"t", #mid.dispatch<head_sharded, init = @attention>, accumulate = f32, amp = none, operands = [#mid.operand<query : input, #F, align = 8, tail = 0>, #mid.operand<key : input, #F, align = 8, tail = 0>, #mid.operand<value : input, #F, align = 8, tail = 0>, #mid.operand<out : output, #F, align = 8, tail = 0>], distinct = [], alias = none>
func.func @attention_scale(%q: tensor<2x4x8xf32, #F>) {
  // expected-error @+1 {{mid.attention: scale must be a finite positive number, got -1.0}}
  %o = mid.attention %q, %q, %q scale -1.0 plan #T : (tensor<2x4x8xf32, #F>, tensor<2x4x8xf32, #F>, tensor<2x4x8xf32, #F>) -> tensor<2x4x8xf32, #F>
  func.return
}
