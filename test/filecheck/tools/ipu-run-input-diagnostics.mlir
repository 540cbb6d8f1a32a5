// Functions ipu-run cannot run, with or without --reference: one located diagnostic naming the
// op or argument (MLIR style: file:line:col: error: ...), exit status 2, never a traceback.
// Each function verifies as IR; ipu-run's own checks reject it.

// RUN: not ipu-run %s --reference --function arith 2>&1 | filecheck %s --check-prefix=ARITH
// RUN: not ipu-run %s --tiles 2 --function arith 2>&1 | filecheck %s --check-prefix=ARITH
// ARITH:      ipu-run-input-diagnostics.mlir:[[# @LINE + 4]]:3: error: arith.addf is not a graph op; the reference interpreter runs graph.add, graph.attention, graph.concat, graph.gather, graph.gelu, graph.gemm, graph.layer_norm, graph.repeat, graph.reshape, graph.slice, graph.transpose
// ARITH-NEXT: {{^}}  %b = arith.addf %a, %a : tensor<4xf32>
// ARITH-NOT:  Traceback
func.func @arith(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = arith.addf %a, %a : tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// RUN: not ipu-run %s --reference --function test_op 2>&1 | filecheck %s --check-prefix=TESTOP
// TESTOP: ipu-run-input-diagnostics.mlir:[[# @LINE + 3]]:3: error: test.op is not a graph op
// TESTOP-NOT: Traceback
func.func @test_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = "test.op"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// RUN: not ipu-run %s --reference --function scalar_arg 2>&1 | filecheck %s --check-prefix=SCALAR
// RUN: not ipu-run %s --tiles 2 --function scalar_arg 2>&1 | filecheck %s --check-prefix=SCALAR
// SCALAR:      ipu-run-input-diagnostics.mlir:[[# @LINE + 3]]:1: error: func.func @scalar_arg: argument %s must be a ranked tensor, got f32
// SCALAR-NEXT: {{^}}func.func @scalar_arg(
// SCALAR-NOT:  Traceback
func.func @scalar_arg(%s: f32, %a: tensor<4xf32>) -> tensor<4xf32> {
  %b = graph.gelu %a : tensor<4xf32> -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// RUN: not ipu-run %s --reference --function scalar_result 2>&1 | filecheck %s --check-prefix=RESULT
// RESULT: ipu-run-input-diagnostics.mlir:[[# @LINE + 1]]:1: error: func.func @scalar_result: result #0 must be a ranked tensor, got f32
func.func @scalar_result(%a: tensor<4xf32>) -> f32 {
  %s = "test.op"() : () -> f32
  func.return %s : f32
}

// RUN: not ipu-run %s --reference --function int_arg 2>&1 | filecheck %s --check-prefix=INT
// INT: ipu-run-input-diagnostics.mlir:[[# @LINE + 1]]:1: error: func.func @int_arg: argument %i has element type i16; graph tensors are f32, f16 or f8E4M3FNUZ
func.func @int_arg(%i: tensor<4xi16>, %a: tensor<4xf32>) -> tensor<4xf32> {
  %b = graph.gelu %a : tensor<4xf32> -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// An FP8 scale on an f32 argument would be applied by nobody consistently: rejected, not run.
// RUN: not ipu-run %s --reference --function scaled_f32 2>&1 | filecheck %s --check-prefix=SCALEDF32
// SCALEDF32: ipu-run-input-diagnostics.mlir:[[# @LINE + 1]]:1: error: func.func @scaled_f32: argument %a has an FP8 scale but element type f32; only f8E4M3FNUZ tensors are scaled
func.func @scaled_f32(%a: tensor<3xf32, #graph.fp8_scale<2>>) -> tensor<3xf32, #graph.fp8_scale<2>> {
  func.return %a : tensor<3xf32, #graph.fp8_scale<2>>
}

// RUN: not ipu-run %s --reference --function decl 2>&1 | filecheck %s --check-prefix=DECL
// DECL: ipu-run-input-diagnostics.mlir:[[# @LINE + 1]]:1: error: func.func @decl is a declaration without a body: nothing to run
func.func private @decl(%x0: tensor<4xf32>) -> tensor<4xf32>
