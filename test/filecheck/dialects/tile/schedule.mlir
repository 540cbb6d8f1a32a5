// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP
// RUN: ipu-opt %s --print-op-generic | ipu-opt | ipu-opt --print-op-generic | filecheck %s --check-prefix=CHECK-GENERIC

// #tile.schedule<...>, the output of schedule-exchange in one attribute, round-trips on its
// own (as a test.op attribute) and on a tile.exchange: every optional field present (the
// first), and none (the second: rows vary with every loop, no patch, no placed addresses).

"test.op"() {all = #tile.schedule<rows = [@s, @r], row_loops = [1], sender_rows = [0, -1], receiver_rows = [1, -1], patches = [#tile.patch<@r, 0, "xpic", array<i64: 3, 4>>], row_address = 0x4c040, placed = [src 0x5c000, dst 0x60000]>, least = #tile.schedule<rows = [@s], sender_rows = [0], receiver_rows = [0], row_address = 0x0>} : () -> ()

// CHECK:      "test.op"() {all = #tile.schedule<rows = [@s, @r], row_loops = [1], sender_rows = [0, -1], receiver_rows = [1, -1], patches = [#tile.patch<@r, 0, "xpic", array<i64: 3, 4>>], row_address = 0x4c040, placed = [src 0x5c000, dst 0x60000]>, least = #tile.schedule<rows = [@s], sender_rows = [0], receiver_rows = [0], row_address = 0x0>} : () -> ()
// CHECK-GENERIC: "test.op"() {all = #tile.schedule<rows = [@s, @r], row_loops = [1], sender_rows = [0, -1], receiver_rows = [1, -1], patches = [#tile.patch<@r, 0, "xpic", array<i64: 3, 4>>], row_address = 0x4c040, placed = [src 0x5c000, dst 0x60000]>, least = #tile.schedule<rows = [@s], sender_rows = [0], receiver_rows = [0], row_address = 0x0>} : () -> ()

func.func @scheduled() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@receive, 0, "xpic", array<i64: 0, 1>>], row_address = 0x4c000, placed = [src 0x5c000, dst 0x60000]>
  }
  func.return
}
exchange.row @send {
  exchange.send 63, 0x17000, 1
  exchange.sendoff 1983, 0x0, 1
}
exchange.row @receive {
  exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x18000
  exchange.delay 2055
}

// CHECK-LABEL: func.func @scheduled()
// CHECK:         tile.exchange 2048 words {{.*}} provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@receive, 0, "xpic", array<i64: 0, 1>>], row_address = 0x4c000, placed = [src 0x5c000, dst 0x60000]>
// CHECK-GENERIC: "tile.exchange"(%b, %s, %j) <{{.*}}schedule = #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@receive, 0, "xpic", array<i64: 0, 1>>], row_address = 0x4c000, placed = [src 0x5c000, dst 0x60000]>}>
