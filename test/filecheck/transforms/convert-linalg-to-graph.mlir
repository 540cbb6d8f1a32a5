// IR in the shape torch-mlir-style flows emit (linalg on tensors) enters the pipeline.
// RUN: ipu-opt %s --split-input-file -p convert-linalg-to-graph | filecheck %s
// RUN: ipu-opt %s --split-input-file -p 'convert-linalg-to-graph,ipu-pipeline{tiles=4}' | filecheck %s --check-prefix=PIPELINE

// The accumulator of a matmul into tensor.empty adds nothing.
func.func @matmul(%a: tensor<64x128xf32>, %b: tensor<128x32xf32>) -> tensor<64x32xf32> {
  %e = tensor.empty() : tensor<64x32xf32>
  %c = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x32xf32>) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  func.return %c : tensor<64x32xf32>
}
// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    %c = graph.gemm %a, %b : (tensor<64x128xf32>, tensor<128x32xf32>) -> tensor<64x32xf32>
// CHECK-NEXT:    func.return %c : tensor<64x32xf32>
// PIPELINE-LABEL: func.func @matmul
// PIPELINE:        exchange.row

// -----

// Nor does one filled with zero (torch-mlir's habit); the fill and its constant go too.
func.func @filled(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<64x64xf16>
  %z = linalg.fill ins(%zero : f16) outs(%e : tensor<64x64xf16>) -> tensor<64x64xf16>
  %c = linalg.matmul ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) outs(%z : tensor<64x64xf16>) -> tensor<64x64xf16>
  func.return %c : tensor<64x64xf16>
}
// CHECK-LABEL: func.func @filled
// CHECK-NEXT:    %c = graph.gemm %a, %b
// CHECK-NEXT:    func.return %c
// PIPELINE-LABEL: func.func @filled
// PIPELINE:        exchange.row

// -----

// Any other accumulator is added; batch_matmul is a batched gemm; linalg.add and an
// elementwise linalg.generic addition are graph.add.
func.func @mixed(%a: tensor<2x64x128xf32>, %b: tensor<2x128x32xf32>, %acc: tensor<64x32xf32>, %w: tensor<32x32xf32>) -> tensor<2x64x32xf32> {
  %e = tensor.empty() : tensor<2x64x32xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x64x128xf32>, tensor<2x128x32xf32>) outs(%e : tensor<2x64x32xf32>) -> tensor<2x64x32xf32>
  %s = linalg.add ins(%c, %c : tensor<2x64x32xf32>, tensor<2x64x32xf32>) outs(%e : tensor<2x64x32xf32>) -> tensor<2x64x32xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %c : tensor<2x64x32xf32>, tensor<2x64x32xf32>) outs(%e : tensor<2x64x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %y, %x : f32
    linalg.yield %r : f32
  } -> tensor<2x64x32xf32>
  %m = linalg.matmul ins(%acc, %w : tensor<64x32xf32>, tensor<32x32xf32>) outs(%acc : tensor<64x32xf32>) -> tensor<64x32xf32>
  func.return %g : tensor<2x64x32xf32>
}
// CHECK-LABEL: func.func @mixed
// CHECK-NEXT:    %c = graph.gemm %a, %b : (tensor<2x64x128xf32>, tensor<2x128x32xf32>) -> tensor<2x64x32xf32>
// CHECK-NEXT:    %s = graph.add %c, %c
// CHECK-NEXT:    %g = graph.add %s, %c
// CHECK-NEXT:    %0 = graph.gemm %acc, %w
// CHECK-NEXT:    %m = graph.add %0, %acc : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
// CHECK-NEXT:    func.return %g
// PIPELINE-LABEL: func.func @mixed
// PIPELINE:        exchange.row
