// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=1 catalog=amp_gemm_f16_r16_p16,amp_gemm_f32_r16},mid-to-tile,place-memory,schedule-exchange' | filecheck %s --check-prefix=ONE
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=2 catalog=amp_gemm_f16_r16_p16,amp_gemm_f32_r16},mid-to-tile,place-memory,schedule-exchange' | filecheck %s --check-prefix=TWO
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16_p16,amp_gemm_f32_r16},mid-to-tile,place-memory,schedule-exchange' | filecheck %s --check-prefix=FOUR

// The GEMMs are pinned to the 16-row FP16-partials candidates (catalog=...): this file is
// about the exchange rows, which then see the same lowering whatever the cost model prefers.

// How the expected values follow from the placed buffers and device/target.py (IPU21):
// - latency L(s, r) = latency_base 6 + |s mod 16 - r mod 16| + 2 * |s div 16 - r div 16|
//   (column_tiles 16, latency_per_column 2); below 16 tiles L(s, r) = 6 + |s - r|.
// - the row plan's block broadcast is a pair broadcast (`pairs`, docs/internals.md "Pair
//   broadcast"): ITEMS = WORDS / 2 64-bit items, one per event.
// - sender row: `send 63, SRC, SCTL` (first 64 items at the absolute source word address
//   SRC = source byte address / 4), then `sendoff ITEMS-65, 0x0, SCTL` continuing the
//   stream; SCTL 5 = receivers above the sender, 6 = below, 7 = both (bit 2: 64-bit items).
// - receiver row: a directionless `sendpicp` at event 0 with xpic = 0x2000 (the pair mux,
//   XPIC selector 1) | the sender (the home tile of the block) and pic = slot byte address /
//   4, then `delay ITEMS + max_r L(s, r) - 2` (the phase lasts ITEMS + max L events; the
//   sendpicp takes one, delay encodes events - 1).
// - slots: 16 bytes per iteration (the 12-byte receiver row, 8-byte aligned), exchange x0
//   first from the code region base 0x4c000, then x1.
// - a -1 in sender_rows/receiver_rows: the home tile is the only output-row tile, so the
//   iteration has no receiver and no traffic; patch values there repeat the shared row's.

// FP16 C[32x128] = A[32x128] x B[128x128]: two 64x64 blocks along K (k) and along N (j).
func.func @f16(%a: tensor<32x128xf16>, %b: tensor<128x128xf16>) -> tensor<32x128xf16> {
  %c = graph.gemm %a, %b : (tensor<32x128xf16>, tensor<128x128xf16>) -> tensor<32x128xf16>
  func.return %c : tensor<32x128xf16>
}

// One tile: every block is local (copy_words), no exchange, no rows.
// ONE-LABEL: func.func @f16()
// ONE-NOT:     tile.exchange
// ONE:         func.return
// ONE-NOT:   exchange.row

// Two tiles: 2 output-row tiles; block (k, j) lives on tile j (b's shard holds both k blocks
// of column j, 8192 bytes each). x0 (k = 0, loop j): tile j sends to tile 1 - j, so only
// the direction (sctl 5 then 6) and the receiver's xpic (0x2000 then 0x2001) vary. Source word
// 0x5c000 / 4 = 0x17000; x1 (k = 1) reads 8192 bytes further: 0x5e000 / 4 = 0x17800. The
// The op records the buffer addresses its rows were built for (placed src/dst).
// slot at 0x60000: pic 0x18000. delay 1024 + L(0, 1) 7 - 2 = 1029.
// TWO-LABEL: func.func @f16()
// TWO:         %b = tile.buffer @b input 1 {{.*}} address 0x5c000
// TWO:         %c_rhs_slot = tile.buffer @c_rhs_slot scratch {{.*}} address 0x60000
// TWO:         tile.loop %j = 0 to 2
// TWO-NEXT:      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %c_rhs_slot[(d0) -> (0)] on #tile.tiles<0 to 2> pairs iv(%j) provenance #tile.provenance<{{.*}}> schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x0_send, 0, "sctl", array<i64: 5, 6>>, #tile.patch<@x0_send, 1, "sctl", array<i64: 5, 6>>, #tile.patch<@x0_receive, 0, "xpic", array<i64: 8192, 8193>>], row_address = 0x4c000, placed = [src 0x5c000, dst 0x60000]
// TWO:           tile.loop %k = 1 to 2
// TWO-NEXT:        tile.exchange 2048 words from %b[(d0, d1) -> ((d1 * 8192))] on tile (d0, d1) -> (d0) to %c_rhs_slot[(d0, d1) -> (0)] on #tile.tiles<0 to 2> pairs iv(%j, %k) provenance #tile.provenance<{{.*}}> schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x1_send, 0, "sctl", array<i64: 5, 6>>, #tile.patch<@x1_send, 1, "sctl", array<i64: 5, 6>>, #tile.patch<@x1_receive, 0, "xpic", array<i64: 8192, 8193>>], row_address = 0x4c020
// TWO:         func.return
// TWO:       exchange.row @x0_send provenance "graph.gemm %c %b: rhs block to output-row tiles" {
// TWO-NEXT:    exchange.send 63, 0x17000, 5
// TWO-NEXT:    exchange.sendoff 959, 0x0, 5
// TWO-NEXT:  }
// TWO-NEXT:  exchange.row @x0_receive provenance {{.*}} {
// TWO-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x18000
// TWO-NEXT:    exchange.delay 1029
// TWO-NEXT:  }
// TWO-NEXT:  exchange.row @x1_send provenance {{.*}} {
// TWO-NEXT:    exchange.send 63, 0x17800, 5
// TWO-NEXT:    exchange.sendoff 959, 0x0, 5
// TWO-NEXT:  }
// TWO-NEXT:  exchange.row @x1_receive provenance {{.*}} {
// TWO-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x18000
// TWO-NEXT:    exchange.delay 1029
// TWO-NEXT:  }
// TWO-NOT:   exchange.row

