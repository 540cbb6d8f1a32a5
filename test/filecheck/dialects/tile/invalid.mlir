// RUN: ipu-opt %s --split-input-file --verify-diagnostics

func.func @empty_range() {
  %a = tile.buffer @a scratch on #tile.tiles<3 to 3> shard [4] f32 row_major standard align 4 tail 0
  func.return
}
// expected-error @unknown {{tile set [3, 3) is empty}}

// -----

func.func @unsorted_list() {
  %a = tile.buffer @a scratch on #tile.tiles<[0, 5, 2]> shard [4] f32 row_major standard align 4 tail 0
  func.return
}
// expected-error @unknown {{tile list [0, 5, 2] must be strictly increasing}}

// -----

func.func @bad_kind() {
  // expected-error @+1 {{tile.buffer @a: kind 'temp' is not one of input, output, scratch}}
  %a = tile.buffer @a temp on #tile.tiles<0 to 1> shard [4] f32 row_major standard align 4 tail 0
  func.return
}

// -----

func.func @scratch_with_index() {
  // expected-error @+1 {{tile.buffer @a: 'input' and 'output' buffers take an index, 'scratch' none}}
  %a = "tile.buffer"() <{sym_name = "a", kind = #tile<buffer_kind scratch>, index = 0 : i64, tiles = #tile.tiles<0 to 1>, shape = array<i64: 4>, precision = #mid<precision f32>, order = #mid<order row_major>, memory = #mid<memory standard>, alignment = 4 : i64, tail = 0 : i64}> : () -> !tile.buffer
  func.return
}

// -----

func.func @bad_precision() {
  // expected-error @+1 {{tile.buffer @a: precision 'bf16' is not one of f8f143, f16, f32}}
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [4] bf16 row_major standard align 4 tail 0
  func.return
}

// -----

func.func @bad_order() {
  // expected-error @+1 {{tile.buffer @a: element order 'col_major' is not one of row_major, amp_left, amp_right, amp_output}}
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [4] f16 col_major standard align 4 tail 0
  func.return
}

// -----

func.func @bad_memory() {
  // expected-error @+1 {{tile.buffer @a: memory class 'fast' is not one of standard, interleaved}}
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [4] f16 row_major fast align 4 tail 0
  func.return
}

// -----

func.func @bad_shape() {
  // expected-error @+1 {{tile.buffer @a: shard shape [4, 0] must be non-empty with extents >= 1}}
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [4, 0] f16 row_major standard align 4 tail 0
  func.return
}

// -----

func.func @bad_alignment() {
  // expected-error @+1 {{tile.buffer @a: alignment 24 must be a power of two}}
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [4] f16 row_major standard align 24 tail 0
  func.return
}

// -----

func.func @bad_tail() {
  // expected-error @+1 {{tile.buffer @a: access tail -8 must be >= 0}}
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [4] f16 row_major standard align 8 tail -8
  func.return
}

// -----

func.func @misaligned_address() {
  // expected-error @+1 {{tile.buffer @a: address 0x4c010 is not 32-byte aligned}}
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [4] f16 row_major standard align 32 tail 0 address 0x4c010
  func.return
}

// -----

func.func @empty_loop() {
  // expected-error @+1 {{tile.loop: empty iteration range [2, 2); a loop must run at least once}}
  tile.loop %i = 2 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> {
  }
  func.return
}

// -----

func.func @zero_words() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.exchange: must move at least one word, got 0}}
  tile.exchange 0 words from %a[() -> (0)] on tile () -> (0) to %a[() -> (0)] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @not_a_buffer_op(%x: !tile.buffer) {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.exchange: source must be the result of a tile.buffer}}
  tile.exchange 4 words from %x[() -> (0)] on tile () -> (0) to %a[() -> (0)] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @map_arity() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.loop %i = 0 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> {
    // expected-error @+1 {{tile.exchange: source offset map (d0, d1) -> (0) takes 2 indices, but the op has 1 index operand(s)}}
    tile.exchange 4 words from %a[(d0, d1) -> (0)] on tile (d0) -> (d0) to %a[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%i) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  }
  func.return
}

// -----

func.func @map_results() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.exchange: source offset map () -> (0, 4) must have no symbols and exactly one result}}
  tile.exchange 4 words from %a[() -> (0, 4)] on tile () -> (0) to %a[() -> (0)] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @ivs_not_the_loops() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.loop %i = 0 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> {
    // expected-error @+1 {{tile.exchange: iv(...) must list the indices of the 1 enclosing tile.loop(s), outermost first; got 0 operand(s)}}
    tile.exchange 4 words from %a[() -> (0)] on tile () -> (0) to %a[() -> (0)] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  }
  func.return
}

