// ipu-run refuses what it cannot compile or read with one message, never a traceback
// (exit status 2; the exact codes are pinned in test/pytest/test_e2e_gemm.py).

// An extent that is not a multiple of its block, with padding rejected: names op, axis, extent,
// at the op's position in the file, with the source line.
// RUN: not ipu-run %s --function indivisible --tiles 4 --indivisible reject 2>&1 | filecheck %s --check-prefix=REJECT
// REJECT:      ipu-run-diagnostics.mlir:[[# @LINE + 10]]:3: error: graph.gemm %c: no valid operator plan:
// REJECT-SAME: lhs axis -2 extent 100 is not a multiple of block {{16|32|64}} and the tiling rejects padding
// REJECT-NEXT: %c = graph.gemm %a, %b
// REJECT-NEXT: ^
// REJECT-NOT: Traceback
// REJECT-NOT: check:
// The same function with the default padding passes.
// RUN: ipu-run %s --function indivisible --tiles 4 | filecheck %s --check-prefix=PADDED
// PADDED: check: PASS
func.func @indivisible(%a: tensor<100x64xf16>, %b: tensor<64x64xf16>) -> tensor<100x64xf16> {
  %c = graph.gemm %a, %b : (tensor<100x64xf16>, tensor<64x64xf16>) -> tensor<100x64xf16>
  func.return %c : tensor<100x64xf16>
}

// A transposed operand is not refused: the plan stores it transposed (amp_right_t) and the
// AMP reads it as the untransposed rhs.
// RUN: ipu-run %s --function transposed --tiles 4 2>&1 | filecheck %s --check-prefix=TRANSPOSED
// TRANSPOSED: check: PASS
func.func @transposed(%a: tensor<64x128xf32>, %b: tensor<64x128xf32>) -> tensor<64x64xf32> {
  %t = graph.gemm %a, %b transpose_rhs : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x64xf32>
  func.return %t : tensor<64x64xf32>
}

// Bad --input values.
// RUN: not ipu-run %s --function indivisible --input a 2>&1 | filecheck %s --check-prefix=NOEQ
// NOEQ: ipu-run: error: --input expects NAME=PATH.npy, got 'a'
// RUN: not ipu-run %s --function indivisible --input z=%t.npy 2>&1 | filecheck %s --check-prefix=NONAME
// NONAME: ipu-run: error: --input z: the function has no argument 'z' (arguments: a, b)
// RUN: not ipu-run %s --function indivisible --input a=%t.missing.npy 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING:     ipu-run: error:
// MISSING-SAME: missing.npy
// MISSING-NOT: Traceback
// RUN: python -c "import numpy; numpy.save('%t.npy', numpy.zeros((64, 100), numpy.float16))"
// RUN: not ipu-run %s --function indivisible --input a=%t.npy 2>&1 | filecheck %s --check-prefix=SHAPE
// SHAPE: ipu-run: error: --input a: shape (64, 100) does not match the argument's (100, 64)
