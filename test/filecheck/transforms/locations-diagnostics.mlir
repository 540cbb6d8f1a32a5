// Diagnostics of the later levels start with the user's source line (ipu_dialects/locations.py).
// RUN: ipu-opt %s --verify-diagnostics -p 'ipu-pipeline{tiles=1}'
// The column too (an annotation names the line only):
// RUN: not ipu-opt %s -p 'ipu-pipeline{tiles=1}' 2>&1 | filecheck %s --check-prefix=COLUMN
// insert-conversions-invalid.mlir and mid-to-tile-operators-invalid.mlir: the same for those passes.

// Every op fits on its own (graph-to-mid accepts each plan), the buffers live together do not:
// place-memory points at the graph op whose value is the largest buffer live at the peak.
func.func @oom(%x: tensor<128x64xf32>, %w: tensor<64x256xf32>) -> tensor<128x256xf32> {
  // expected-error @+1 {{Out of interleaved memory on tile 0: interleaved buffers need 393216 bytes, the interleaved region has 245760 bytes (buffers live together: y 131072, g 131072, z 131072)}}
  %y = graph.gemm %x, %w : (tensor<128x64xf32>, tensor<64x256xf32>) -> tensor<128x256xf32>
  %g = graph.gelu %y : tensor<128x256xf32> -> tensor<128x256xf32>
  %z = graph.add %g, %y : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  %u = graph.add %z, %g : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  %v = graph.add %u, %z : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  func.return %v : tensor<128x256xf32>
}
// COLUMN: locations-diagnostics.mlir:[[# @LINE - 7]]:3: error: Out of interleaved memory on tile 0: interleaved buffers need 393216 bytes, the interleaved region has 245760 bytes (buffers live together: y 131072, g 131072, z 131072)
