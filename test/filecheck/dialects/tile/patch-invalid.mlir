// RUN: ipu-opt %s --split-input-file --verify-diagnostics

// Verifier rules of scheduled tile.exchange ops: their #tile.schedule (rows,
// sender_rows/receiver_rows, #tile.patch) alone and against the op and the module.

// A patch must name one of the exchange's rows.
func.func @patch_unknown_row() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{#tile.schedule: patches name @elsewhere, which is not one of its rows}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@elsewhere, 0, "xpic", array<i64: 0, 1>>], row_address = 0x4c000>
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

// -----

// One patch value per iteration of the enclosing loops (2 here).
func.func @patch_too_few_values() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{#tile.schedule: the patch of @receive instruction 0 field 'xpic' has 1 values, but sender_rows has 2 entries (one per (iteration, group))}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@receive, 0, "xpic", array<i64: 0>>], row_address = 0x4c000>
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

// -----

func.func @patch_too_many_values() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{#tile.schedule: the patch of @send instruction 1 field 'sctl' has 3 values, but sender_rows has 2 entries (one per (iteration, group))}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@send, 1, "sctl", array<i64: 1, 2, 1>>], row_address = 0x4c000>
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

// -----

// Patches without rows to patch.
func.func @patches_without_rows() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{#tile.schedule: needs rows, sender_rows, receiver_rows}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<patches = [#tile.patch<@receive, 0, "xpic", array<i64: 0, 1>>], row_address = 0x4c000>
  }
  func.return
}

// -----

// -1 (no traffic) is the only negative selection.
func.func @sender_rows_below_minus_one() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{#tile.schedule: sender_rows selects row -2, outside the 2 rows (-1 means no row: the iteration has no traffic)}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [-2, 0], receiver_rows = [1, 1], row_address = 0x4c000>
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

// -----

// A selection must index `rows` (2 rows: 0 and 1).
func.func @sender_rows_past_end() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{#tile.schedule: sender_rows selects row 2, outside the 2 rows (-1 means no row: the iteration has no traffic)}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 2], receiver_rows = [1, 1], row_address = 0x4c000>
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

// -----

func.func @receiver_rows_past_end() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{#tile.schedule: receiver_rows selects row 5, outside the 2 rows (-1 means no row: the iteration has no traffic)}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0], receiver_rows = [1, 5], row_address = 0x4c000>
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

// -----

// One selection per iteration.
func.func @sender_rows_wrong_count() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{#tile.schedule: sender_rows has 3 entries and receiver_rows 2; both have one per (iteration, group)}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0, 0], receiver_rows = [1, 1], row_address = 0x4c000>
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

// -----

// Selections without rows to select from.
func.func @selection_without_rows() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{#tile.schedule: needs rows, sender_rows}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<receiver_rows = [1, 1], row_address = 0x4c000>
  }
  func.return
}

// -----

// The patched row is a symbol reference.
// expected-error @+1 {{expected a row symbol (@name), got "row"}}
func.func @patch_row_not_symbol() attributes {p = #tile.patch<"row", 0, "xpic", array<i64: 0>>} {
  func.return
}

// -----

// Patch values are an array<i64: ...>.
// expected-error @+1 {{expected array<i64: ...> of patch values, got array<i32: 0>}}
func.func @patch_values_not_i64() attributes {p = #tile.patch<@row, 0, "xpic", array<i32: 0>>} {
  func.return
}

// -----

// The instruction index is not negative.
// expected-error @+1 {{Expected integer literal}}
func.func @patch_negative_instruction() attributes {p = #tile.patch<@row, -1, "xpic", array<i64: 0>>} {
  func.return
}

// -----

// Every row an exchange selects must be an exchange.row of the module.
func.func @row_symbol_missing() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{tile.exchange: @receive is not an exchange.row of the module}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0], receiver_rows = [1, 1], row_address = 0x4c000>
  }
  func.return
}
exchange.row @send {
  exchange.send 63, 0x17000, 1
  exchange.sendoff 1983, 0x0, 1
}

// -----

// A patch must name an instruction of its row (the receiver row has two).
func.func @patch_instruction_out_of_range() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{tile.exchange: the patch of @receive names instruction 2, but the row has 2 instruction(s)}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@receive, 2, "events_m1", array<i64: 5, 6>>], row_address = 0x4c000>
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

// -----

// A patch must name a field of its instruction.
func.func @patch_unknown_field() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{tile.exchange: the patch of @receive instruction 0 (exchange.sendpicp) names field 'bogus'; its fields are words_m1, address, sctl, pic_selector, xpic, pic}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@receive, 0, "bogus", array<i64: 5, 6>>], row_address = 0x4c000>
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

// -----

// row_loops must list every loop index the maps read: here the source tile reads %j.
func.func @row_loops_omit_a_read_index() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %r = 0 to 3 provenance #tile.provenance<op = "graph.repeat %o", value = "%o", reason = "layers"> {
    tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
      // expected-error @+1 {{tile.exchange: the source tile map reads loop index d1, which row_loops [0] leaves out: its rows would be the same in every iteration of that loop}}
      tile.exchange 2048 words from %b[(d0, d1) -> (0)] on tile (d0, d1) -> (d1) to %s[(d0, d1) -> (0)] on #tile.tiles<0 to 2> iv(%r, %j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], row_loops = [0], sender_rows = [0, 0, 0], receiver_rows = [1, 1, 1], row_address = 0x4c000>
    }
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

// -----

func.func @row_loops_out_of_range() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  tile.loop %j = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> {
    // expected-error @+1 {{tile.exchange: row_loops [0, 1] names loop position 1, but the op is in 1 enclosing loop(s)}}
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %s[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs"> schedule #tile.schedule<rows = [@send, @receive], row_loops = [0, 1], sender_rows = [0, 0], receiver_rows = [1, 1], row_address = 0x4c000>
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
