// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

func.func @gemm(%a: tensor<128x256xf16>, %b: tensor<256x64xf16>, %a4: tensor<2x1x128x64xf32>, %e: tensor<3x32x64xf32>, %f: tensor<3x16x32xf32>) -> (tensor<128x64xf16>, tensor<2x3x128x32xf32>, tensor<3x64x64xf32>) {
  %c = graph.gemm %a, %b : (tensor<128x256xf16>, tensor<256x64xf16>) -> tensor<128x64xf16>
  %d = graph.gemm %a4, %e transpose_rhs : (tensor<2x1x128x64xf32>, tensor<3x32x64xf32>) -> tensor<2x3x128x32xf32>
  %t = graph.gemm %e, %f transpose_lhs transpose_rhs : (tensor<3x32x64xf32>, tensor<3x16x32xf32>) -> tensor<3x64x16xf32>
  %u = graph.gemm %e, %e transpose_lhs : (tensor<3x32x64xf32>, tensor<3x32x64xf32>) -> tensor<3x64x64xf32>
  func.return %c, %d, %u : tensor<128x64xf16>, tensor<2x3x128x32xf32>, tensor<3x64x64xf32>
}
// CHECK-LABEL: func.func @gemm
// CHECK-NEXT:    %c = graph.gemm %a, %b : (tensor<128x256xf16>, tensor<256x64xf16>) -> tensor<128x64xf16>
// CHECK-NEXT:    %d = graph.gemm %a4, %e transpose_rhs : (tensor<2x1x128x64xf32>, tensor<3x32x64xf32>) -> tensor<2x3x128x32xf32>
// CHECK-NEXT:    %t = graph.gemm %e, %f transpose_lhs transpose_rhs : (tensor<3x32x64xf32>, tensor<3x16x32xf32>) -> tensor<3x64x16xf32>
// CHECK-NEXT:    %u = graph.gemm %e, %e transpose_lhs : (tensor<3x32x64xf32>, tensor<3x32x64xf32>) -> tensor<3x64x64xf32>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "gemm"
// CHECK-GENERIC:      "graph.gemm"(%a, %b) : (tensor<128x256xf16>, tensor<256x64xf16>) -> tensor<128x64xf16>
// CHECK-GENERIC-NEXT: "graph.gemm"(%a4, %e) <{transpose_rhs}> : (tensor<2x1x128x64xf32>, tensor<3x32x64xf32>) -> tensor<2x3x128x32xf32>
// CHECK-GENERIC-NEXT: "graph.gemm"(%e, %f) <{transpose_lhs, transpose_rhs}> : (tensor<3x32x64xf32>, tensor<3x16x32xf32>) -> tensor<3x64x16xf32>
// CHECK-GENERIC-NEXT: "graph.gemm"(%e, %e) <{transpose_lhs}> : (tensor<3x32x64xf32>, tensor<3x32x64xf32>) -> tensor<3x64x64xf32>

// -----

