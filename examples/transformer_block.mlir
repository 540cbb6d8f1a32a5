// A GPT-style transformer block (pre-activation residual form, no layer norm: the graph dialect
// has no normalisation op): causal self-attention with 2 heads of 64, then a GeLU MLP, each
// added back to the residual stream with broadcasting biases. Sequence 64, model width 128,
// MLP width 256, f16.
//
// The graph dialect has no reshape, slice or reduce, so the heads are built per head: a
// projection to `[1, 64, 64]` (weights `[1, 128, 64]`, batch-broadcast GEMM), one
// `graph.attention` per head, and the head merge `concat(o0, o1) @ Wo` written as its equal
// `o0 @ Wo[0:64] + o1 @ Wo[64:128]`. The residual adds broadcast `[64, 128] + [1, 64, 128]`.
//
// Run the reference: ipu-run examples/transformer_block.mlir --reference
func.func @transformer_block(
    %x: tensor<64x128xf16>,
    %wq0: tensor<1x128x64xf16>, %wk0: tensor<1x128x64xf16>, %wv0: tensor<1x128x64xf16>, %wo0: tensor<64x128xf16>,
    %wq1: tensor<1x128x64xf16>, %wk1: tensor<1x128x64xf16>, %wv1: tensor<1x128x64xf16>, %wo1: tensor<64x128xf16>,
    %bo: tensor<128xf16>,
    %w1: tensor<128x256xf16>, %b1: tensor<256xf16>,
    %w2: tensor<256x128xf16>, %b2: tensor<128xf16>) -> tensor<1x64x128xf16> {
  // head 0
  %q0 = graph.gemm %x, %wq0 : (tensor<64x128xf16>, tensor<1x128x64xf16>) -> tensor<1x64x64xf16>
  %k0 = graph.gemm %x, %wk0 : (tensor<64x128xf16>, tensor<1x128x64xf16>) -> tensor<1x64x64xf16>
  %v0 = graph.gemm %x, %wv0 : (tensor<64x128xf16>, tensor<1x128x64xf16>) -> tensor<1x64x64xf16>
  %o0 = graph.attention %q0, %k0, %v0 causal : (tensor<1x64x64xf16>, tensor<1x64x64xf16>, tensor<1x64x64xf16>) -> tensor<1x64x64xf16>
  %p0 = graph.gemm %o0, %wo0 : (tensor<1x64x64xf16>, tensor<64x128xf16>) -> tensor<1x64x128xf16>
  // head 1
  %q1 = graph.gemm %x, %wq1 : (tensor<64x128xf16>, tensor<1x128x64xf16>) -> tensor<1x64x64xf16>
  %k1 = graph.gemm %x, %wk1 : (tensor<64x128xf16>, tensor<1x128x64xf16>) -> tensor<1x64x64xf16>
  %v1 = graph.gemm %x, %wv1 : (tensor<64x128xf16>, tensor<1x128x64xf16>) -> tensor<1x64x64xf16>
  %o1 = graph.attention %q1, %k1, %v1 causal : (tensor<1x64x64xf16>, tensor<1x64x64xf16>, tensor<1x64x64xf16>) -> tensor<1x64x64xf16>
  %p1 = graph.gemm %o1, %wo1 : (tensor<1x64x64xf16>, tensor<64x128xf16>) -> tensor<1x64x128xf16>
  // merge heads, bias, residual
  %heads = graph.add %p0, %p1 : (tensor<1x64x128xf16>, tensor<1x64x128xf16>) -> tensor<1x64x128xf16>
  %attn = graph.add %heads, %bo : (tensor<1x64x128xf16>, tensor<128xf16>) -> tensor<1x64x128xf16>
  %h = graph.add %x, %attn : (tensor<64x128xf16>, tensor<1x64x128xf16>) -> tensor<1x64x128xf16>
  // MLP
  %up = graph.gemm %h, %w1 : (tensor<1x64x128xf16>, tensor<128x256xf16>) -> tensor<1x64x256xf16>
  %up_b = graph.add %up, %b1 : (tensor<1x64x256xf16>, tensor<256xf16>) -> tensor<1x64x256xf16>
  %act = graph.gelu %up_b : tensor<1x64x256xf16> -> tensor<1x64x256xf16>
  %down = graph.gemm %act, %w2 : (tensor<1x64x256xf16>, tensor<256x128xf16>) -> tensor<1x64x128xf16>
  %down_b = graph.add %down, %b2 : (tensor<1x64x128xf16>, tensor<128xf16>) -> tensor<1x64x128xf16>
  %out = graph.add %h, %down_b : (tensor<1x64x128xf16>, tensor<1x64x128xf16>) -> tensor<1x64x128xf16>
  func.return %out : tensor<1x64x128xf16>
}