// Four tiles: still 2 output-row tiles, but B is split 2 x 2: block (k, j) lives on tile
// 2k + j (b's shard is one block, 0x5c000 -> word 0x17000 for every iteration); the slot at
// 0x5e000: pic 0x17800. x0 (k = 0) as on two tiles. x1 (k = 1): tiles 2 and 3 send to
// tiles 0 and 1, both below (sctl 6, not patched); xpic = 0x2000 | home tile 2, 3; delay =
// 1024 + max(L(2,0) 8, L(2,1) 7) - 2 = 1030 and 1024 + L(3,0) 9 - 2 = 1031.
// FOUR-LABEL: func.func @f16()
// FOUR:         %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] {{.*}} address 0x5c000
// FOUR:         %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 2> {{.*}} address 0x5e000
// FOUR:         tile.exchange 2048 words {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x0_send, 0, "sctl", array<i64: 5, 6>>, #tile.patch<@x0_send, 1, "sctl", array<i64: 5, 6>>, #tile.patch<@x0_receive, 0, "xpic", array<i64: 8192, 8193>>], row_address = 0x4c000
// FOUR:         tile.exchange 2048 words from %b[(d0, d1) -> (0)] on tile (d0, d1) -> (((d1 * 2) + d0)) to %c_rhs_slot[(d0, d1) -> (0)] on #tile.tiles<0 to 2> pairs iv(%j, %k) provenance #tile.provenance<{{.*}}> schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x1_receive, 0, "xpic", array<i64: 8194, 8195>>, #tile.patch<@x1_receive, 1, "events_m1", array<i64: 1030, 1031>>], row_address = 0x4c020
// FOUR:       exchange.row @x0_send
// FOUR-NEXT:    exchange.send 63, 0x17000, 5
// FOUR-NEXT:    exchange.sendoff 959, 0x0, 5
// FOUR:       exchange.row @x0_receive
// FOUR-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x17800
// FOUR-NEXT:    exchange.delay 1029
// FOUR:       exchange.row @x1_send
// FOUR-NEXT:    exchange.send 63, 0x17000, 6
// FOUR-NEXT:    exchange.sendoff 959, 0x0, 6
// FOUR:       exchange.row @x1_receive
// FOUR-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2002, pic = 0x17800
// FOUR-NEXT:    exchange.delay 1030
// FOUR-NEXT:  }
// FOUR-NOT:   exchange.row

// -----

// FP32 C[32x128] = A[32x128] x B[128x128]: 4096-word blocks, 2048 items (sendoff 2048 - 65 = 1983).
func.func @f32(%a: tensor<32x128xf32>, %b: tensor<128x128xf32>) -> tensor<32x128xf32> {
  %c = graph.gemm %a, %b : (tensor<32x128xf32>, tensor<128x128xf32>) -> tensor<32x128xf32>
  func.return %c : tensor<32x128xf32>
}

// ONE-LABEL: func.func @f32()
// ONE-NOT:     tile.exchange
// ONE:         func.return
// ONE-NOT:   exchange.row