func.func @add(%x: tensor<2x1x8xf32>, %bias: tensor<8xf32>, %y: tensor<3x1xf32>, %s: tensor<f32>) -> (tensor<2x1x8xf32>, tensor<2x3x8xf32>, tensor<3x1xf32>) {
  %a = graph.add %x, %bias : (tensor<2x1x8xf32>, tensor<8xf32>) -> tensor<2x1x8xf32>
  %b = graph.add %y, %x : (tensor<3x1xf32>, tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
  %c = graph.add %y, %s : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  func.return %a, %b, %c : tensor<2x1x8xf32>, tensor<2x3x8xf32>, tensor<3x1xf32>
}
// CHECK-LABEL: func.func @add
// CHECK-NEXT:    %a = graph.add %x, %bias : (tensor<2x1x8xf32>, tensor<8xf32>) -> tensor<2x1x8xf32>
// CHECK-NEXT:    %b = graph.add %y, %x : (tensor<3x1xf32>, tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT:    %c = graph.add %y, %s : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "add"
// CHECK-GENERIC:      "graph.add"(%x, %bias) : (tensor<2x1x8xf32>, tensor<8xf32>) -> tensor<2x1x8xf32>
// CHECK-GENERIC-NEXT: "graph.add"(%y, %x) : (tensor<3x1xf32>, tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
// CHECK-GENERIC-NEXT: "graph.add"(%y, %s) : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>

// -----

// The exact GeLU prints no `approximate`; the tanh form prints it (generic: a property).
func.func @gelu(%x: tensor<4x8xf16>, %f: tensor<16xf8E4M3FNUZ, #graph.fp8_scale<-3>>) -> (tensor<4x8xf16>, tensor<16xf8E4M3FNUZ, #graph.fp8_scale<2>>, tensor<4x8xf16>) {
  %g = graph.gelu %x : tensor<4x8xf16> -> tensor<4x8xf16>
  %h = graph.gelu %f : tensor<16xf8E4M3FNUZ, #graph.fp8_scale<-3>> -> tensor<16xf8E4M3FNUZ, #graph.fp8_scale<2>>
  %t = graph.gelu %x approximate tanh : tensor<4x8xf16> -> tensor<4x8xf16>
  func.return %g, %h, %t : tensor<4x8xf16>, tensor<16xf8E4M3FNUZ, #graph.fp8_scale<2>>, tensor<4x8xf16>
}
// CHECK-LABEL: func.func @gelu
// CHECK-NEXT:    %g = graph.gelu %x : tensor<4x8xf16> -> tensor<4x8xf16>
// CHECK-NEXT:    %h = graph.gelu %f : tensor<16xf8E4M3FNUZ, #graph.fp8_scale<-3>> -> tensor<16xf8E4M3FNUZ, #graph.fp8_scale<2>>
// CHECK-NEXT:    %t = graph.gelu %x approximate tanh : tensor<4x8xf16> -> tensor<4x8xf16>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "gelu"
// CHECK-GENERIC:      "graph.gelu"(%x) : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-GENERIC-NEXT: "graph.gelu"(%f) : (tensor<16xf8E4M3FNUZ, #graph.fp8_scale<-3>>) -> tensor<16xf8E4M3FNUZ, #graph.fp8_scale<2>>
// CHECK-GENERIC-NEXT: "graph.gelu"(%x) <{approximate = #graph<gelu_approximation tanh>}> : (tensor<4x8xf16>) -> tensor<4x8xf16>

// -----

func.func @attention(%q: tensor<2x16x8xf16>, %k: tensor<2x32x8xf16>, %b: tensor<3x2x16x8xf32>) {
  %a = graph.attention %q, %k, %k : (tensor<2x16x8xf16>, tensor<2x32x8xf16>, tensor<2x32x8xf16>) -> tensor<2x16x8xf16>
  %s = graph.attention %q, %k, %k scale 0.5 : (tensor<2x16x8xf16>, tensor<2x32x8xf16>, tensor<2x32x8xf16>) -> tensor<2x16x8xf16>
  %c = graph.attention %b, %b, %b causal : (tensor<3x2x16x8xf32>, tensor<3x2x16x8xf32>, tensor<3x2x16x8xf32>) -> tensor<3x2x16x8xf32>
  %d = graph.attention %b, %b, %b causal scale 1.0e-05 : (tensor<3x2x16x8xf32>, tensor<3x2x16x8xf32>, tensor<3x2x16x8xf32>) -> tensor<3x2x16x8xf32>
  func.return
}
// CHECK-LABEL: func.func @attention
// CHECK-NEXT:    %a = graph.attention %q, %k, %k : (tensor<2x16x8xf16>, tensor<2x32x8xf16>, tensor<2x32x8xf16>) -> tensor<2x16x8xf16>
// CHECK-NEXT:    %s = graph.attention %q, %k, %k scale 0.5 : (tensor<2x16x8xf16>, tensor<2x32x8xf16>, tensor<2x32x8xf16>) -> tensor<2x16x8xf16>
// CHECK-NEXT:    %c = graph.attention %b, %b, %b causal : (tensor<3x2x16x8xf32>, tensor<3x2x16x8xf32>, tensor<3x2x16x8xf32>) -> tensor<3x2x16x8xf32>
// CHECK-NEXT:    %d = graph.attention %b, %b, %b causal scale 1.0e-05 : (tensor<3x2x16x8xf32>, tensor<3x2x16x8xf32>, tensor<3x2x16x8xf32>) -> tensor<3x2x16x8xf32>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "attention"
// CHECK-GENERIC:      "graph.attention"(%q, %k, %k) : (tensor<2x16x8xf16>, tensor<2x32x8xf16>, tensor<2x32x8xf16>) -> tensor<2x16x8xf16>
// CHECK-GENERIC-NEXT: "graph.attention"(%q, %k, %k) <{scale = 5.000000e-01 : f64}>
// CHECK-GENERIC-NEXT: "graph.attention"(%b, %b, %b) <{causal}>
// CHECK-GENERIC-NEXT: "graph.attention"(%b, %b, %b) <{causal, scale = 1.000000e-05 : f64}>

// -----

func.func @repeat(%x0: tensor<4x8xf32>, %y0: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %seq: tensor<3x8x8xf32>, %seq2: tensor<3x2x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %r, %r_1 = graph.repeat 3 carried(%x = %x0 : tensor<4x8xf32>, %y = %y0 : tensor<4x8xf32>) invariant(%w = %w0 : tensor<8x8xf32>) sequence(%s = %seq : tensor<3x8x8xf32>, %t = %seq2 : tensor<3x2x8xf32>) {
    %m = graph.gemm %x, %s : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %inner = graph.repeat 2 carried(%i = %m : tensor<4x8xf32>) invariant(%v = %w : tensor<8x8xf32>) {
      %n = graph.gemm %i, %v transpose_rhs : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      graph.yield %n : tensor<4x8xf32>
    } -> tensor<4x8xf32>
    graph.yield %inner, %x : tensor<4x8xf32>, tensor<4x8xf32>
  } -> tensor<4x8xf32>, tensor<4x8xf32>
  graph.repeat 2 attributes {test.note = "empty"} {
    graph.yield
  }
  graph.repeat 3 sequence(%u = %seq : tensor<3x8x8xf32>) {
    graph.yield
  }
  func.return %r, %r_1 : tensor<4x8xf32>, tensor<4x8xf32>
}
// CHECK-LABEL: func.func @repeat
// CHECK-NEXT:    %r, %r_1 = graph.repeat 3 carried(%x = %x0 : tensor<4x8xf32>, %y = %y0 : tensor<4x8xf32>) invariant(%w = %w0 : tensor<8x8xf32>) sequence(%s = %seq : tensor<3x8x8xf32>, %t = %seq2 : tensor<3x2x8xf32>) {
// CHECK-NEXT:      %m = graph.gemm %x, %s : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:      %inner = graph.repeat 2 carried(%i = %m : tensor<4x8xf32>) invariant(%v = %w : tensor<8x8xf32>) {
// CHECK-NEXT:        %n = graph.gemm %i, %v transpose_rhs : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:        graph.yield %n : tensor<4x8xf32>
// CHECK-NEXT:      } -> tensor<4x8xf32>
// CHECK-NEXT:      graph.yield %inner, %x : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    } -> tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    graph.repeat 2 attributes {test.note = "empty"} {
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    graph.repeat 3 sequence(%u = %seq : tensor<3x8x8xf32>) {
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "repeat"
// CHECK-GENERIC:      "graph.repeat"(%x0, %y0, %w0, %seq, %seq2) <{count = 3 : i64, operandSegmentSizes = array<i32: 2, 1, 2>}> ({
// CHECK-GENERIC-NEXT: ^bb0(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %w: tensor<8x8xf32>, %s: tensor<8x8xf32>, %t: tensor<2x8xf32>):
// CHECK-GENERIC:      "graph.yield"(%n) : (tensor<4x8xf32>) -> ()
// CHECK-GENERIC:      "graph.repeat"() <{count = 2 : i64, operandSegmentSizes = array<i32: 0, 0, 0>}> ({
// CHECK-GENERIC-NEXT:   "graph.yield"() : () -> ()
// CHECK-GENERIC-NEXT: }) {test.note = "empty"} : () -> ()

// -----

// A scale written as the hex bits of an f64 (MLIR's float-attribute spelling) prints as decimal.
func.func @attention_hex_scale(%q: tensor<1x4x2xf32>) -> tensor<1x4x2xf32> {
  %o = graph.attention %q, %q, %q scale 0x3FC0000000000000 : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  func.return %o : tensor<1x4x2xf32>
}
// CHECK-LABEL: func.func @attention_hex_scale
// CHECK-NEXT:    %o = graph.attention %q, %q, %q scale 0.125 : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "attention_hex_scale"
// CHECK-GENERIC:      "graph.attention"(%q, %q, %q) <{scale = 1.250000e-01 : f64}>
