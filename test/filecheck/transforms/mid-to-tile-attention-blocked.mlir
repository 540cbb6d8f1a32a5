// The blocked attention plan (`attention_blocks`, passes/operators/attention_blocked_lowering.py)
// on 8 tiles: 2 heads x 192 rows, head_dim 64, FP16, unmasked. Tile 4s + p holds query rows
// 48p .. 48p + 47 of head s and key/value block p (3 blocks of 64 keys: tile 4s + 3 holds
// padding). Key block 0, then `tile.loop %j = 1 to 3`: per block one grouped pair broadcast
// of the key block and one of the value block from tile 4s + j to the other tiles of head s
// (2 groups), then `attention_block_f16_{init,accum}` on every tile (key_block = j, an iv
// scalar), the holder reading its blocks in place (home views); `attention_finish_f16` last.
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=8},mid-to-tile' | filecheck %s --check-prefix=TILE
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4},mid-to-tile' | filecheck %s --check-prefix=CYCLIC
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=8},mid-to-tile,place-memory,schedule-exchange' | filecheck %s

func.func @blocked(%q: tensor<2x192x64xf16>, %k: tensor<2x192x64xf16>, %v: tensor<2x192x64xf16>) -> tensor<2x192x64xf16> {
  %o = graph.attention %q, %k, %v : (tensor<2x192x64xf16>, tensor<2x192x64xf16>, tensor<2x192x64xf16>) -> tensor<2x192x64xf16>
  func.return %o : tensor<2x192x64xf16>
}

// TILE-LABEL: func.func @blocked()
// TILE:      %q = tile.buffer @q input 0 on #tile.tiles<0 to 8> shard [1, 48, 64] f16 amp_left standard align 32 tail 16 from tensor<2x192x64xf16, #mid.format<f16, amp_left, [1 x 2 pad, 16 x 4 pad, 64 x 1 pad], replication = 1, group = 8, standard>>
// TILE-NEXT: %k = tile.buffer @k input 1 on #tile.tiles<0 to 8> shard [1, 64, 64] f16 amp_right_t standard align 32 tail 0 from tensor<2x192x64xf16, #mid.format<f16, amp_right_t, [1 x 2 pad, 64 x 4 pad, 64 x 1 pad], replication = 1, group = 8, standard>>
// TILE-NEXT: %v = tile.buffer @v input 2 on #tile.tiles<0 to 8> shard [1, 64, 64] f16 amp_right standard
// TILE-NEXT: %o = tile.buffer @o output 0 on #tile.tiles<0 to 8> shard [1, 48, 64] f16 row_major standard align 8 tail 0 from tensor<2x192x64xf16, #mid.format<f16, row_major, [1 x 2 pad, 16 x 4 pad, 1 x 1 pad], replication = 1, group = 8, standard>>
// TILE-NEXT: %o_key_slot = tile.buffer @o_key_slot scratch on #tile.tiles<0 to 8> shard [64, 64] f16 amp_right_t standard align 32 tail 0
// TILE-NEXT: %o_value_slot = tile.buffer @o_value_slot scratch on #tile.tiles<0 to 8> shard [64, 64] f16 amp_right standard align 32 tail 0
// TILE-NEXT: %o_acc = tile.buffer @o_acc scratch on #tile.tiles<0 to 8> shard [48, 64] f32 amp_output interleaved align 32 tail 0
// TILE-NEXT: %o_stats = tile.buffer @o_stats scratch on #tile.tiles<0 to 8> shard [48, 2] f32 row_major standard align 32 tail 0
// TILE-NEXT: %o_scores = tile.buffer @o_scores scratch on #tile.tiles<0 to 8> shard [48, 64] f32 amp_output interleaved align 32 tail 0
// TILE-NEXT: %o_probs = tile.buffer @o_probs scratch on #tile.tiles<0 to 8> shard [48, 64] f16 amp_left standard align 32 tail 16
// TILE-NEXT: tile.exchange 2048 words from %k[() -> (0)] on tile (d0) -> ((d0 * 4)) to %o_key_slot[() -> (0)] on #tile.tiles<0 to 4> groups 2 shift (d0) -> ((d0 * 4)) pairs iv() provenance #tile.provenance<op = "graph.attention %o", value = "%k", reason = "key block j to the tiles of its slice">
// TILE-NEXT: tile.exchange 2048 words from %v[() -> (0)] on tile (d0) -> ((d0 * 4)) to %o_value_slot[() -> (0)] on #tile.tiles<0 to 4> groups 2 shift (d0) -> ((d0 * 4)) pairs
// TILE-NEXT: tile.kernel @attention_block_f16_init(%o_acc[() -> (0)], %o_stats[() -> (0)], %o_scores[() -> (0)], %o_probs[() -> (0)], %q[() -> (0)], %o_key_slot[() -> (0)], %o_value_slot[() -> (0)]) scalars [0, 192, 0, 1040187392, 192, 64, 48, 4, 0, 2, 1] on #tile.tiles<0 to 8> home [5: %k[() -> (0)] on #tile.tiles<[0, 4]> shift () -> (0), 6: %v[() -> (0)] on #tile.tiles<[0, 4]> shift () -> (0)] iv() provenance #tile.provenance<op = "graph.attention %o", value = "%o", reason = "first key block: S, softmax state, P . V">
// TILE-NEXT: tile.loop %j = 1 to 3 provenance #tile.provenance<op = "graph.attention %o", value = "%k", reason = "key blocks j, one at a time"> {
// TILE-NEXT:   tile.exchange 2048 words from %k[(d0) -> (0)] on tile (d0, d1) -> (((d1 * 4) + d0)) to %o_key_slot[(d0) -> (0)] on #tile.tiles<0 to 4> groups 2 shift (d0, d1) -> ((d1 * 4)) pairs iv(%j)
// TILE-NEXT:   tile.exchange 2048 words from %v[(d0) -> (0)] on tile (d0, d1) -> (((d1 * 4) + d0)) to %o_value_slot[(d0) -> (0)] on #tile.tiles<0 to 4> groups 2 shift (d0, d1) -> ((d1 * 4)) pairs iv(%j)
// TILE-NEXT:   tile.kernel @attention_block_f16_accum(%o_acc[(d0) -> (0)], %o_stats[(d0) -> (0)], %o_scores[(d0) -> (0)], %o_probs[(d0) -> (0)], %q[(d0) -> (0)], %o_key_slot[(d0) -> (0)], %o_value_slot[(d0) -> (0)]) iv_scalars [(d0) -> (d0)] scalars [192, 0, 1040187392, 192, 64, 48, 4, 0, 2, 1] on #tile.tiles<0 to 8> home [5: %k[(d0) -> (0)] on #tile.tiles<[0, 4]> shift (d0) -> (d0), 6: %v[(d0) -> (0)] on #tile.tiles<[0, 4]> shift (d0) -> (d0)] iv(%j)
// TILE-NEXT: }
// TILE-NEXT: tile.kernel @attention_finish_f16(%o[() -> (0)], %o_acc[() -> (0)], %o_stats[() -> (0)]) scalars [48, 64] on #tile.tiles<0 to 8> iv()
// TILE-NEXT: func.return

