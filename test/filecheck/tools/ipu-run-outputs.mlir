// --input feeds the given array, --save-outputs writes what the device model computed.
// RUN: rm -rf %t && mkdir -p %t
// RUN: python -c "import numpy; numpy.save('%t/a.npy', numpy.eye(64, dtype=numpy.float32))"
// RUN: ipu-run %s --tiles 4 --input a=%t/a.npy --save-outputs %t/out | filecheck %s
// RUN: ipu-run %s --reference --input a=%t/a.npy --save-outputs %t/ref
// RUN: ipu-run %s --tiles 4 --save-outputs %t/random | filecheck %s
// CHECK: check: PASS
// With the identity on the left the model gives back the right operand exactly, which a run
// with a random left operand does not.
// RUN: python -c "import numpy as n; o, r, x = (n.load('%t/' + d + '/result0.npy') for d in ('out', 'ref', 'random')); print(o.dtype, o.shape, n.array_equal(o, r), n.array_equal(o, x))" | filecheck %s --check-prefix=SAVED
// SAVED: float32 (64, 96) True False

// Non-finite elements are compared for equality with the reference (issue 24's contract):
// a NaN input gives NaN where the reference has NaN, and that agrees (exit status 0). A NaN
// where the reference is finite still fails (test_e2e_gemm.py, test_compare_needs_the_reference_s_non_finite_elements).
// RUN: python -c "import numpy; numpy.save('%t/nan.npy', numpy.full((64, 64), numpy.nan, numpy.float32))"
// RUN: ipu-run %s --tiles 4 --input a=%t/nan.npy | filecheck %s --check-prefix=NAN
// NAN: check: PASS
func.func @identity_left(%a: tensor<64x64xf32>, %b: tensor<64x96xf32>) -> tensor<64x96xf32> {
  %c = graph.gemm %a, %b : (tensor<64x64xf32>, tensor<64x96xf32>) -> tensor<64x96xf32>
  func.return %c : tensor<64x96xf32>
}
