// graph.gelu's `approximate` takes `tanh` only: any other word (ONNX's default spelling `none`
// included: the exact GeLU is written without `approximate`) is a parse error at the word,
// in the custom and in the generic form.
// RUN: not ipu-opt %s 2>&1 | filecheck %s --check-prefix=WORD
// RUN: sed -e 's/approximate sigmoid/approximate none/' %s | not ipu-opt 2>&1 | filecheck %s --check-prefix=NONE
// RUN: sed -e 's/approximate sigmoid/approximate/' %s | not ipu-opt 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: sed -e 's/%y = graph.gelu %x approximate sigmoid : tensor<4xf32>/%y = "graph.gelu"(%x) <{approximate = #graph<gelu_approximation erf>}> : (tensor<4xf32>)/' %s | not ipu-opt 2>&1 | filecheck %s --check-prefix=GENERIC
// RUN: sed -e 's/%y = graph.gelu %x approximate sigmoid : tensor<4xf32>/%y = "graph.gelu"(%x) <{approximate = "tanh"}> : (tensor<4xf32>)/' %s | not ipu-opt 2>&1 | filecheck %s --check-prefix=STRING

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.gelu %x approximate sigmoid : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// WORD:      gelu-approximate-invalid.mlir:11:34
// WORD:      ^^^^^^^
// WORD-NEXT: gelu approximate must be 'tanh', not 'sigmoid'; the exact (erf) GeLU is the default and is written without 'approximate'
// NONE:      gelu approximate must be 'tanh', not 'none'; the exact (erf) GeLU is the default
// MISSING:   gelu approximate must be 'tanh', not missing
// GENERIC:   gelu approximate must be 'tanh', not 'erf'
// STRING:    Operation does not verify: "tanh" should be of base attribute graph.gelu_approximation
