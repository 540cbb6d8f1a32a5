// RUN: ipu-opt %s -p 'ipu-pipeline{tiles=2}' | filecheck %s

// The whole pipeline on a repeat: the weight broadcast inside the loop is one shared pair of
// exchange rows; per iteration only the send address changes, by one element's 2048 words
// (8192 bytes): the sequence's base-pointer increment (94208, 96256, 98304: the word
// address of @ws at 0x5c000, + 2048, + 4096). The rows name the repeat.
func.func @layers(%x0: tensor<128x64xf16>, %b: tensor<64xf16>, %ws: tensor<3x64x64xf16>) -> tensor<128x64xf16> {
  %out = graph.repeat 3 carried(%x = %x0 : tensor<128x64xf16>) invariant(%bias = %b : tensor<64xf16>) sequence(%w = %ws : tensor<3x64x64xf16>) {
    %y = graph.gemm %x, %w : (tensor<128x64xf16>, tensor<64x64xf16>) -> tensor<128x64xf16>
    %yb = graph.add %y, %bias : (tensor<128x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
    %next = graph.add %x, %yb : (tensor<128x64xf16>, tensor<128x64xf16>) -> tensor<128x64xf16>
    graph.yield %next : tensor<128x64xf16>
  } -> tensor<128x64xf16>
  func.return %out : tensor<128x64xf16>
}
// CHECK: tile.loop %r = 0 to 3
// CHECK: tile.exchange 2048 words from %ws[(d0, d1) -> (((d1 * 8192) + (d0 * 8192)))] {{.*}} iv(%r, %j) {{.*}} rows [@x0_send, @x0_receive] sender_rows array<i32: 0, 0, 0> receiver_rows array<i32: 1, 1, 1> patches [#tile.patch<@x0_send, 0, "address", array<i64: 94208, 96256, 98304>>]
// CHECK: exchange.row @x0_send provenance "graph.gemm %y in graph.repeat %out %w: rhs block to output-row tiles"
