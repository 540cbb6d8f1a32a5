// ipu-opt --verify-diagnostics matches diagnostics against annotations, as mlir-opt does: this
// file passes as written; a wrong text, a missing annotation, an annotation on the wrong line
// and an annotation nothing produces each fail (exit 1) with one located message.
// RUN: ipu-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=OUTPUT
// RUN: sed -e 's/{{lhs has shape/{{banana/' %s | not ipu-opt - --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=WRONG
// RUN: sed -e 's|// expected-error @+1 {{lhs|// {{lhs|' %s | not ipu-opt - --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: sed -e 's/@+1 {{lhs/@+2 {{lhs/' %s | not ipu-opt - --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=LINE
// RUN: sed -e 's|// no error here|// expected-error {{nothing}}|' %s | not ipu-opt - --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=EXTRA
// RUN: sed -e 's|// no error here|// expected-error @+1 nothing|' %s | not ipu-opt - --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=MALFORMED
// RUN: sed -e 's/{{\[0-9\]+}}/{{[a-z]+}}/' %s | not ipu-opt - --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=REGEX
// The file as xdsl-opt's --verify-diagnostics took it, with no annotations: now a failure too.
// RUN: sed -e 's|// expected-[a-z-]* [^{]*{{|// {{|' %s | not ipu-opt - --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=NONE

func.func @gemm_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{lhs has shape [8] of rank 1}}
  %c = graph.gemm %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  func.return
}
// WRONG: stdin:[[# @LINE - 3]]:3: error: unexpected error: graph.gemm: lhs has shape [8] of rank 1; gemm operands need rank >= 2
// WRONG: stdin:[[# @LINE - 5]]: error: expected error "banana [8] of rank 1" on line [[# @LINE - 4]] was not produced
// MISSING: stdin:[[# @LINE - 5]]:3: error: unexpected error: graph.gemm: lhs has shape [8] of rank 1
// LINE: stdin:[[# @LINE - 7]]: error: expected error "lhs has shape [8] of rank 1" on line [[# @LINE - 5]] was not produced

// -----

// A diagnostic below its annotation (@below), a regex ({{...}} in an -re annotation).
func.func @gemm_contraction(%a: tensor<4x8xf32>, %b: tensor<6x4xf32>) {
  // expected-error-re @below {{contraction extents differ: lhs [4, 8] axis -1 is {{[0-9]+}}, rhs}}
  %c = graph.gemm %a, %b : (tensor<4x8xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
  func.return
}
// REGEX: stdin:[[# @LINE - 4]]: error: expected error "contraction extents differ: lhs [4, 8] axis -1 is {{[{][{]}}[a-z]+{{[}][}]}}, rhs" on line [[# @LINE - 3]] was not produced

// -----

// A parse error is a diagnostic like any other (xDSL's parser reports an unregistered op at
// the token after its name).
func.func @unknown_op() {
  %0 = graph.bogus
// expected-error @+1 {{Operation graph.bogus is not registered}}
}

// -----

// A chunk without diagnostics prints its output.
func.func @fine(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // no error here
  func.return %a : tensor<8x4xf32>
}
// OUTPUT: func.func @fine
// EXTRA: stdin:[[# @LINE - 4]]: error: expected error "nothing" on line [[# @LINE - 4]] was not produced
// MALFORMED: stdin:[[# @LINE - 5]]: error: malformed annotation
// NONE-DAG: unexpected error: graph.gemm: lhs has shape [8] of rank 1
// NONE-DAG: unexpected error: graph.gemm: contraction extents differ
// NONE-DAG: unexpected error: Operation graph.bogus is not registered
