// Without normalize-repeats, mid-to-tile refuses a sequence stored as the whole stacked
// tensor's format (not consecutive per-tile blocks of its element's format), naming the
// repeat and the operand; a repeat without a sequence still lowers
// (mid-to-tile-repeat.mlir: the same functions with normalize-repeats).
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'graph-to-mid{tiles=2 catalog=amp_gemm_f16_r16},insert-conversions,mid-to-tile' | filecheck %s

func.func @layers(%x0: tensor<64x64xf16>, %b: tensor<64xf16>, %ws: tensor<3x64x64xf16>) -> tensor<64x64xf16> {
  // expected-error @+1 {{mid-to-tile: sequence operand #0 (%ws) of the repeat is not normalized (its format is not consecutive per-tile blocks of its body element's format); run normalize-repeats before mid-to-tile}}
  %out = graph.repeat 3 carried(%x = %x0 : tensor<64x64xf16>) invariant(%bias = %b : tensor<64xf16>) sequence(%w = %ws : tensor<3x64x64xf16>) {
    %y = graph.gemm %x, %w : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    %yb = graph.add %y, %bias : (tensor<64x64xf16>, tensor<64xf16>) -> tensor<64x64xf16>
    %next = graph.add %x, %yb : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    graph.yield %next : tensor<64x64xf16>
  } -> tensor<64x64xf16>
  func.return %out : tensor<64x64xf16>
}

// -----

func.func @copy(%x0: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %r = graph.repeat 5 carried(%x = %x0 : tensor<64x64xf32>) {
    %y = graph.gelu %x : tensor<64x64xf32> -> tensor<64x64xf32>
    %z = graph.add %x, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %u = graph.add %z, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    graph.yield %y : tensor<64x64xf32>
  } -> tensor<64x64xf32>
  func.return %r : tensor<64x64xf32>
}
// CHECK-LABEL: func.func @copy()
// CHECK: tile.loop

// -----

func.func @nested(%x0: tensor<64x64xf16>, %ws: tensor<3x2x64x64xf16>) -> tensor<64x64xf16> {
  %out = graph.repeat 3 carried(%x = %x0 : tensor<64x64xf16>) sequence(%wl = %ws : tensor<3x2x64x64xf16>) {
    // expected-error @+1 {{mid-to-tile: sequence operand #0 (%wl) of the repeat is not normalized}}
    %in = graph.repeat 2 carried(%a = %x : tensor<64x64xf16>) sequence(%w = %wl : tensor<2x64x64xf16>) {
      %y = graph.gemm %a, %w : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
      graph.yield %y : tensor<64x64xf16>
    } -> tensor<64x64xf16>
    graph.yield %in : tensor<64x64xf16>
  } -> tensor<64x64xf16>
  func.return %out : tensor<64x64xf16>
}
