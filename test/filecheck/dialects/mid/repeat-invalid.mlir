// RUN: ipu-opt %s --split-input-file --verify-diagnostics

// mid.repeat's verifier: one buffer carries a value through the iterations, so the carried
// operand, body argument, yield and result have one type; a sequence is [count] + element.

func.func @f(%x: tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>, %y: tensor<4xf32, #mid.format<f32, row_major, [1 x 4 pad], replication = 1, group = 4, standard>>) {
  // expected-error @+1 {{mid.repeat: carried value #0 has type tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>, its body argument tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>, its yield tensor<4xf32, #mid.format<f32, row_major, [1 x 4 pad], replication = 1, group = 4, standard>> and its result tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>; the four must be the same (one buffer carries the value through the iterations)}}
  %r = "mid.repeat"(%x) <{count = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> ({
  ^bb1(%a: tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>):
    "mid.yield"(%y) : (tensor<4xf32, #mid.format<f32, row_major, [1 x 4 pad], replication = 1, group = 4, standard>>) -> ()
  }) : (tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>, %s: tensor<3x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>) {
  // expected-error @+1 {{mid.repeat: sequence operand #0 has shape [3, 4]; it must be [2] followed by its body element's shape [4]}}
  %r = "mid.repeat"(%x, %s) <{count = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1>}> ({
  ^bb1(%a: tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>, %e: tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>):
    "mid.yield"(%a) : (tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>) -> ()
  }) : (tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>, tensor<3x4xf32, #mid.format<f32, row_major, [1 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>) {
  // expected-error @+1 {{mid.repeat: body has 0 block arguments for 1 operands}}
  %r = "mid.repeat"(%x) <{count = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> ({
  ^bb1:
    "mid.yield"(%x) : (tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>) -> ()
  }) : (tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>
  func.return
}

// -----

func.func @f(%x: tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>) {
  // expected-error @+1 {{mid.repeat: body must end with mid.yield of its 1 carried values}}
  %r = "mid.repeat"(%x) <{count = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> ({
  ^bb1(%a: tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>):
    "mid.yield"() : () -> ()
  }) : (tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<4xf32, #mid.format<f32, row_major, [4 x 1 pad], replication = 1, group = 1, standard>>
  func.return
}