// Two tiles: b's shard is 2 blocks of 16384 bytes at 0x5c000 (words 0x17000, x1: 0x18000),
// the slot at 0x64000 (pic 0x19000); delay 2048 + 7 - 2 = 2053.
// TWO-LABEL: func.func @f32()
// TWO:         %b = tile.buffer @b input 1 {{.*}} address 0x5c000
// TWO:         %c_rhs_slot = tile.buffer @c_rhs_slot scratch {{.*}} address 0x64000
// TWO:         tile.exchange 4096 words {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x0_send, 0, "sctl", array<i64: 5, 6>>, #tile.patch<@x0_send, 1, "sctl", array<i64: 5, 6>>, #tile.patch<@x0_receive, 0, "xpic", array<i64: 8192, 8193>>], row_address = 0x4c000
// TWO:         tile.exchange 4096 words from %b[(d0, d1) -> ((d1 * 16384))] {{.*}} row_address = 0x4c020
// TWO:       exchange.row @x0_send
// TWO-NEXT:    exchange.send 63, 0x17000, 5
// TWO-NEXT:    exchange.sendoff 1983, 0x0, 5
// TWO:       exchange.row @x0_receive
// TWO-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x19000
// TWO-NEXT:    exchange.delay 2053
// TWO:       exchange.row @x1_send
// TWO-NEXT:    exchange.send 63, 0x18000, 5
// TWO-NEXT:    exchange.sendoff 1983, 0x0, 5
// TWO:       exchange.row @x1_receive
// TWO-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x19000
// TWO-NEXT:    exchange.delay 2053

// Four tiles: one 16384-byte block per tile, slot at 0x60000 (pic 0x18000); x1 delays
// 2048 + 8 - 2 = 2054 and 2048 + 9 - 2 = 2055.
// FOUR-LABEL: func.func @f32()
// FOUR:         %c_rhs_slot = tile.buffer @c_rhs_slot scratch {{.*}} address 0x60000
// FOUR:         tile.exchange 4096 words {{.*}} row_address = 0x4c000
// FOUR:         tile.exchange 4096 words {{.*}} schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x1_receive, 0, "xpic", array<i64: 8194, 8195>>, #tile.patch<@x1_receive, 1, "events_m1", array<i64: 2054, 2055>>], row_address = 0x4c020
// FOUR:       exchange.row @x0_receive
// FOUR-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x18000
// FOUR-NEXT:    exchange.delay 2053
// FOUR:       exchange.row @x1_send
// FOUR-NEXT:    exchange.send 63, 0x17000, 6
// FOUR-NEXT:    exchange.sendoff 1983, 0x0, 6
// FOUR:       exchange.row @x1_receive
// FOUR-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2002, pic = 0x18000
// FOUR-NEXT:    exchange.delay 2054

// -----

// M = 16: a single output-row tile (tile 0). Iterations whose block lives on tile 0 have no
// receiver: -1 in sender_rows/receiver_rows.
func.func @one_row_tile(%a: tensor<16x128xf16>, %b: tensor<128x256xf16>) -> tensor<16x256xf16> {
  %c = graph.gemm %a, %b : (tensor<16x128xf16>, tensor<128x256xf16>) -> tensor<16x256xf16>
  func.return %c : tensor<16x256xf16>
}

// ONE-LABEL: func.func @one_row_tile()
// ONE-NOT:     tile.exchange
// ONE:         func.return
// ONE-NOT:   exchange.row

// Two tiles: columns j = 0, 1 live on tile 0 (no traffic), j = 2, 3 on tile 1. The sender
// is always tile 1, so only the source address varies: word (0x5c000 + (j mod 2) * 8192) / 4
// = 94208 (0x17000) or 96256; x1 adds 16384 bytes: 98304, 100352. Slot 0x64000: pic 0x19000.
// TWO-LABEL: func.func @one_row_tile()
// TWO:         %b = tile.buffer @b input 1 {{.*}} address 0x5c000
// TWO:         %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 1> {{.*}} address 0x64000
// TWO:         tile.exchange 2048 words {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [-1, -1, 0, 0], receiver_rows = [-1, -1, 1, 1], patches = [#tile.patch<@x0_send, 0, "address", array<i64: 94208, 94208, 94208, 96256>>], row_address = 0x4c000
// TWO:         tile.exchange 2048 words {{.*}} schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [-1, -1, 0, 0], receiver_rows = [-1, -1, 1, 1], patches = [#tile.patch<@x1_send, 0, "address", array<i64: 98304, 98304, 98304, 100352>>], row_address = 0x4c040
// TWO:       exchange.row @x0_send
// TWO-NEXT:    exchange.send 63, 0x17000, 6
// TWO:       exchange.row @x0_receive
// TWO-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2001, pic = 0x19000
// TWO-NEXT:    exchange.delay 1029
// TWO:       exchange.row @x1_send
// TWO-NEXT:    exchange.send 63, 0x18000, 6

