// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

// A scheduled exchange as schedule-exchange leaves it: two shared rows, per-iteration
// selections (-1 = no traffic in that iteration) and #tile.patch values, one per iteration.
func.func @scheduled() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [128, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 1> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 4 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 1> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles"> schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [-1, 0, 0, 0], receiver_rows = [-1, 1, 1, 1], patches = [#tile.patch<@x0_receive, 0, "xpic", array<i64: 1, 1, 2, 3>>, #tile.patch<@x0_receive, 1, "events_m1", array<i64: 2053, 2053, 2054, 2055>>], row_address = 0x4c000, placed = [src 0x5c000, dst 0x60000]>
  }
  func.return
}

// A two-loop nest (iterations linearized j-major) with sender-side patches, and a
// straight-line exchange (one iteration: one entry per array).
func.func @nest() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "j"> {
    tile.loop %k = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "k"> {
      tile.exchange 2048 words from %b[(d0, d1) -> ((d1 * 8192))] on tile (d0, d1) -> (d0) to %s[(d0, d1) -> (0)] on #tile.tiles<0 to 2> iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0, 0, 0, 0], receiver_rows = [1, 1, 1, 1], patches = [#tile.patch<@x1_send, 0, "address", array<i64: 94208, 96256, 94208, 96256>>, #tile.patch<@x1_send, 0, "sctl", array<i64: 1, 1, 2, 2>>, #tile.patch<@x1_receive, 0, "xpic", array<i64: 0, 0, 1, 1>>], row_address = 0x4c040>
    }
  }
  tile.exchange 2048 words from %b[() -> (0)] on tile () -> (1) to %s[() -> (0)] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "once"> schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0], receiver_rows = [1], patches = [#tile.patch<@x1_send, 0, "sctl", array<i64: 2>>], row_address = 0x4c080>
  func.return
}

// Rows that vary with one loop of two (`row_loops`): the repeat's index %r is not read, so
// the selections and patches have one entry per iteration of %j only.
func.func @row_loops() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %r = 0 to 48 provenance #tile.provenance<op = "graph.repeat %o", value = "%o", reason = "layers"> {
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "j"> {
      tile.exchange 2048 words from %b[(d0, d1) -> ((d1 * 8192))] on tile (d0, d1) -> (d1) to %s[(d0, d1) -> (0)] on #tile.tiles<0 to 2> iv(%r, %j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@x1_send, @x1_receive], row_loops = [1], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x1_send, 0, "address", array<i64: 94208, 96256>>, #tile.patch<@x1_send, 0, "sctl", array<i64: 1, 2>>, #tile.patch<@x1_receive, 0, "xpic", array<i64: 0, 1>>], row_address = 0x4c0c0>
    }
  }
  func.return
}

// A patch on its own, as a discardable attribute (negative and large values survive).
func.func @attr() attributes {p = #tile.patch<@row, 7, "events_m1", array<i64: -1, 0, 524287>>} {
  func.return
}

exchange.row @x0_send provenance "graph.gemm %c %b: rhs block to output-row tiles" {
  exchange.send 63, 0x17000, 2
  exchange.sendoff 1983, 0x0, 2
}
exchange.row @x0_receive provenance "graph.gemm %c %b: rhs block to output-row tiles" {
  exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x1, pic = 0x18000
  exchange.delay 2053
}
exchange.row @x1_send {
  exchange.send 63, 0x17000, 1
  exchange.sendoff 1983, 0x0, 1
}
exchange.row @x1_receive {
  exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x18000
  exchange.delay 2055
}

// CHECK-LABEL: func.func @scheduled()
// CHECK:         tile.loop %j = 0 to 4
// CHECK-NEXT:      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 1> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles"> schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [-1, 0, 0, 0], receiver_rows = [-1, 1, 1, 1], patches = [#tile.patch<@x0_receive, 0, "xpic", array<i64: 1, 1, 2, 3>>, #tile.patch<@x0_receive, 1, "events_m1", array<i64: 2053, 2053, 2054, 2055>>], row_address = 0x4c000, placed = [src 0x5c000, dst 0x60000]
// CHECK-NEXT:    }

