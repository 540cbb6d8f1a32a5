// The blocked attention plan with a key padding mask (graph.attention key_mask) on 16 tiles:
// batch 2 x 2 heads x 192 rows, head_dim 64, FP16. graph-to-mid keeps only blocked plans (the
// retained kernel has no mask) and gives the i32 mask argument a format of its own: whole on
// every tile of the plan (replication 16), written by the host, no conversion. mid-to-tile
// passes it to the `_masked` block kernels as their eighth pointer, with two more scalars:
// heads (slices per mask row) 2 and mask_rows 2. The key and value blocks move as without a
// mask. The memory passes place it like any input.
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16}' | filecheck %s --check-prefix=MID
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16},mid-to-tile' | filecheck %s --check-prefix=TILE
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16},mid-to-tile,place-memory,schedule-exchange' | filecheck %s --check-prefix=PLACED

func.func @masked(%q: tensor<2x2x192x64xf16>, %k: tensor<2x2x192x64xf16>, %v: tensor<2x2x192x64xf16>, %m: tensor<2x192xi32>) -> tensor<2x2x192x64xf16> {
  %o = graph.attention %q, %k, %v key_mask %m : (tensor<2x2x192x64xf16>, tensor<2x2x192x64xf16>, tensor<2x2x192x64xf16>, tensor<2x192xi32>) -> tensor<2x2x192x64xf16>
  func.return %o : tensor<2x2x192x64xf16>
}

// MID-LABEL: func.func @masked(
// MID-SAME:  %m: tensor<2x192xi32, #mid.format<i32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 16, group = 16, standard>>
// MID:       %o = mid.attention %q, %k, %v key_mask %m scale 1.250000e-01 plan #mid.plan<"attention_blocked_r48", #mid.dispatch<attention_blocks, inner = 64, columns = 48, init = @attention_block_f16_init_masked, accum = @attention_block_f16_accum_masked>
// MID-SAME:  #mid.operand<key_mask : input, #mid.format<i32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 16, group = 16, standard>, align = 32, tail = 0>
// MID-SAME:  tensor<2x192xi32, #mid.format<i32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 16, group = 16, standard>>) -> tensor<2x2x192x64xf16
// MID-NOT:   unrealized_conversion_cast

// TILE-LABEL: func.func @masked()
// TILE:      %m = tile.buffer @m input 3 on #tile.tiles<0 to 16> shard [2, 192] i32 row_major standard align 32 tail 0
// TILE:      tile.exchange 2048 words from %k[() -> (0)] on tile (d0) -> ((d0 * 4)) to %o_key_slot[() -> (0)] on #tile.tiles<0 to 4> groups 4
// TILE:      tile.kernel @attention_block_f16_init_masked(%o_acc[() -> (0)], %o_stats[() -> (0)], %o_scores[() -> (0)], %o_probs[() -> (0)], %q[() -> (0)], %o_key_slot[() -> (0)], %o_value_slot[() -> (0)], %m[() -> (0)]) scalars [0, 192, 0, 1040187392, 192, 64, 48, 4, 0, 4, 1, 2, 2] on #tile.tiles<0 to 16>
// TILE:      tile.loop %j = 1 to 3
// TILE:        tile.kernel @attention_block_f16_accum_masked({{.*}}, %m[(d0) -> (0)]) iv_scalars [(d0) -> (d0)] scalars [192, 0, 1040187392, 192, 64, 48, 4, 0, 4, 1, 2, 2] on #tile.tiles<0 to 16>
// TILE:      tile.kernel @attention_finish_f16(

// PLACED: %m = tile.buffer @m input 3 on #tile.tiles<0 to 16> shard [2, 192] i32 row_major standard align 32 tail 0 from {{.*}} address 0x{{[0-9a-f]+}}
// PLACED: tile.kernel @attention_block_f16_init_masked
// PLACED: tile.kernel @attention_block_f16_accum_masked
