// The K-split GEMM plan (`gemm_ksplit`, passes/operators/gemm_ksplit_lowering.py) on 16
// tiles: C[128x256] = A[128x256] x B[256x256] in FP16 on two layers of a 2 x 4 grid, tile
// t = 8l + 4r + c. Layer l sums K blocks 2l, 2l + 1 (of 4) into FP32 partials of the 64 x 64
// block (r, c), whose rows are the output's 32-row chunks r and 2 + r. A and the output are
// cut 4 x 4: tile t holds A's row chunk 2l + r for K block c and keeps the output's row chunk
// 2l + r. B is cut 2 x 4 in each layer (replication = 2).
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f16_ksplit},mid-to-tile' | filecheck %s --check-prefix=TILE
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f16_ksplit},mid-to-tile,place-memory,schedule-exchange' | filecheck %s --check-prefix=ROWS
// RUN: ipu-run %s --tiles 16 --quiet --explain 2>&1 | filecheck %s --check-prefix=RUNS

func.func @gemm(%a: tensor<128x256xf16>, %b: tensor<256x256xf16>) -> tensor<128x256xf16> {
  %c = graph.gemm %a, %b : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  func.return %c : tensor<128x256xf16>
}

// TILE-LABEL: func.func @gemm()
// TILE-NEXT:    %a = tile.buffer @a input 0 on #tile.tiles<0 to 16> shard [32, 64] {{.*}} #mid.format<f16, amp_left, [16 x 4 pad, 64 x 4 pad], replication = 1, group = 16, standard>>
// TILE-NEXT:    %b = tile.buffer @b input 1 on #tile.tiles<0 to 16> shard [128, 64] {{.*}} #mid.format<f16, amp_right, [64 x 2 pad, 64 x 4 pad], replication = 2, group = 16, standard>>
// TILE-NEXT:    %c = tile.buffer @c output 0 on #tile.tiles<0 to 16> shard [32, 64] {{.*}} #mid.format<f16, amp_output, [16 x 4 pad, 64 x 4 pad], replication = 1, group = 16, interleaved>>
// The A slot holds both halves of a block's panel; the partials both halves of the block.
// TILE-NEXT:    %c_lhs_slot = tile.buffer @c_lhs_slot scratch on #tile.tiles<0 to 16> shard [64, 64] f16 amp_left
// TILE-NEXT:    %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 16> shard [64, 64] f16 amp_right
// TILE-NEXT:    %c_partials = tile.buffer @c_partials scratch on #tile.tiles<0 to 16> shard [64, 64] f32 amp_output interleaved
// TILE-NEXT:    %c_received = tile.buffer @c_received scratch on #tile.tiles<0 to 16> shard [32, 64] f32 amp_output interleaved
// Step 0. Group g = 2l + r: the own layer's half from tile 4g + (2l + i) / 1 into slot half l;
// the other layer's half from tile 4(g + 2 - 4l) + ... into slot half 1 - l; B's blocks
// (groups g = 4l + c) from grid row (2l + i) / 2 of the layer, down its column.
// TILE-NEXT:    tile.exchange 1024 words from %a[(d0) -> ({{.*}})] on tile (d0) -> (((d0 * 4) + {{.*}})) to %c_lhs_slot[(d0) -> (((d0 floordiv 2) * 4096))] on #tile.tiles<0 to 4> groups 4 shift (d0) -> ((d0 * 4)) pairs iv()
// TILE-NEXT:    tile.exchange 1024 words from %a[(d0) -> ({{.*}})] on tile (d0) -> (((((d0 * 4) + 8) + ((d0 floordiv 2) * -16)) + {{.*}})) to %c_lhs_slot[(d0) -> ((((d0 floordiv 2) * -4096) + 4096))] on #tile.tiles<0 to 4> groups 4 shift (d0) -> ((d0 * 4)) pairs iv()
// TILE-NEXT:    tile.exchange 2048 words from %b[(d0) -> ({{.*}})] on tile (d0) -> ({{.*}}) to %c_rhs_slot[(d0) -> (0)] on #tile.tiles<[0, 4]> groups 8 shift (d0) -> ((((d0 floordiv 4) * 8) + (d0 mod 4))) iv()
// One AMP call per half: half 0's A lives on layer 0's holders, half 1's on layer 1's; B on
// each layer's holders (one home view per layer).
// TILE-NEXT:    tile.loop %p = 0 to 1
// TILE-NEXT:      tile.kernel @amp_gemm_f16p32_init(%c_partials[(d0) -> ((d0 * 8192))], %c_lhs_slot[(d0) -> (0)], %c_rhs_slot[(d0) -> ((d0 * 8192))]) scalars [32] on #tile.tiles<0 to 16> home [1: %a[(d0) -> (0)] on #tile.tiles<[0, 4]> shift (d0) -> (0), 2: %b[(d0) -> ((d0 * 8192))] on #tile.tiles<0 to 4> shift (d0) -> (0), 2: %b[(d0) -> ((d0 * 8192))] on #tile.tiles<8 to 12> shift (d0) -> (4)]
// TILE-NEXT:      tile.kernel @amp_gemm_f16p32_init(%c_partials[(d0) -> (((d0 * 8192) + 8192))], %c_lhs_slot[(d0) -> (4096)], %c_rhs_slot[(d0) -> ((d0 * 8192))]) scalars [32] on #tile.tiles<0 to 16> home [1: %a[(d0) -> (0)] on #tile.tiles<[8, 12]> shift (d0) -> (2),
// TILE-NEXT:    }
// TILE-NEXT:    tile.loop %i = 1 to 2
// TILE-COUNT-3:   tile.exchange
// TILE:           tile.kernel @amp_gemm_f16p32_accum
// TILE-NEXT:      tile.kernel @amp_gemm_f16p32_accum
// The reduction: tile t sends the half it does not keep to t + 8 (layer 0) or t - 8, and adds
// the half it receives to its own (layer 1's tiles read half 1 of their partials: home).
// TILE:         tile.exchange 2048 words from %c_partials[(d0) -> ((((d0 floordiv 8) * -8192) + 8192))] on tile (d0) -> (d0) to %c_received[() -> (0)] on #tile.tiles<0 to 1> groups 16 shift (d0) -> (((d0 + 8) + ((d0 floordiv 8) * -16))) iv()
// TILE-NEXT:    tile.kernel @add(%c[() -> (0)], %c_partials[() -> (0)], %c_received[() -> (0)]) {{.*}} on #tile.tiles<0 to 16> home [1: %c_partials[() -> (8192)] on #tile.tiles<8 to 16> shift () -> (0)]
// TILE-NEXT:    func.return

