// RUN: ipu-opt %s --verify-diagnostics -p 'ipu-pipeline{tiles=1}'

// A repeat whose buffers do not fit: sixty 128x128 f32 weights (64 KiB each) stay on the one
// tile of their element's format. place-memory names the tile and the buffers; the body's
// temporaries are live across the loop like the sequence.
// expected-error-re @+1 {{Out of memory on tile 0: {{[0-9]+}} bytes needed, tiles only have 638976 bytes (code region 32768, buffers live together: {{.*}}ws 3932160{{.*}})}}
func.func @too_deep(%x0: tensor<64x128xf32>, %ws: tensor<60x128x128xf32>) -> tensor<64x128xf32> {
  %out = graph.repeat 60 carried(%x = %x0 : tensor<64x128xf32>) sequence(%w = %ws : tensor<60x128x128xf32>) {
    %y = graph.gemm %x, %w : (tensor<64x128xf32>, tensor<128x128xf32>) -> tensor<64x128xf32>
    graph.yield %y : tensor<64x128xf32>
  } -> tensor<64x128xf32>
  func.return %out : tensor<64x128xf32>
}