// Four tiles: column j lives on tile j; j = 0 has no traffic; tiles 1..3 send down (sctl 6)
// to tile 0: xpic = 0x2000 | j, delay = 1024 + (6 + j) - 2 = 1029, 1030, 1031.
// FOUR-LABEL: func.func @one_row_tile()
// FOUR:         %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 1> {{.*}} address 0x60000
// FOUR:         tile.exchange 2048 words {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [-1, 0, 0, 0], receiver_rows = [-1, 1, 1, 1], patches = [#tile.patch<@x0_receive, 0, "xpic", array<i64: 8193, 8193, 8194, 8195>>, #tile.patch<@x0_receive, 1, "events_m1", array<i64: 1029, 1029, 1030, 1031>>], row_address = 0x4c000
// FOUR:         tile.exchange 2048 words {{.*}} schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [-1, 0, 0, 0], receiver_rows = [-1, 1, 1, 1], patches = [#tile.patch<@x1_receive, 0, "xpic", array<i64: 8193, 8193, 8194, 8195>>, #tile.patch<@x1_receive, 1, "events_m1", array<i64: 1029, 1029, 1030, 1031>>], row_address = 0x4c040
// FOUR:       exchange.row @x0_send
// FOUR-NEXT:    exchange.send 63, 0x17000, 6
// FOUR:       exchange.row @x0_receive
// FOUR-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2001, pic = 0x18000
// FOUR:       exchange.row @x1_send
// FOUR-NEXT:    exchange.send 63, 0x17800, 6

// -----

// Broadcast batch, FP32: [2, 1, 48, 64] x [3, 64, 64]. b is not distributed (it lives on
// tile 0); the loops batch0 (2) x batch1 (3) x j (1) give 6 iterations, and only the source
// block varies: word (0x5c000 + batch1 * 16384) / 4 = 94208, 98304, 102400.
func.func @batch(%a: tensor<2x1x48x64xf32>, %b: tensor<3x64x64xf32>) -> tensor<2x3x48x64xf32> {
  %c = graph.gemm %a, %b : (tensor<2x1x48x64xf32>, tensor<3x64x64xf32>) -> tensor<2x3x48x64xf32>
  func.return %c : tensor<2x3x48x64xf32>
}

// ONE-LABEL: func.func @batch()
// ONE-NOT:     tile.exchange
// ONE:         func.return
// ONE-NOT:   exchange.row

// Two tiles: 2 output-row tiles (32 rows each), receiver tile 1: delay 2048 + 7 - 2 = 2053.
// TWO-LABEL: func.func @batch()
// TWO:         %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 2> {{.*}} address 0x68000
// The broadcast batch axis 0 is not read by the rhs exchange's maps: its rows vary with
// %batch1 and %j only (row_loops), one row set per rhs block, not per output batch.
// TWO:         tile.exchange 4096 words from %b[(d0, d1, d2) -> (((d1 * 16384) + (d2 * 16384)))] on tile (d0, d1, d2) -> (0) {{.*}} iv(%batch0, %batch1, %j) {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], row_loops = [1, 2], sender_rows = [0, 0, 0], receiver_rows = [1, 1, 1], patches = [#tile.patch<@x0_send, 0, "address", array<i64: 94208, 98304, 102400>>], row_address = 0x4c000
// TWO:       exchange.row @x0_send
// TWO-NEXT:    exchange.send 63, 0x17000, 5
// TWO-NEXT:    exchange.sendoff 1983, 0x0, 5
// TWO:       exchange.row @x0_receive
// TWO-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x1a000
// TWO-NEXT:    exchange.delay 2053
// TWO-NOT:   exchange.row

// Four tiles: 3 output-row tiles, tile 0 sends up to tiles 1 and 2: delay is set by the
// farther one, 2048 + L(0, 2) 8 - 2 = 2054.
// FOUR-LABEL: func.func @batch()
// FOUR:         tile.exchange 4096 words {{.*}} on #tile.tiles<0 to 3> {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], row_loops = [1, 2], sender_rows = [0, 0, 0], receiver_rows = [1, 1, 1], patches = [#tile.patch<@x0_send, 0, "address", array<i64: 94208, 98304, 102400>>], row_address = 0x4c000
// FOUR:       exchange.row @x0_receive
// FOUR-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x1a000
// FOUR-NEXT:    exchange.delay 2054
// FOUR-NOT:   exchange.row
