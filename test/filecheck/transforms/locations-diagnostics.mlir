// Diagnostics of the later levels start with the user's source line (ipu_dialects/locations.py).
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'ipu-pipeline{tiles=1}' | filecheck %s --check-prefix=PIPELINE
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'insert-conversions' | filecheck %s --check-prefix=CONVERT
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'mid-to-tile' | filecheck %s --check-prefix=TILE

// Every op fits on its own (graph-to-mid accepts each plan), the buffers live together do not:
// place-memory points at the graph op whose value is the largest buffer live at the peak.
func.func @oom(%x: tensor<128x64xf32>, %w: tensor<64x256xf32>) -> tensor<128x256xf32> {
  %y = graph.gemm %x, %w : (tensor<128x64xf32>, tensor<64x256xf32>) -> tensor<128x256xf32>
  %g = graph.gelu %y : tensor<128x256xf32> -> tensor<128x256xf32>
  %z = graph.add %g, %y : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  %u = graph.add %z, %g : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  %v = graph.add %u, %z : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  func.return %v : tensor<128x256xf32>
}
// PIPELINE: locations-diagnostics.mlir:9:3: error: Out of interleaved memory on tile 0: interleaved buffers need 393216 bytes, the interleaved region has 245760 bytes (buffers live together: y 131072, g 131072, z 131072)

// -----

#A = #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>
func.func @reshape(%x: tensor<4x4xf16, #A>) -> tensor<2x8xf16, #A> {
  %y = builtin.unrealized_conversion_cast %x : tensor<4x4xf16, #A> to tensor<2x8xf16, #A>
  func.return %y : tensor<2x8xf16, #A>
}
// CONVERT: locations-diagnostics.mlir:22:3: error: insert-conversions: cannot convert %x of shape [4, 4] to shape [2, 8]

// -----

builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 1, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @f() {
    %d = arith.constant 1 : i32
    func.return
  }
}
// TILE: locations-diagnostics.mlir:31:5: error: mid-to-tile: cannot lower arith.constant (result %d): no operator of passes/operators lowers it
