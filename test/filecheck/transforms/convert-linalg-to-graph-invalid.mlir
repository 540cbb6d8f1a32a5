// What convert-linalg-to-graph does not convert is a diagnostic at the op, never a traceback
// and never an op left for the later passes.
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p convert-linalg-to-graph

func.func @product(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  // expected-error @+1 {{convert-linalg-to-graph: cannot convert linalg.generic (result %g): only an elementwise addition converts}}
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  func.return %g : tensor<8x8xf32>
}

// -----

func.func @broadcast(%x: tensor<8x8xf32>, %y: tensor<8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  // expected-error @+1 {{identity indexing maps}}
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  func.return %g : tensor<8x8xf32>
}

// -----

func.func @difference(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  // expected-error @+1 {{convert-linalg-to-graph: cannot convert linalg.sub (result %d): it has no graph equivalent}}
  %d = linalg.sub ins(%x, %y : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %d : tensor<8x8xf32>
}

// -----

// A filled tensor used as a value: graph ops have no constants.
func.func @ones(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  // expected-error @+1 {{convert-linalg-to-graph: cannot convert linalg.fill (result %f): an initial value is still used by an op that stays (graph ops have no constants)}}
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %s = linalg.add ins(%x, %f : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %s : tensor<8x8xf32>
}
