// A mid plan whose format uses more tiles than the module's configuration (hand-written mid IR).
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p mid-to-tile
// expected-error @+3 {{mid-to-tile: %x is stored on 4 tiles, but the module is configured for 2}}

builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @too_many_tiles(%x: tensor<4x8xf32, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>) -> tensor<4x8xf32, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>> {
    %g = mid.gelu %x plan #mid.plan<"gelu_split0", #mid.dispatch<pointwise, init = @gelu>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>], distinct = [], alias = none> : tensor<4x8xf32, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>> -> tensor<4x8xf32, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>
    func.return %g : tensor<4x8xf32, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>
  }
}

// -----

// An op no operator lowers is named, with its result, at its own line.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 1, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @f() {
    // expected-error @+1 {{mid-to-tile: cannot lower arith.constant (result %d): no operator of passes/operators lowers it}}
    %d = arith.constant 1 : i32
    func.return
  }
}

// -----

// A hand-written mid.gelu whose plan calls the other form's kernel: the program would compute
// the exact GeLU where the op says tanh (and the reverse).
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 1, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @wrong_kernel(%x: tensor<4x8xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4x8xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>> {
    // expected-error @+1 {{mid-to-tile: mid.gelu %g is the approximate tanh GeLU, but its plan calls @gelu; that form's kernel is @gelu_tanh}}
    %g = mid.gelu %x approximate tanh plan #mid.plan<"gelu_split0", #mid.dispatch<pointwise, init = @gelu>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>], distinct = [], alias = none> : tensor<4x8xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>> -> tensor<4x8xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>
    func.return %g : tensor<4x8xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>
  }
}

// -----

builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 1, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @wrong_kernel_exact(%x: tensor<4x8xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4x8xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>> {
    // expected-error @+1 {{mid-to-tile: mid.gelu %g is the exact (erf) GeLU, but its plan calls @gelu_tanh; that form's kernel is @gelu}}
    %g = mid.gelu %x plan #mid.plan<"gelu_split0", #mid.dispatch<pointwise, init = @gelu_tanh>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>, align = 8, tail = 0>], distinct = [], alias = none> : tensor<4x8xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>> -> tensor<4x8xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>
    func.return %g : tensor<4x8xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>
  }
}
