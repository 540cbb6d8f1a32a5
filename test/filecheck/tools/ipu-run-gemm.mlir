// ipu-run compiles each GEMM with the default pipeline, runs it on the device model and
// checks it against the NumPy reference.
// RUN: ipu-run %s --function f16_square --tiles 4 | filecheck %s --check-prefix=F16
// RUN: ipu-run %s --function f16_square --tiles 1 --indivisible reject | filecheck %s --check-prefix=ONE
// RUN: ipu-run %s --function padded --tiles 7 | filecheck %s --check-prefix=PAD
// RUN: ipu-run %s --function broadcast --tiles 16 | filecheck %s --check-prefix=BCAST
// RUN: ipu-run %s --function mixed_rank --tiles 64 | filecheck %s --check-prefix=MIXED
// RUN: ipu-run %s --function small_m --tiles 4 | filecheck %s --check-prefix=SMALL

// F16:      check: PASS
// F16-NEXT: max abs error: {{.*}} max rel error:
// F16-NEXT: modeled cycles: [[CYCLES:[1-9][0-9]*]]
// F16-NEXT: estimated cycles: [[CYCLES]] (the selector's, from the plans graph-to-mid chose)
// F16-NEXT: tiles used: {{[1-4]}} of 4
// ONE:      check: PASS
// ONE:      tiles used: 1 of 1
func.func @f16_square(%a: tensor<128x128xf16>, %b: tensor<128x192xf16>) -> tensor<128x192xf16> {
  %c = graph.gemm %a, %b : (tensor<128x128xf16>, tensor<128x192xf16>) -> tensor<128x192xf16>
  func.return %c : tensor<128x192xf16>
}

// No extent is a multiple of 64: the default tiling zero-pads.
// PAD:      check: PASS
// PAD:      tiles used: {{[1-7]}} of 7
func.func @padded(%a: tensor<100x70xf32>, %b: tensor<70x66xf32>) -> tensor<100x66xf32> {
  %c = graph.gemm %a, %b : (tensor<100x70xf32>, tensor<70x66xf32>) -> tensor<100x66xf32>
  func.return %c : tensor<100x66xf32>
}

// NumPy batch broadcast: [2,1,M,K] x [3,K,N] -> [2,3,M,N].
// BCAST:    check: PASS
// BCAST:    of 16
func.func @broadcast(%a: tensor<2x1x48x64xf16>, %b: tensor<3x64x80xf16>) -> tensor<2x3x48x80xf16> {
  %c = graph.gemm %a, %b : (tensor<2x1x48x64xf16>, tensor<3x64x80xf16>) -> tensor<2x3x48x80xf16>
  func.return %c : tensor<2x3x48x80xf16>
}

// A rank-2 left operand with a rank-3 right operand.
// MIXED:    check: PASS
// MIXED:    of 64
func.func @mixed_rank(%a: tensor<96x128xf32>, %b: tensor<2x128x64xf32>) -> tensor<2x96x64xf32> {
  %c = graph.gemm %a, %b : (tensor<96x128xf32>, tensor<2x128x64xf32>) -> tensor<2x96x64xf32>
  func.return %c : tensor<2x96x64xf32>
}

// M = 16: one output-row tile receives every rhs block from its home tile.
// SMALL:    check: PASS
// SMALL:    tiles used: 4 of 4
func.func @small_m(%a: tensor<16x128xf16>, %b: tensor<128x256xf16>) -> tensor<16x256xf16> {
  %c = graph.gemm %a, %b : (tensor<16x128xf16>, tensor<128x256xf16>) -> tensor<16x256xf16>
  func.return %c : tensor<16x256xf16>
}