// -----

func.func @source_tile_not_holding() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64] f32 row_major standard align 4 tail 0
  tile.loop %i = 0 to 3 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> {
    // expected-error @+1 {{tile.exchange: source tile 2 does not hold @a (it lives on #tile.tiles<0 to 2>)}}
    tile.exchange 4 words from %a[(d0) -> (0)] on tile (d0) -> (d0) to %b[(d0) -> (0)] on #tile.tiles<0 to 4> iv(%i) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  }
  func.return
}

// -----

func.func @destination_not_resident() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.exchange: destination buffer @a lives on #tile.tiles<0 to 2>, not on every tile of #tile.tiles<0 to 3>}}
  tile.exchange 4 words from %a[() -> (0)] on tile () -> (0) to %a[() -> (0)] on #tile.tiles<0 to 3> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @offset_outside() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.loop %i = 0 to 4 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> {
    // expected-error @+1 {{tile.exchange: source view of @a at byte offset 192 (68 bytes) leaves the buffer (256 bytes)}}
    tile.exchange 17 words from %a[(d0) -> (d0 * 64)] on tile (d0) -> (0) to %a[(d0) -> (0)] on #tile.tiles<0 to 2> iv(%i) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  }
  func.return
}

// -----

func.func @rows_wrong_length() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.loop %i = 0 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> {
    // expected-error @+1 {{tile.exchange: sender_rows has 1 entries, but the enclosing loops its rows vary with run 2 iteration(s)}}
    tile.exchange 4 words from %a[(d0) -> (0)] on tile (d0) -> (0) to %a[(d0) -> (4)] on #tile.tiles<0 to 2> iv(%i) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> schedule #tile.schedule<rows = [@r], sender_rows = [0], receiver_rows = [0], row_address = 0x4c000>
  }
  func.return
}
exchange.row @r {
  exchange.delay 0
}

// -----

func.func @rows_missing() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{#tile.schedule: needs rows, sender_rows, row_address}}
  tile.exchange 4 words from %a[() -> (0)] on tile () -> (0) to %a[() -> (4)] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> schedule #tile.schedule<receiver_rows = [0]>
  func.return
}

// -----

func.func @rows_out_of_range() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{#tile.schedule: sender_rows selects row 2, outside the 2 rows}}
  tile.exchange 4 words from %a[() -> (0)] on tile () -> (0) to %a[() -> (4)] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> schedule #tile.schedule<rows = [@r0, @r1], sender_rows = [2], receiver_rows = [1], row_address = 0x4c000>
  func.return
}
exchange.row @r0 {
  exchange.delay 0
}
exchange.row @r1 {
  exchange.delay 0
}

// -----

func.func @view_not_resident() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  %b = tile.buffer @b input 1 on #tile.tiles<1 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.kernel @copy_words: view 1 buffer @b lives on #tile.tiles<1 to 2>, not on every tile of #tile.tiles<0 to 2>}}
  tile.kernel @copy_words(%a[() -> (0)], %b[() -> (0)]) scalars [4] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @view_outside() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.kernel @copy_words: operand 0 view of @a at byte offset 256 (16 bytes) leaves the buffer (256 bytes)}}
  tile.kernel @copy_words(%a[() -> (256)], %a[() -> (0)]) scalars [4] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @kernel_map_arity() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.kernel @copy_words: view 0 offset map (d0) -> (d0) takes 1 indices, but the op has 0 index operand(s)}}
  tile.kernel @copy_words(%a[(d0) -> (d0)], %a[() -> (0)]) scalars [4] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @views_and_offsets() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.kernel @copy_words: 2 buffer view(s) but 1 offset map(s)}}
  "tile.kernel"(%a, %a) <{callee = @copy_words, offsets = [affine_map<() -> (0)>], scalars = array<i64: 4>, tiles = #tile.tiles<0 to 2>, provenance = #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">, operandSegmentSizes = array<i32: 2, 0>}> : (!tile.buffer, !tile.buffer) -> ()
  func.return
}

// -----

func.func @on_tile_negative() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.loop %i = 0 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> {
    // expected-error @+1 {{tile.kernel @copy_words: on_tile selects tile -1, which does not exist}}
    tile.kernel @copy_words(%a[(d0) -> (0)], %a[(d0) -> (4)]) scalars [1] on #tile.tiles<0 to 2> only (d0) -> (d0 - 1) iv(%i) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  }
  func.return
}

