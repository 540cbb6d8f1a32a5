// RUN: ipu-opt %s --split-input-file -p schedule-exchange --verify-diagnostics
// RUN: ipu-opt %examples/gemm_f16.mlir -p 'ipu-pipeline{tiles=4}' | not ipu-opt -p schedule-exchange 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not ipu-opt %examples/gemm_f16.mlir -p 'graph-to-mid{tiles=4},mid-to-tile,schedule-exchange' 2>&1 | filecheck %s --check-prefix=UNPLACED

// The same diagnostics from the command line (no --verify-diagnostics): a clear message
// and a non-zero exit, no traceback; it names the source line (an unplaced input buffer is
// at its function's line).
// TWICE:     schedule-exchange: tile.exchange is already scheduled (it has a schedule)
// TWICE-NOT: Traceback
// UNPLACED:     gemm_f16.mlir:3:1: error: schedule-exchange: buffer @b has no address (run place-memory first)
// UNPLACED-NOT: Traceback

// Every pass after graph-to-mid reads the target and tile count from ipu.config.
builtin.module {
  func.func @no_config() {
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
    }
    func.return
  }
}
// expected-error @unknown {{schedule-exchange: the module has no 'ipu.config' #mid.config attribute; run graph-to-mid first}}

// -----

// Rows need placed buffers: the source address of every send and the slot of every
// receiver (place-memory skipped).
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @unplaced() {
    // expected-error @+1 {{schedule-exchange: buffer @b has no address (run place-memory first)}}
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
    }
    func.return
  }
}

// -----

// The destination must be placed too.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @unplaced_slot() {
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
    // expected-error @+1 {{schedule-exchange: buffer @slot has no address (run place-memory first)}}
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
    }
    func.return
  }
}

// -----

// An exchange that already has rows is not scheduled again.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @scheduled_twice() {
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      // expected-error @+1 {{schedule-exchange: tile.exchange is already scheduled (it has a schedule)}}
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles"> schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [0, 0], receiver_rows = [1, 1], row_address = 0x4c000>
    }
    func.return
  }
  exchange.row @x0_send {
    exchange.send 63, 0x17000, 1
    exchange.sendoff 1983, 0x0, 1
  }
  exchange.row @x0_receive {
    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x18000
    exchange.delay 2055
  }
}

// -----

// place-memory output for the FP16 2-tile GEMM with the sent buffer @b moved to 0x54000,
// inside memory element 0 ([0x4c000, 0x5c000)), which also holds the code region: the
// sender row at 0x4c000 is fetched at event 0, when its `send` reads b's first word.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @contention() {
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [128, 64] f16 amp_right standard align 32 tail 0 address 0x54000
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      // expected-error @+1 {{schedule-exchange: tile.exchange (rhs block to output-row tiles): the sender row at 0x4c000 contends for memory element 0 at event 0 (fetch at 0x4c000, send-read at 0x54000); place exchanged buffers outside the code region's elements}}
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
    }
    func.return
  }
}

// -----

// Rows that fit nowhere. place-memory output (kernels dropped) of the FP16 GEMM
// [16 x 4160] x [4160 x 2048] on 128 tiles: 65 x 32 = 2080 blocks, one exchange iteration
// each, 16 bytes of row slot per iteration: x0 takes 32 x 16 = 512 bytes (0x4c000..0x4c200),
// x1 needs 32 x 64 x 16 = 32768 more, past the 32 KiB code region [0x4c000, 0x54000). The
// standard memory left free (0x98820..0xac000) is taken by @filler, so there is no room.
// (schedule-exchange.mlir has the same GEMM with that memory free: the rows go there.)
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 128, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @many_blocks() {
    %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [16, 4160] f16 amp_left standard align 32 tail 16 address 0x54000
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 128> shard [1088, 64] f16 amp_right standard align 32 tail 0 address 0x74820
    %c = tile.buffer @c output 0 on #tile.tiles<0 to 1> shard [16, 2048] f16 amp_output interleaved align 32 tail 0 address 0xac000
    %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 1> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x96820
    %filler = tile.buffer @filler scratch on #tile.tiles<0 to 1> shard [19960] f32 row_major standard align 32 tail 0 address 0x98820
    tile.loop %j = 0 to 32 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %c_rhs_slot[(d0) -> (0)] on #tile.tiles<0 to 1> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
      tile.loop %k = 1 to 65 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating inner blocks k"> {
        // expected-error @+1 {{schedule-exchange: the exchange rows of tile.exchange (graph.gemm %c %b) need 32768 bytes, but neither the code region [0x4c000, 0x54000) nor the standard memory that buffers and exchanged buffers' memory elements leave free has that much left (largest free range: 32256 bytes)}}
        tile.exchange 2048 words from %b[(d0, d1) -> (((d1 mod 17) * 8192))] on tile (d0, d1) -> ((((d1 floordiv 17) * 32) + d0)) to %c_rhs_slot[(d0, d1) -> (0)] on #tile.tiles<0 to 1> iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
      }
    }
    func.return
  }
}
