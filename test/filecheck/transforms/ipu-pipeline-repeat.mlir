// RUN: ipu-opt %s -p 'ipu-pipeline{tiles=2 catalog=amp_gemm_f16_r64}' | filecheck %s
// RUN: ipu-opt %s -p 'ipu-pipeline{tiles=2}' | filecheck %s --check-prefix=GRID
// RUN: ipu-run %s --tiles 2 --quiet | filecheck %s --check-prefix=RUNS

// The whole pipeline on a repeat: the weight sequence is exchanged, so each iteration first
// copies its element (on its tile, the sequence's base pointer advanced by one element's
// 8192 bytes) into @ws_element, which the broadcast sends from: the broadcast's rows do not
// read the repeat's index (row_loops: only %j), one shared pair of rows and one slot serve
// every iteration. The rows name the repeat. The first run pins the GEMM to a row plan
// (catalog=...), whose broadcast this file is about. With every plan (GRID), the selector
// takes the grid plan: its exchanges send the sequence from @ws_element too, and its home
// views (the tiles that hold a block read it where it lives) read @ws_element, not the
// sequence, so every tile's pointers stay put and the repeat stays one loop. The run lines
// check that the program (grid plan) runs on the device model and matches NumPy.
func.func @layers(%x0: tensor<128x64xf16>, %b: tensor<64xf16>, %ws: tensor<3x64x64xf16>) -> tensor<128x64xf16> {
  %out = graph.repeat 3 carried(%x = %x0 : tensor<128x64xf16>) invariant(%bias = %b : tensor<64xf16>) sequence(%w = %ws : tensor<3x64x64xf16>) {
    %y = graph.gemm %x, %w : (tensor<128x64xf16>, tensor<64x64xf16>) -> tensor<128x64xf16>
    %yb = graph.add %y, %bias : (tensor<128x64xf16>, tensor<64xf16>) -> tensor<128x64xf16>
    %next = graph.add %x, %yb : (tensor<128x64xf16>, tensor<128x64xf16>) -> tensor<128x64xf16>
    graph.yield %next : tensor<128x64xf16>
  } -> tensor<128x64xf16>
  func.return %out : tensor<128x64xf16>
}
// CHECK: %ws_element = tile.buffer @ws_element scratch on #tile.tiles<0 to 1> shard [64, 64] f16 amp_right
// CHECK: tile.loop %r = 0 to 3
// CHECK-NEXT: tile.kernel @convert_shard(%ws_element[(d0) -> (0)], %ws[(d0) -> ((d0 * 8192))]) {{.*}} on #tile.tiles<0 to 1> iv(%r) provenance #tile.provenance<op = "graph.gemm %y in graph.repeat %out", value = "%w", reason = "copy this iteration's element of a sequence that is exchanged into a fixed buffer, so that the exchange's rows are the same in every iteration">
// CHECK: tile.exchange 2048 words from %ws_element[(d0, d1) -> ((d1 * 8192))] {{.*}} iv(%r, %j) {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], row_loops = [1], sender_rows = [0], receiver_rows = [1], row_address
// CHECK: exchange.row @x0_send provenance "graph.gemm %y in graph.repeat %out %w: rhs block to output-row tiles"
// CHECK-NOT: groups
// GRID: tile.loop %r = 0 to 3
// GRID: tile.exchange {{.*}} words from %ws_element[{{.*}} groups
// GRID: tile.kernel @amp_gemm_f16_init({{.*}} home [{{.*}}2: %ws_element[
// GRID-NOT: home [{{.*}}%ws[
// RUNS: check: PASS
