// An FP32 GEMM with broadcast batch axes and extents that are not multiples of 64:
// [2,1,100,72] x [3,72,40] -> [2,3,100,40].
func.func @batched(%a: tensor<2x1x100x72xf32>, %b: tensor<3x72x40xf32>) -> tensor<2x3x100x40xf32> {
  %c = graph.gemm %a, %b : (tensor<2x1x100x72xf32>, tensor<3x72x40xf32>) -> tensor<2x3x100x40xf32>
  func.return %c : tensor<2x3x100x40xf32>
}
