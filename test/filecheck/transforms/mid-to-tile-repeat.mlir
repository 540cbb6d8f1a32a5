// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=2 catalog=amp_gemm_f16_r16},insert-conversions,normalize-repeats,mid-to-tile' | filecheck %s

// The GEMMs are held to one candidate (16-row blocks on both tiles) so that the repeat bodies
// keep an exchange: the cost model alone would run these 64x64 GEMMs on one tile.

// One tile.loop over the count, whatever the count: the carried value lives in the result's
// buffer %out (filled from %x0 once, before the loop) and the last add writes it in place;
// the bias add writes over the GEMM's result %y, which dies there;
// the invariant bias is read from its own buffer; the weight sequence advances by one
// element's shard (8192 bytes) per iteration: `d0 * 8192` in every view of %ws. The
// broadcast sends the element from @ws_element, filled at the start of every iteration, so
// its rows do not change with the iteration.
func.func @layers(%x0: tensor<64x64xf16>, %b: tensor<64xf16>, %ws: tensor<3x64x64xf16>) -> tensor<64x64xf16> {
  %out = graph.repeat 3 carried(%x = %x0 : tensor<64x64xf16>) invariant(%bias = %b : tensor<64xf16>) sequence(%w = %ws : tensor<3x64x64xf16>) {
    %y = graph.gemm %x, %w : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    %yb = graph.add %y, %bias : (tensor<64x64xf16>, tensor<64xf16>) -> tensor<64x64xf16>
    %next = graph.add %x, %yb : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    graph.yield %next : tensor<64x64xf16>
  } -> tensor<64x64xf16>
  func.return %out : tensor<64x64xf16>
}
// CHECK-LABEL: func.func @layers()
// CHECK: %ws = tile.buffer @ws input 2 on #tile.tiles<0 to 1> shard [3, 64, 64] f16 amp_right standard align 32 tail 0 from tensor<3x64x64xf16, #mid.format<f16, amp_right, [1 x 1 pad, 64 x 1 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CHECK: %out = tile.buffer @out output 0
// CHECK: tile.kernel @convert_shard(%out[() -> (0)], %x0[() -> (0)]) {{.*}} iv() provenance #tile.provenance<op = "graph.repeat %out", value = "%x0", reason = "copy the initial carried value into the repeat's carried buffer">
// CHECK-NEXT: tile.loop %r = 0 to 3 provenance #tile.provenance<op = "graph.repeat %out", value = "%out", reason = "3 iterations of one tile-local body"> {
// CHECK-NEXT: tile.kernel @convert_shard(%ws_element[(d0) -> (0)], %ws[(d0) -> ((d0 * 8192))]) {{.*}} on #tile.tiles<0 to 1> iv(%r) provenance #tile.provenance<op = "graph.gemm %y in graph.repeat %out", value = "%w", reason = "copy this iteration's element of a sequence that is exchanged into a fixed buffer, so that the exchange's rows are the same in every iteration">
// CHECK-NEXT: tile.loop %j = 0 to 1 provenance #tile.provenance<op = "graph.gemm %y in graph.repeat %out", value = "%y", reason = "output-column blocks j"> {
// CHECK-NEXT: tile.exchange 2048 words from %ws_element[(d0, d1) -> ((d1 * 8192))] on tile (d0, d1) -> (0) to %y_rhs_slot[(d0, d1) -> (0)] on #tile.tiles<0 to 2> pairs iv(%r, %j) provenance #tile.provenance<op = "graph.gemm %y in graph.repeat %out", value = "%w", reason = "rhs block to output-row tiles">
// CHECK-NEXT: tile.kernel @copy_words(%y_rhs_slot[(d0, d1) -> (0)], %ws[(d0, d1) -> (((d1 * 8192) + (d0 * 8192)))])
// CHECK-NEXT: tile.kernel @amp_gemm_f16_init(%y[(d0, d1) -> ((d1 * 4096))], %out[(d0, d1) -> (0)], %y_rhs_slot[(d0, d1) -> (0)]) {{.*}} iv(%r, %j)
// CHECK-NEXT: }
// CHECK-NEXT: tile.kernel @add(%y[(d0) -> (0)], %y[(d0) -> (0)], %b[(d0) -> (0)]) {{.*}} iv(%r) provenance #tile.provenance<op = "graph.add %yb in graph.repeat %out"
// CHECK-NEXT: tile.kernel @convert_shard(%yb[(d0) -> (0)], %y[(d0) -> (0)])
// CHECK-NEXT: tile.kernel @add(%out[(d0) -> (0)], %out[(d0) -> (0)], %yb[(d0) -> (0)]) {{.*}} iv(%r) provenance #tile.provenance<op = "graph.add %next in graph.repeat %out", value = "%next", reason = "add, one call per output shard">
// CHECK-NEXT: }
// CHECK-NEXT: func.return