// CHECK-LABEL: func.func @nest()
// CHECK:         tile.loop %k = 0 to 2
// CHECK-NEXT:      tile.exchange 2048 words from %b[(d0, d1) -> ((d1 * 8192))] on tile (d0, d1) -> (d0) to %s[(d0, d1) -> (0)] on #tile.tiles<0 to 2> iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0, 0, 0, 0], receiver_rows = [1, 1, 1, 1], patches = [#tile.patch<@x1_send, 0, "address", array<i64: 94208, 96256, 94208, 96256>>, #tile.patch<@x1_send, 0, "sctl", array<i64: 1, 1, 2, 2>>, #tile.patch<@x1_receive, 0, "xpic", array<i64: 0, 0, 1, 1>>], row_address = 0x4c040
// CHECK:         tile.exchange 2048 words from %b[() -> (0)] on tile () -> (1) to %s[() -> (0)] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "once"> schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0], receiver_rows = [1], patches = [#tile.patch<@x1_send, 0, "sctl", array<i64: 2>>], row_address = 0x4c080
// CHECK-NEXT:    func.return

// CHECK-LABEL: func.func @row_loops()
// CHECK:         tile.loop %j = 0 to 2
// CHECK-NEXT:      tile.exchange 2048 words {{.*}} iv(%r, %j) {{.*}} schedule #tile.schedule<rows = [@x1_send, @x1_receive], row_loops = [1], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [{{.*}}], row_address = 0x4c0c0

// CHECK-LABEL: func.func @attr() attributes {p = #tile.patch<@row, 7, "events_m1", array<i64: -1, 0, 524287>>} {
// CHECK:       exchange.row @x0_send provenance "graph.gemm %c %b: rhs block to output-row tiles" {
// CHECK-NEXT:    exchange.send 63, 0x17000, 2
// CHECK-NEXT:    exchange.sendoff 1983, 0x0, 2
// CHECK-NEXT:  }
// CHECK-NEXT:  exchange.row @x0_receive provenance "graph.gemm %c %b: rhs block to output-row tiles" {
// CHECK-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x1, pic = 0x18000
// CHECK-NEXT:    exchange.delay 2053
// CHECK-NEXT:  }

// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "scheduled"
// CHECK-GENERIC:       "tile.exchange"(%b, %s, %j) <{words = 2048 : i64, src_offset = affine_map<(d0) -> (0)>, src_tile = affine_map<(d0) -> (d0)>, dst_offset = affine_map<(d0) -> (0)>, dst_tiles = #tile.tiles<0 to 1>, provenance = #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">, schedule = #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [-1, 0, 0, 0], receiver_rows = [-1, 1, 1, 1], patches = [#tile.patch<@x0_receive, 0, "xpic", array<i64: 1, 1, 2, 3>>, #tile.patch<@x0_receive, 1, "events_m1", array<i64: 2053, 2053, 2054, 2055>>], row_address = 0x4c000, placed = [src 0x5c000, dst 0x60000]>}> : (!tile.buffer, !tile.buffer, index) -> ()
// CHECK-GENERIC:       "tile.exchange"(%b, %s) <{{.*}}schedule = #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0], receiver_rows = [1], patches = [#tile.patch<@x1_send, 0, "sctl", array<i64: 2>>], row_address = 0x4c080>}>
// CHECK-GENERIC:       "tile.exchange"(%b, %s, %r, %j) <{{.*}}schedule = #tile.schedule<rows = [@x1_send, @x1_receive], row_loops = [1], sender_rows = [0, 0], receiver_rows = [1, 1]
// CHECK-GENERIC:       "func.func"() <{sym_name = "attr", function_type = () -> ()}> ({
// CHECK-GENERIC:       }) {p = #tile.patch<@row, 7, "events_m1", array<i64: -1, 0, 524287>>} : () -> ()
