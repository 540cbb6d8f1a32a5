// The grid GEMM plan (`gemm_grid`, passes/operators/gemm_grid_lowering.py) on 16 tiles:
// C[128x256] = A[128x256] x B[256x256] in FP16 on a 4 x 4 grid, tile t = 4r + c holding the
// 32 output rows of grid row r and the 64 columns of grid column c. A's K (4 blocks) is cut
// over the 4 grid columns and B's K over the 4 grid rows, so every tile holds one 64-deep
// block of each. Per K block k: the 4 grid rows broadcast their A panel k concurrently from
// tile 4r + k (one group per grid row, receivers 0..4 shifted by 4r), then the 4 grid columns
// their B block k from tile 4k + c (receivers [0, 4, 8, 12] shifted by c); every tile runs
// one AMP call per output panel, the holders of panel k / block k reading them in place
// (home views), the others from their receive slots; the f32 partials are rounded once.
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f16_grid},mid-to-tile' | filecheck %s --check-prefix=TILE
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f16_grid},mid-to-tile,place-memory,schedule-exchange' | filecheck %s
// With the default catalog the K-split is cheaper here (mid-to-tile-gemm-ksplit.mlir); the
// grid plan is a valid candidate, and the chosen plan runs on the device model:
// RUN: ipu-run %s --tiles 16 --quiet --explain 2>&1 | filecheck %s --check-prefix=RUNS

func.func @gemm(%a: tensor<128x256xf16>, %b: tensor<256x256xf16>) -> tensor<128x256xf16> {
  %c = graph.gemm %a, %b : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  func.return %c : tensor<128x256xf16>
}

// TILE-LABEL: func.func @gemm()
// TILE-NEXT:  %a = tile.buffer @a input 0 on #tile.tiles<0 to 16> shard [32, 64] f16 amp_left standard align 32 tail 16 from tensor<128x256xf16, #mid.format<f16, amp_left, [16 x 4 pad, 64 x 4 pad], replication = 1, group = 16, standard>>
// TILE-NEXT:  %b = tile.buffer @b input 1 on #tile.tiles<0 to 16> shard [64, 64] f16 amp_right standard align 32 tail 0 from tensor<256x256xf16, #mid.format<f16, amp_right, [64 x 4 pad, 64 x 4 pad], replication = 1, group = 16, standard>>
// TILE-NEXT:  %c = tile.buffer @c output 0 on #tile.tiles<0 to 16> shard [32, 64] f16 amp_output interleaved align 32 tail 0 from tensor<128x256xf16, #mid.format<f16, amp_output, [16 x 4 pad, 64 x 4 pad], replication = 1, group = 16, interleaved>>
// TILE-NEXT:  %c_lhs_slot = tile.buffer @c_lhs_slot scratch on #tile.tiles<0 to 16> shard [32, 64] f16 amp_left standard align 32 tail 16
// TILE-NEXT:  %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 16> shard [64, 64] f16 amp_right standard align 32 tail 0
// TILE-NEXT:  %c_partials = tile.buffer @c_partials scratch on #tile.tiles<0 to 16> shard [32, 64] f32 amp_output interleaved align 32 tail 0
// TILE-NEXT:  tile.exchange 1024 words from %a[() -> (0)] on tile (d0) -> ((d0 * 4)) to %c_lhs_slot[() -> (0)] on #tile.tiles<0 to 4> groups 4 shift (d0) -> ((d0 * 4)) pairs iv() provenance #tile.provenance<op = "graph.gemm %c", value = "%a", reason = "lhs panel k along every grid row">
// TILE-NEXT:  tile.exchange 2048 words from %b[() -> (0)] on tile (d0) -> (d0) to %c_rhs_slot[() -> (0)] on #tile.tiles<[0, 4, 8, 12]> groups 4 shift (d0) -> (d0) iv() provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs blocks k down every grid column">

