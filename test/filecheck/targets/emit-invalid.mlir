// RUN: ipu-opt %s --split-input-file -t ipu-asm --verify-diagnostics
// RUN: ipu-opt %s --split-input-file -t ipu-rows --verify-diagnostics
// RUN: not ipu-opt %examples/gemm_f16.mlir -p 'graph-to-mid{tiles=4},mid-to-tile' -t ipu-asm 2>&1 | filecheck %s --check-prefix=UNPLACED
// RUN: not ipu-opt %examples/gemm_f16.mlir -p 'graph-to-mid{tiles=4},mid-to-tile,place-memory' -t ipu-rows 2>&1 | filecheck %s --check-prefix=UNSCHEDULED
// RUN: not ipu-opt %examples/gemm_f16.mlir -p 'graph-to-mid{tiles=4}' -t ipu-asm 2>&1 | filecheck %s --check-prefix=UNLOWERED
// RUN: not ipu-opt %examples/gemm_f16.mlir -p 'graph-to-mid{tiles=4}' -t ipu-rows 2>&1 | filecheck %s --check-prefix=UNLOWERED

// Emitting (-t ipu-asm, -t ipu-rows) needs placed, scheduled tile IR; anything else is a
// diagnostic, not a traceback. From the command line: a message and a non-zero exit.
// UNPLACED:         package: buffers without addresses: a, b, c, c_lhs_slot, c_rhs_slot, c_partials (run place-memory)
// UNPLACED-NOT:     Traceback
// UNSCHEDULED:      package: tile.exchange (rhs blocks k down every grid column) has no rows; run schedule-exchange first
// UNSCHEDULED-NOT:  Traceback
// An op above the tile level is not dropped from the program: it is a diagnostic.
// UNLOWERED:        package: mid.gemm is not at the tile level; the package is built from the output of the whole pipeline (ipu-pipeline, or through schedule-exchange)

// The emitters read the tile count and target from ipu.config.
builtin.module {
  func.func @no_config() {
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 from tensor<128x128xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 2 pad], replication = 1, group = 2, standard>> address 0x5c000
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles"> schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x0_send, 0, "sctl", array<i64: 1, 2>>, #tile.patch<@x0_send, 1, "sctl", array<i64: 1, 2>>, #tile.patch<@x0_receive, 0, "xpic", array<i64: 0, 1>>], row_address = 0x4c000>
    }
    func.return
  }
  exchange.row @x0_send provenance "graph.gemm %c %b: rhs block to output-row tiles" {
    exchange.send 63, 0x17000, 1
    exchange.sendoff 1983, 0x0, 1
  }
  exchange.row @x0_receive provenance "graph.gemm %c %b: rhs block to output-row tiles" {
    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x18000
    exchange.delay 2053
  }
}
// expected-error @unknown {{package: the module has no 'ipu.config'}}

// -----

// Every buffer needs an address (place-memory not run on @b).
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @unplaced() {
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 from tensor<128x128xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 2 pad], replication = 1, group = 2, standard>>
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
    }
    func.return
  }
}
// expected-error @unknown {{package: buffers without addresses: b (run place-memory)}}

// -----

// Placed but not scheduled: the exchange has no rows to run.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @unscheduled() {
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 from tensor<128x128xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 2 pad], replication = 1, group = 2, standard>> address 0x5c000
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
    }
    func.return
  }
}
// expected-error @unknown {{package: tile.exchange (rhs block to output-row tiles) has no rows; run schedule-exchange first}}

// -----

// A package holds one program: one function.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @first() {
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 from tensor<128x128xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 2 pad], replication = 1, group = 2, standard>> address 0x5c000
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles"> schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x0_send, 0, "sctl", array<i64: 1, 2>>, #tile.patch<@x0_send, 1, "sctl", array<i64: 1, 2>>, #tile.patch<@x0_receive, 0, "xpic", array<i64: 0, 1>>], row_address = 0x4c000>
    }
    func.return
  }
  func.func @second() {
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 from tensor<128x128xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 2 pad], replication = 1, group = 2, standard>> address 0x5c000
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles"> schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x0_send, 0, "sctl", array<i64: 1, 2>>, #tile.patch<@x0_send, 1, "sctl", array<i64: 1, 2>>, #tile.patch<@x0_receive, 0, "xpic", array<i64: 0, 1>>], row_address = 0x4c000>
    }
    func.return
  }
  exchange.row @x0_send provenance "graph.gemm %c %b: rhs block to output-row tiles" {
    exchange.send 63, 0x17000, 1
    exchange.sendoff 1983, 0x0, 1
  }
  exchange.row @x0_receive provenance "graph.gemm %c %b: rhs block to output-row tiles" {
    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x18000
    exchange.delay 2053
  }
}
// expected-error @unknown {{package: expected one func.func, found 2}}