// -----

func.func @on_tile_never() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.loop %i = 0 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r"> {
    // expected-error @+1 {{tile.kernel @copy_words: on_tile never selects a tile of #tile.tiles<0 to 2>; the run would never happen}}
    tile.kernel @copy_words(%a[(d0) -> (0)], %a[(d0) -> (4)]) scalars [1] on #tile.tiles<0 to 2> only (d0) -> (d0 + 2) iv(%i) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  }
  func.return
}

// -----

// A tile set may not reach past the tile count that graph-to-mid recorded on the module.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f16_r16"], scheduling = in_order, profiling = off>} {
  func.func @beyond_config() {
    // expected-error @+1 {{tile.buffer: @a tile set #tile.tiles<0 to 4> reaches tile 3, but the module is configured for 2 tiles}}
    %a = tile.buffer @a scratch on #tile.tiles<0 to 4> shard [4] f32 row_major standard align 4 tail 0
    func.return
  }
}

// -----

// The custom syntax cannot spell a negative index; the generic form can.
func.func @negative_index() {
  // expected-error @+1 {{tile.buffer @a: input index must be >= 0}}
  %a = "tile.buffer"() <{sym_name = "a", kind = #tile<buffer_kind input>, index = -1 : i64, tiles = #tile.tiles<0 to 2>, shape = array<i64: 4>, precision = #mid<precision f32>, order = #mid<order row_major>, memory = #mid<memory standard>, alignment = 4 : i64, tail = 0 : i64}> : () -> !tile.buffer
  func.return
}

// -----

func.func @loop_two_ivs() {
  // expected-error @+1 {{tile.loop: the body takes exactly one 'index' argument}}
  "tile.loop"() <{lower = 0 : i64, upper = 2 : i64, provenance = #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">}> ({
  ^bb0(%i: index, %j: index):
  }) : () -> ()
  func.return
}

// -----

func.func @scalars_not_i64() {
  %s = tile.buffer @s scratch on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.kernel @copy_words: scalars must be an array<i64: ...>}}
  "tile.kernel"(%s, %s) <{callee = @copy_words, offsets = [affine_map<() -> (0)>, affine_map<() -> (4)>], scalars = array<i32: 1>, tiles = #tile.tiles<0 to 2>, provenance = #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">, operandSegmentSizes = array<i32: 2, 0>}> : (!tile.buffer, !tile.buffer) -> ()
  func.return
}

// -----

func.func @kernel_in_an_empty_loop() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 2> shard [16] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.loop: empty iteration range [3, 1); a loop must run at least once}}
  tile.loop %i = 3 to 1 provenance #tile.provenance<op = "x", value = "y", reason = "z"> {
    tile.kernel @copy_words(%a[(d0) -> (0)], %a[(d0) -> (0)]) scalars [16] on #tile.tiles<0 to 2> only (d0) -> (d0) iv(%i) provenance #tile.provenance<op = "x", value = "y", reason = "z">
  }
  func.return
}

// -----

func.func @exchange_offset_not_a_word() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.exchange: source view of @a at byte offset 2 is not a multiple of 4; exchanges move whole words}}
  tile.exchange 4 words from %a[() -> (2)] on tile () -> (0) to %a[() -> (0)] on #tile.tiles<1 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @exchanged_buffer_half_word_aligned() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  %b = tile.buffer @b scratch on #tile.tiles<0 to 2> shard [64] f16 row_major standard align 2 tail 0
  // expected-error @+1 {{tile.exchange: destination buffer @b is only 2-byte aligned; exchanged buffers need 4-byte alignment}}
  tile.exchange 4 words from %a[() -> (0)] on tile () -> (0) to %b[() -> (0)] on #tile.tiles<1 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @map_divides_by_zero() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.loop %i = 0 to 2 provenance #tile.provenance<op = "x", value = "y", reason = "z"> {
    // expected-error @+1 {{tile.kernel @copy_words: view 0 offset map (d0) -> ((d0 floordiv 0)) divides by 0; floordiv, ceildiv and mod need a positive constant}}
    tile.kernel @copy_words(%a[(d0) -> ((d0 floordiv 0))], %a[(d0) -> (0)]) scalars [1] on #tile.tiles<0 to 2> iv(%i) provenance #tile.provenance<op = "x", value = "y", reason = "z">
  }
  func.return
}

// -----