// A's halves go to tile pairs (64-bit items, the pair mux); across the layers every sender
// also receives (full-duplex rows), and so does every tile in the reduction.
// ROWS:       exchange.row @x0_send
// ROWS-NEXT:    exchange.send 63, 0x{{[0-9a-f]+}}, 5
// ROWS:       exchange.row @x1_duplex
// ROWS-NEXT:    exchange.sendpicp 63, 0x{{[0-9a-f]+}}, 6, 0, xpic = 0x2002, pic = 0x{{[0-9a-f]+}}
// ROWS:       exchange.row @x2_send
// ROWS-NEXT:    exchange.send 63, 0x{{[0-9a-f]+}}, 1
// ROWS:       exchange.row @x6_duplex provenance "graph.gemm %c %c: reduction round: the other layer's half of the f32 partials"
// ROWS-NEXT:    exchange.sendpicp 63, 0x{{[0-9a-f]+}}, 1, 0, xpic = 0x8, pic = 0x{{[0-9a-f]+}}

// RUNS:   amp_gemm_f16_grid {{.*}} cycles
// RUNS: * amp_gemm_f16_ksplit {{.*}} cycles (exchange {{.*}}, copies 0, amp {{.*}}, reduction {{.*}}); {{.*}} bytes per K-split tile
// RUNS: check: PASS
