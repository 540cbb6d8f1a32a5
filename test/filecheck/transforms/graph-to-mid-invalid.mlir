// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'graph-to-mid{tiles=4}'
// RUN: ipu-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(graph-to-mid{tiles=4})'

// A module is lowered once: a second graph-to-mid (or ipu-pipeline) is refused.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @lowered() {
    func.return
  }
}
// expected-error @unknown {{graph-to-mid: the module already has 'ipu.config': it was lowered before (run graph-to-mid, or ipu-pipeline, once per module)}}

// -----

// A graph op outside any func.func is not left behind unlowered: the verifier refuses it.
%a = "test.op"() : () -> tensor<64x64xf32>
// expected-error @+1 {{graph.gelu: graph ops live in a func.func or graph.repeat body, not in builtin.module}}
%g = "graph.gelu"(%a) : (tensor<64x64xf32>) -> tensor<64x64xf32>

// -----

// The op verifiers see only the values ops use; graph-to-mid checks the whole signature.
func.func @scaled_f32_argument(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %unused: tensor<4xf32, #graph.fp8_scale<2>>) -> tensor<64x64xf32> {
  %c = graph.gemm %a, %b : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %c : tensor<64x64xf32>
}
// expected-error @unknown {{func.func @scaled_f32_argument: argument %unused has an FP8 scale but element type f32; only f8E4M3FNUZ tensors are scaled}}
