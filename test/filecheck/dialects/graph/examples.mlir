// The example graphs parse, verify and round-trip through the custom and the generic form.
// RUN: ipu-opt %examples/transformer_block.mlir | ipu-opt | filecheck %s --check-prefix=BLOCK
// RUN: ipu-opt %examples/transformer_block.mlir --print-op-generic | ipu-opt | filecheck %s --check-prefix=BLOCK
// RUN: ipu-opt %examples/repeat_layers.mlir | ipu-opt --print-op-generic | ipu-opt | filecheck %s --check-prefix=LAYERS

// BLOCK:      func.func @transformer_block(
// BLOCK:        %o0 = graph.attention %q0, %k0, %v0 causal : (tensor<1x64x64xf16>, tensor<1x64x64xf16>, tensor<1x64x64xf16>) -> tensor<1x64x64xf16>
// BLOCK:        %h = graph.add %x, %attn : (tensor<64x128xf16>, tensor<1x64x128xf16>) -> tensor<1x64x128xf16>
// BLOCK:        %act = graph.gelu %up_b : tensor<1x64x256xf16> -> tensor<1x64x256xf16>
// BLOCK:        func.return %out : tensor<1x64x128xf16>

// LAYERS:      %out = graph.repeat 4 carried(%x = %x0 : tensor<64x128xf32>) invariant(%bias = %b : tensor<128xf32>) sequence(%w = %ws : tensor<4x128x128xf32>) {
// LAYERS-NEXT:   %y = graph.gemm %x, %w : (tensor<64x128xf32>, tensor<128x128xf32>) -> tensor<64x128xf32>
// LAYERS:        graph.yield %next : tensor<64x128xf32>
// LAYERS-NEXT: } -> tensor<64x128xf32>
