builtin.module {
  func.func @main(%x: tensor<1x64x128xf32>, %ln_1.weight: tensor<128xf32>, %ln_1.bias: tensor<128xf32>, %onnx__MatMul.121: tensor<128x384xf32>, %qkv.bias: tensor<384xf32>, %onnx__MatMul.141: tensor<128x128xf32>, %proj.bias: tensor<128xf32>, %ln_2.weight: tensor<128xf32>, %ln_2.bias: tensor<128xf32>, %onnx__MatMul.142: tensor<128x512xf32>, %fc.bias: tensor<512xf32>, %onnx__MatMul.143: tensor<512x128xf32>, %fc_out.bias: tensor<128xf32>) -> tensor<1x64x128xf32> {
    %layer_norm1 = graph.layer_norm %x, %ln_1.weight, %ln_1.bias eps 9.999999747378752e-06 : (tensor<1x64x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<1x64x128xf32>
    %gemm2 = graph.gemm %layer_norm1, %onnx__MatMul.121 : (tensor<1x64x128xf32>, tensor<128x384xf32>) -> tensor<1x64x384xf32>
    %add3 = graph.add %gemm2, %qkv.bias : (tensor<1x64x384xf32>, tensor<384xf32>) -> tensor<1x64x384xf32>
    %slice4 = graph.slice %add3 starts [0, 0, 0] ends [1, 64, 128] steps [1, 1, 1] : tensor<1x64x384xf32> -> tensor<1x64x128xf32>
    %slice5 = graph.slice %add3 starts [0, 0, 128] ends [1, 64, 256] steps [1, 1, 1] : tensor<1x64x384xf32> -> tensor<1x64x128xf32>
    %slice6 = graph.slice %add3 starts [0, 0, 256] ends [1, 64, 384] steps [1, 1, 1] : tensor<1x64x384xf32> -> tensor<1x64x128xf32>
    %reshape7 = graph.reshape %slice4 : tensor<1x64x128xf32> -> tensor<1x64x2x64xf32>
    %transpose8 = graph.transpose %reshape7 permutation [0, 2, 1, 3] : tensor<1x64x2x64xf32> -> tensor<1x2x64x64xf32>
    %reshape9 = graph.reshape %slice5 : tensor<1x64x128xf32> -> tensor<1x64x2x64xf32>
    %reshape11 = graph.reshape %slice6 : tensor<1x64x128xf32> -> tensor<1x64x2x64xf32>
    %transpose12 = graph.transpose %reshape11 permutation [0, 2, 1, 3] : tensor<1x64x2x64xf32> -> tensor<1x2x64x64xf32>
    %transpose14 = graph.transpose %reshape9 permutation [0, 2, 1, 3] : tensor<1x64x2x64xf32> -> tensor<1x2x64x64xf32>
    %attention15 = graph.attention %transpose8, %transpose14, %transpose12 causal : (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
    %transpose16 = graph.transpose %attention15 permutation [0, 2, 1, 3] : tensor<1x2x64x64xf32> -> tensor<1x64x2x64xf32>
    %reshape17 = graph.reshape %transpose16 : tensor<1x64x2x64xf32> -> tensor<1x64x128xf32>
    %gemm18 = graph.gemm %reshape17, %onnx__MatMul.141 : (tensor<1x64x128xf32>, tensor<128x128xf32>) -> tensor<1x64x128xf32>
    %add19 = graph.add %gemm18, %proj.bias : (tensor<1x64x128xf32>, tensor<128xf32>) -> tensor<1x64x128xf32>
    %add20 = graph.add %x, %add19 : (tensor<1x64x128xf32>, tensor<1x64x128xf32>) -> tensor<1x64x128xf32>
    %layer_norm21 = graph.layer_norm %add20, %ln_2.weight, %ln_2.bias eps 9.999999747378752e-06 : (tensor<1x64x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<1x64x128xf32>
    %gemm22 = graph.gemm %layer_norm21, %onnx__MatMul.142 : (tensor<1x64x128xf32>, tensor<128x512xf32>) -> tensor<1x64x512xf32>
    %add23 = graph.add %gemm22, %fc.bias : (tensor<1x64x512xf32>, tensor<512xf32>) -> tensor<1x64x512xf32>
    %gelu24 = graph.gelu %add23 : tensor<1x64x512xf32> -> tensor<1x64x512xf32>
    %gemm25 = graph.gemm %gelu24, %onnx__MatMul.143 : (tensor<1x64x512xf32>, tensor<512x128xf32>) -> tensor<1x64x128xf32>
    %add26 = graph.add %gemm25, %fc_out.bias : (tensor<1x64x128xf32>, tensor<128xf32>) -> tensor<1x64x128xf32>
    %add27 = graph.add %add20, %add26 : (tensor<1x64x128xf32>, tensor<1x64x128xf32>) -> tensor<1x64x128xf32>
    func.return %add27 : tensor<1x64x128xf32>
  }
}