"test.op"() {tiles = #tile.tiles<-1 to 3>} : () -> ()
// expected-error @unknown {{tile ids must be >= 0}}

// -----

func.func @gemm_rows_past_the_output_shard() {
  %o = tile.buffer @o scratch on #tile.tiles<0 to 1> shard [32, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 1> shard [32, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 1> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{tile.kernel @amp_gemm_f16_init: operand 0 view of @o at byte offset 0 (127872 bytes) leaves the buffer (4096 bytes)}}
  tile.kernel @amp_gemm_f16_init(%o[() -> (0)], %l[() -> (0)], %r[() -> (0)]) scalars [999] on #tile.tiles<0 to 1> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @copy_words_with_one_view() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 1> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.kernel @copy_words: the kernel takes 2 view(s) (out, src) and 1 scalar(s) (words); got 1 and 1}}
  tile.kernel @copy_words(%a[() -> (0)]) scalars [4] on #tile.tiles<0 to 1> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @copy_negative_words() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 1> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.kernel @copy_words: scalar 'words' = -4 must be >= 0}}
  tile.kernel @copy_words(%a[() -> (0)], %a[() -> (0)]) scalars [-4] on #tile.tiles<0 to 1> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @negative_tile() {
  %a = tile.buffer @a scratch on #tile.tiles<-1 to 2> shard [4] f32 row_major standard align 4 tail 0
  func.return
}
// expected-error @unknown {{tile set #tile.tiles<-1 to 2>: tile ids must be >= 0, got -1}}

// -----

// The rows hold absolute addresses: a buffer moved after scheduling makes them stale.
builtin.module {
  func.func @moved_after_scheduling() {
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60020
    // expected-error @+1 {{tile.exchange: its rows were built for destination @slot at 0x60000, but the buffer has 0x60020 now; schedule the exchange again after placement (run the pipeline from place-memory on unscheduled IR)}}
    tile.exchange 2048 words from %b[() -> (0)] on tile () -> (0) to %s[() -> (0)] on #tile.tiles<1 to 2> iv() provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "r"> schedule #tile.schedule<rows = [@send, @receive], sender_rows = [0], receiver_rows = [1], row_address = 0x4c000, placed = [src 0x5c000, dst 0x60000]>
    func.return
  }
  exchange.row @send {
    exchange.send 63, 0x17000, 1
  }
  exchange.row @receive {
    exchange.delay 0
  }
}

// -----

func.func @placed_without_rows() {
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x5c000
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x60000
  // expected-error @+1 {{#tile.schedule: needs rows, sender_rows, receiver_rows, row_address}}
  tile.exchange 2048 words from %b[() -> (0)] on tile () -> (0) to %s[() -> (0)] on #tile.tiles<1 to 2> iv() provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "r"> schedule #tile.schedule<placed = [src 0x5c000, dst 0x60000]>
  func.return
}

// -----

func.func @gelu_bad_descriptor() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 1> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.kernel @gelu: descriptor at word 0 has rank 2 and needs 14 words; 3 remain}}
  tile.kernel @gelu(%a[() -> (0)], %a[() -> (0)]) scalars [2, 4, 64] on #tile.tiles<0 to 1> iv() provenance #tile.provenance<op = "graph.gelu", value = "%y", reason = "r">
  func.return
}

// -----

func.func @gelu_shard_past_the_buffer() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 1> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.kernel @gelu: operand 0 view of @a at byte offset 0 (512 bytes) leaves the buffer (256 bytes)}}
  tile.kernel @gelu(%a[() -> (0)], %a[() -> (0)]) scalars [1, 128, 1, 1, 0, 1, 1, 0, 0, 0, 1, 64, 1, 1, 0, 1, 1, 0, 0, 0] on #tile.tiles<0 to 1> iv() provenance #tile.provenance<op = "graph.gelu", value = "%y", reason = "r">
  func.return
}

// -----

func.func @attention_without_its_named_scalars() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 1> shard [64] f32 row_major standard align 4 tail 0
  // expected-error @+1 {{tile.kernel @attention: the kernel takes 4 view(s) (out, query, key, value) and 3 scalar(s) (causal, scale_bits, descriptor...); got 4 and 1}}
  tile.kernel @attention(%a[() -> (0)], %a[() -> (0)], %a[() -> (0)], %a[() -> (0)]) scalars [1] on #tile.tiles<0 to 1> iv() provenance #tile.provenance<op = "graph.attention", value = "%y", reason = "r">
  func.return
}
