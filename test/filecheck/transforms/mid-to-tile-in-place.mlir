// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4}' | filecheck %s --check-prefix=MID
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4},insert-conversions,mid-to-tile' | filecheck %s

// Pointwise plans whose operand is stored exactly as their output may write over it
// (`alias`); mid-to-tile does so where that operand dies at the op: a scratch value made by
// an earlier op and used by this op alone, and an output that is not returned.
// - %g reads the argument %a (an input buffer): a buffer of its own;
// - %h is the last use of %g: written over @g;
// - %p reads %h, which the add still reads afterwards: a buffer of its own;
// - %s is returned: its output buffer.
func.func @chain(%a: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %g = graph.gelu %a : tensor<64x64xf32> -> tensor<64x64xf32>
  %h = graph.gelu %g : tensor<64x64xf32> -> tensor<64x64xf32>
  %p = graph.gelu %h : tensor<64x64xf32> -> tensor<64x64xf32>
  %s = graph.add %h, %p : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %s : tensor<64x64xf32>
}

// MID: %g = mid.gelu %a plan {{.*}} alias = src>
// MID: %h = mid.gelu %g plan {{.*}} alias = src>
// MID: %s = mid.add %h, %p plan {{.*}} alias = lhs>

// CHECK-NOT: tile.buffer @h
// CHECK:     tile.kernel @gelu(%g[() -> (0)], %a[() -> (0)]) {{.*}} provenance #tile.provenance<op = "graph.gelu %g"
// CHECK-NEXT: tile.kernel @gelu(%g[() -> (0)], %g[() -> (0)]) {{.*}} provenance #tile.provenance<op = "graph.gelu %h"
// CHECK-NEXT: tile.kernel @gelu(%p[() -> (0)], %g[() -> (0)]) {{.*}} provenance #tile.provenance<op = "graph.gelu %p"
// CHECK-NEXT: tile.kernel @add(%s[() -> (0)], %g[() -> (0)], %p[() -> (0)]) {{.*}} provenance #tile.provenance<op = "graph.add %s"