// -----

// The yielded %y cannot be written in place (the add after gelu still reads %x): an
// explicit copy ends the body, with its reason. %u is written over %z, which dies there.
func.func @copy(%x0: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %r = graph.repeat 5 carried(%x = %x0 : tensor<64x64xf32>) {
    %y = graph.gelu %x : tensor<64x64xf32> -> tensor<64x64xf32>
    %z = graph.add %x, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %u = graph.add %z, %y : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    graph.yield %y : tensor<64x64xf32>
  } -> tensor<64x64xf32>
  func.return %r : tensor<64x64xf32>
}
// CHECK-LABEL: func.func @copy()
// CHECK: tile.loop %r_1 = 0 to 5
// CHECK-NEXT: tile.kernel @gelu(%y[(d0) -> (0)], %r[(d0) -> (0)])
// CHECK-NEXT: tile.kernel @add(%z[(d0) -> (0)], %r[(d0) -> (0)], %y[(d0) -> (0)])
// CHECK-NEXT: tile.kernel @add(%z[(d0) -> (0)], %z[(d0) -> (0)], %y[(d0) -> (0)])
// CHECK-NEXT: tile.kernel @convert_shard(%r[(d0) -> (0)], %y[(d0) -> (0)]) {{.*}} iv(%r_1) provenance #tile.provenance<op = "graph.yield in graph.repeat %r", value = "%y", reason = "the yielded value's plan writes a fresh buffer: copy it into the carried buffer">
// CHECK-NEXT: }

// -----

// Nested repeats nest loops: the inner repeat takes over the outer carried buffer (no copy
// in either direction; the conversion before the inner yield writes it in place), the inner
// loop's maps take both indices, and the nested weight sequence advances by 8192 bytes per
// inner and 16384 per outer iteration (in the copy of the current element to @ws_element,
// which the broadcast sends from).
func.func @nested(%x0: tensor<64x64xf16>, %ws: tensor<3x2x64x64xf16>) -> tensor<64x64xf16> {
  %out = graph.repeat 3 carried(%x = %x0 : tensor<64x64xf16>) sequence(%wl = %ws : tensor<3x2x64x64xf16>) {
    %in = graph.repeat 2 carried(%a = %x : tensor<64x64xf16>) sequence(%w = %wl : tensor<2x64x64xf16>) {
      %y = graph.gemm %a, %w : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
      graph.yield %y : tensor<64x64xf16>
    } -> tensor<64x64xf16>
    graph.yield %in : tensor<64x64xf16>
  } -> tensor<64x64xf16>
  func.return %out : tensor<64x64xf16>
}
// CHECK-LABEL: func.func @nested()
// CHECK: tile.kernel @convert_shard(%out[() -> (0)], %x0[() -> (0)])
// CHECK-NEXT: tile.loop %r = 0 to 3 provenance #tile.provenance<op = "graph.repeat %out"
// CHECK-NEXT: tile.loop %r_1 = 0 to 2 provenance #tile.provenance<op = "graph.repeat %in in graph.repeat %out", value = "%in", reason = "2 iterations of one tile-local body"> {
// CHECK-NEXT: tile.kernel @convert_shard(%ws_element[(d0, d1) -> (0)], %ws[(d0, d1) -> (((d1 * 8192) + (d0 * 16384)))]) {{.*}} iv(%r, %r_1) provenance #tile.provenance<op = "graph.gemm %y in graph.repeat %in in graph.repeat %out", value = "%w", reason = "copy this iteration's element
// CHECK-NEXT: tile.loop %j = 0 to 1 provenance #tile.provenance<op = "graph.gemm %y in graph.repeat %in in graph.repeat %out"
// CHECK-NEXT: tile.exchange 2048 words from %ws_element[(d0, d1, d2) -> ((d2 * 8192))] {{.*}} iv(%r, %r_1, %j)
// CHECK-NOT: mid.yield
// CHECK: tile.kernel @convert_shard(%out[(d0, d1) -> (0)], %y[(d0, d1) -> (0)]) {{.*}} iv(%r, %r_1) provenance #tile.provenance<op = "graph.yield in graph.repeat %in in graph.repeat %out", value = "%y", reason = "repack each shard on its tile">
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: func.return