// The loop's exchanges get one row set per iteration (sender and receiver rows of both
// groups shared, the holder's address and tile patched; sctl 7: 64-bit items both ways, the
// holder of block 1 being tile 4s + 1).
// CHECK-LABEL: func.func @blocked()
// CHECK:      tile.loop %j = 1 to 3
// CHECK-NEXT:   tile.exchange 2048 words from %k{{.*}} pairs iv(%j) {{.*}} schedule #tile.schedule<rows = [@x2_send, @x2_receive], sender_rows = [0, 0, 0, 0], receiver_rows = [1, 1, 1, 1]
// CHECK:      exchange.row @x2_send provenance "graph.attention %o %k: key block j to the tiles of its slice" {
// CHECK-NEXT:   exchange.send 63, 0x17000, 7
// CHECK:      exchange.row @x2_receive provenance "graph.attention %o %k: key block j to the tiles of its slice" {
// CHECK-NEXT:   exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2001

// Causal, 12 groups of 16 rows per head on 4 tiles: the cyclic variant. Tile 2s + p computes
// the 16-row blocks 2g + p of head s (early and late rows alike) while it holds the contiguous
// rows 96p .. 96p + 95: the query blocks move to the compute tiles first (one grouped
// exchange per (slot, position) piece, a copy where the block is already on its tile), the
// kernels run with cyclic = 1 on the staged query, and the output blocks move back.
func.func @cyclic(%q: tensor<2x192x64xf16>, %k: tensor<2x192x64xf16>, %v: tensor<2x192x64xf16>) -> tensor<2x192x64xf16> {
  %o = graph.attention %q, %k, %v causal : (tensor<2x192x64xf16>, tensor<2x192x64xf16>, tensor<2x192x64xf16>) -> tensor<2x192x64xf16>
  func.return %o : tensor<2x192x64xf16>
}
// CYCLIC-LABEL: func.func @cyclic()
// CYCLIC:       %o_query_stage = tile.buffer @o_query_stage scratch on #tile.tiles<0 to 4> shard [96, 64] f16 amp_left standard align 32 tail 16
// CYCLIC-NEXT:  %o_out_stage = tile.buffer @o_out_stage scratch on #tile.tiles<0 to 4> shard [96, 64] f16 row_major standard align 8 tail 0
// CYCLIC-NEXT:  tile.kernel @copy_words(%o_query_stage[() -> (0)], %q[() -> (0)]) scalars [512] on #tile.tiles<[0, 2]> iv() provenance #tile.provenance<op = "graph.attention %o", value = "%q", reason = "query blocks to the tiles that compute them (one tile: a copy)">
// CYCLIC-NEXT:  tile.exchange 512 words from %q[() -> (2048)] on tile (d0) -> ((d0 * 2)) to %o_query_stage[() -> (0)] on #tile.tiles<0 to 1> groups 2 shift (d0) -> (((d0 * 2) + 1)) iv() provenance #tile.provenance<op = "graph.attention %o", value = "%q", reason = "query blocks to the tiles that compute them">
// CYCLIC:       tile.kernel @attention_block_f16_init({{.*}}, %o_query_stage[() -> (0)], %o_key_slot[() -> (0)], %o_value_slot[() -> (0)]) scalars [0, 192, 1, 1040187392, 192, 64, 96, 2, 1, 2, 1] on #tile.tiles<0 to 4>
// CYCLIC:       tile.kernel @attention_finish_f16(%o_out_stage[() -> (0)], %o_acc[() -> (0)], %o_stats[() -> (0)]) scalars [96, 64] on #tile.tiles<0 to 4>
// CYCLIC-NEXT:  tile.kernel @copy_words(%o[() -> (0)], %o_out_stage[() -> (0)]) scalars [512] on #tile.tiles<[0, 2]> iv() provenance #tile.provenance<op = "graph.attention %o", value = "%o", reason = "output blocks back to the tiles that hold them (one tile: a copy)">
// CYCLIC-NEXT:  tile.exchange 512 words from %o_out_stage[() -> (0)] on tile (d0) -> (((d0 * 2) + 1)) to %o[() -> (2048)] on #tile.tiles<0 to 1> groups 2 shift (d0) -> ((d0 * 2)) iv()