// CHECK-LABEL: func.func @gemm()
// CHECK:        %c_lhs_slot = tile.buffer @c_lhs_slot scratch {{.*}} address 0x{{[0-9a-f]+}}
// CHECK:        %c_rhs_slot = tile.buffer @c_rhs_slot scratch {{.*}} address 0x{{[0-9a-f]+}}
// CHECK:        %c_partials = tile.buffer @c_partials scratch {{.*}} address 0x{{[0-9a-f]+}}
// k = 0: both grouped phases, one row pair each, shared by the 4 groups (patched per group).
// CHECK-NEXT:   tile.exchange 1024 words from %a[() -> (0)] on tile (d0) -> ((d0 * 4)) to %c_lhs_slot[() -> (0)] on #tile.tiles<0 to 4> groups 4 shift (d0) -> ((d0 * 4)) pairs iv() {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [0, 0, 0, 0], receiver_rows = [1, 1, 1, 1], patches = [#tile.patch<@x0_receive, 0, "xpic", array<i64: 8192, 8196, 8200, 8204>>], row_address = 0x4c000
// CHECK-NEXT:   tile.exchange 2048 words from %b[() -> (0)] on tile (d0) -> (d0) to %c_rhs_slot[() -> (0)] on #tile.tiles<[0, 4, 8, 12]> groups 4 shift (d0) -> (d0) iv() {{.*}} schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0, 0, 0, 0], receiver_rows = [1, 1, 1, 1], patches = [#tile.patch<@x1_receive, 0, "xpic", array<i64: 0, 1, 2, 3>>]
// The panel loop of k = 0: column 0 reads A panel 0 at home, row 0 B block 0.
// CHECK-NEXT:   tile.loop %p = 0 to 1 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output panels p of the grid block"> {
// CHECK-NEXT:     tile.kernel @amp_gemm_f16p32_init(%c_partials[(d0) -> ((d0 * 8192))], %c_lhs_slot[(d0) -> (0)], %c_rhs_slot[(d0) -> ((d0 * 8192))]) scalars [32] on #tile.tiles<0 to 16> home [1: %a[(d0) -> (0)] on #tile.tiles<[0, 4, 8, 12]> shift (d0) -> (0), 2: %b[(d0) -> ((d0 * 8192))] on #tile.tiles<0 to 4> shift (d0) -> (0)] iv(%p)
// CHECK-NEXT:   }
// k = 1..3: panel k of A comes from grid column k, block k of B from grid row k.
// CHECK-NEXT:   tile.loop %k = 1 to 4 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating inner blocks k"> {
// CHECK-NEXT:     tile.exchange 1024 words from %a[(d0) -> (((d0 mod 1) * 4096))] on tile (d0, d1) -> (((d1 * 4) + (d0 floordiv 1))) to %c_lhs_slot[(d0) -> (0)] on #tile.tiles<0 to 4> groups 4 shift (d0, d1) -> ((d1 * 4)) pairs iv(%k) {{.*}} schedule #tile.schedule<rows = [@x2_send, @x2_receive]
// CHECK-NEXT:     tile.exchange 2048 words from %b[(d0) -> (((d0 mod 1) * 8192))] on tile (d0, d1) -> ((((d0 floordiv 1) * 4) + d1)) to %c_rhs_slot[(d0) -> (0)] on #tile.tiles<[0, 4, 8, 12]> groups 4 shift (d0, d1) -> (d1) iv(%k) {{.*}} schedule #tile.schedule<rows = [@x3_send, @x3_receive]
// CHECK-NEXT:     tile.loop %p_1 = 0 to 1 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output panels p of the grid block"> {
// CHECK-NEXT:       tile.kernel @amp_gemm_f16p32_accum(%c_partials[(d0, d1) -> ((d1 * 8192))], %c_lhs_slot[(d0, d1) -> (0)], %c_rhs_slot[(d0, d1) -> ((d1 * 8192))]) scalars [32] on #tile.tiles<0 to 16> home [1: %a[(d0, d1) -> (((d0 mod 1) * 4096))] on #tile.tiles<[0, 4, 8, 12]> shift (d0, d1) -> ((d0 floordiv 1)), 2: %b[(d0, d1) -> ((((d0 mod 1) * 8192) + (d1 * 8192)))] on #tile.tiles<0 to 4> shift (d0, d1) -> (((d0 floordiv 1) * 4))] iv(%k, %p_1)
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   tile.kernel @convert_shard(%c[() -> (0)], %c_partials[() -> (0)]) scalars [2, 512, 64, 32, 64, 16, 1, 1, 1, 1, 16, 1, 3, 0, 2, 512, 64, 32, 64, 16, 1, 1, 1, 1, 16, 0, 3, 0] on #tile.tiles<0 to 16> iv() provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "round the f32 partials to the output once">
// CHECK-NEXT:   func.return
// A's panels go to tile pairs (a grid row of 4 holds two whole pairs) as 64-bit items (sctl
// bit 2: 512 items for 1024 words), taken by the pair mux (XPIC selector 1 = 0x2000 | tile);
// B's blocks go down the columns, whose tiles are not pairs: 32-bit words, the own mux.
// CHECK:      exchange.row @x0_send provenance "graph.gemm %c %a: lhs panel k along every grid row"
// CHECK-NEXT:   exchange.send 63, 0x{{[0-9a-f]+}}, 5
// CHECK-NEXT:   exchange.sendoff 447, 0x0, 5
// CHECK:      exchange.row @x0_receive
// CHECK-NEXT:   exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x{{[0-9a-f]+}}
// CHECK:      exchange.row @x1_send provenance "graph.gemm %c %b: rhs blocks k down every grid column"
// CHECK-NEXT:   exchange.send 63, 0x{{[0-9a-f]+}}, 1
// CHECK:      exchange.row @x1_receive
// CHECK-NEXT:   exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x{{[0-9a-f]+}}

// RUNS:   amp_gemm_f16_grid {{.*}} cycles (exchange {{.*}}, copies 0,
// RUNS: * amp_gemm_f16_ksplit {{.*}} cycles (exchange {{.*}}, copies 0,
// RUNS: check: PASS
