// RUN: ipu-opt %s --split-input-file --verify-diagnostics
// The verifier of concurrent exchange groups and kernel home views (ipu_dialects/tile.py).

// A group count without its shift map (only the generic form can say this).
func.func @groups_without_shift() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %r2 = tile.buffer @r2 scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{tile.exchange: 'groups' and its 'shift' map come together}}
  "tile.exchange"(%a, %l) <{words = 512 : i64, src_offset = affine_map<() -> (0)>, src_tile = affine_map<(d0) -> ((d0 * 2))>, dst_offset = affine_map<() -> (0)>, dst_tiles = #tile.tiles<0 to 2>, provenance = #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">, groups = 2 : i64}> : (!tile.buffer, !tile.buffer) -> ()
  func.return
}

// -----

func.func @shift_without_groups() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %r2 = tile.buffer @r2 scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{tile.exchange: 'groups' and its 'shift' map come together}}
  "tile.exchange"(%a, %l) <{words = 512 : i64, src_offset = affine_map<() -> (0)>, src_tile = affine_map<() -> (0)>, dst_offset = affine_map<() -> (0)>, dst_tiles = #tile.tiles<0 to 2>, provenance = #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">, dst_shift = affine_map<(d0) -> ((d0 * 2))>}> : (!tile.buffer, !tile.buffer) -> ()
  func.return
}

// -----

func.func @no_groups() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %r2 = tile.buffer @r2 scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{tile.exchange: groups must be at least 1, got 0}}
  tile.exchange 512 words from %a[() -> (0)] on tile (d0) -> ((d0 * 2)) to %l[() -> (0)] on #tile.tiles<0 to 2> groups 0 shift (d0) -> ((d0 * 2)) iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

// Group 1's receivers are tiles 0..2 shifted by 2: tiles 2 and 3, and @r2 lives on 0 and 1.
func.func @receiver_without_destination() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %r2 = tile.buffer @r2 scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{tile.exchange: in iteration 0 a group receives on tile 2, which does not hold @r2 (it lives on #tile.tiles<0 to 2>)}}
  tile.exchange 2048 words from %b[() -> (0)] on tile (d0) -> ((d0 * 2)) to %r2[() -> (0)] on #tile.tiles<0 to 2> groups 2 shift (d0) -> ((d0 * 2)) iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

// Shifts 0 and 1 of receivers 0..2: tile 1 receives for both groups.
func.func @overlapping_groups() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %r2 = tile.buffer @r2 scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{tile.exchange: in iteration 0 tile 1 receives for two groups; a tile sends for at most one group and receives for at most one}}
  tile.exchange 512 words from %a[() -> (0)] on tile (d0) -> ((d0 * 2)) to %l[() -> (0)] on #tile.tiles<0 to 2> groups 2 shift (d0) -> (d0) iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

// Groups 0 and 1 both send from tile 0.
func.func @tile_sends_for_two_groups() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  // expected-error @+1 {{tile.exchange: in iteration 0 tile 0 sends for two groups; a tile sends for at most one group and receives for at most one}}
  tile.exchange 512 words from %a[() -> (0)] on tile (d0) -> (0) to %l[() -> (0)] on #tile.tiles<[1]> groups 2 shift (d0) -> ((d0 * 2)) iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @home_pointer_out_of_range() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %r2 = tile.buffer @r2 scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{home view of pointer 3: the kernel has 3 pointer(s)}}
  tile.kernel @amp_gemm_f16_accum(%c[() -> (0)], %l[() -> (0)], %r[() -> (0)]) scalars [16] on #tile.tiles<0 to 4> home [3: %a[() -> (0)] on #tile.tiles<[0, 2]> shift () -> (0)] iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

// Shifted by 3, tiles [0, 2] are 3 and 5: the kernel runs on 0..4.
func.func @home_outside_kernel_tiles() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %r2 = tile.buffer @r2 scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{home view of pointer 1 selects tile 5, outside the kernel's tiles #tile.tiles<0 to 4>}}
  tile.kernel @amp_gemm_f16_accum(%c[() -> (0)], %l[() -> (0)], %r[() -> (0)]) scalars [16] on #tile.tiles<0 to 4> home [1: %a[() -> (0)] on #tile.tiles<[0, 2]> shift () -> (3)] iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

// @r2 lives on tiles 0 and 1; the home view reads it on tiles 2 and 3.
func.func @home_outside_buffer_tiles() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %r2 = tile.buffer @r2 scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{home view of pointer 2 selects tile 2, outside the tiles of @r2 #tile.tiles<0 to 2>}}
  tile.kernel @amp_gemm_f16_accum(%c[() -> (0)], %l[() -> (0)], %r[() -> (0)]) scalars [16] on #tile.tiles<0 to 4> home [2: %r2[() -> (0)] on #tile.tiles<0 to 2> shift () -> (2)] iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

func.func @home_properties_apart() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %r2 = tile.buffer @r2 scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{home_pointers, home_tiles and home_shifts come together}}
  "tile.kernel"(%c, %l, %r, %a) <{callee = @amp_gemm_f16_accum, offsets = [affine_map<() -> (0)>, affine_map<() -> (0)>, affine_map<() -> (0)>, affine_map<() -> (0)>], scalars = array<i64: 16>, tiles = #tile.tiles<0 to 4>, provenance = #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">, home_pointers = array<i64: 1>, operandSegmentSizes = array<i32: 4, 0>}> : (!tile.buffer, !tile.buffer, !tile.buffer, !tile.buffer) -> ()
  func.return
}

// -----

func.func @home_properties_miscounted() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %r2 = tile.buffer @r2 scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  // expected-error @+1 {{home_pointers (array<i64>), home_tiles and home_shifts need one entry per home view}}
  "tile.kernel"(%c, %l, %r, %a) <{callee = @amp_gemm_f16_accum, offsets = [affine_map<() -> (0)>, affine_map<() -> (0)>, affine_map<() -> (0)>, affine_map<() -> (0)>], scalars = array<i64: 16>, tiles = #tile.tiles<0 to 4>, provenance = #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">, home_pointers = array<i64: 1>, home_tiles = [#tile.tiles<[0, 2]>, #tile.tiles<0 to 2>], home_shifts = [affine_map<() -> (0)>], operandSegmentSizes = array<i32: 4, 0>}> : (!tile.buffer, !tile.buffer, !tile.buffer, !tile.buffer) -> ()
  func.return
}

// -----

// A pair broadcast moves 64-bit items: an odd word count cannot be sent.
func.func @pairs_odd_words() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  // expected-error @+1 {{tile.exchange: a pair broadcast moves 64-bit items, so its word count must be even, got 511}}
  tile.exchange 511 words from %a[() -> (0)] on tile () -> (0) to %l[() -> (0)] on #tile.tiles<0 to 4> pairs iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

// ... nor read 64-bit items from a view that is only word aligned.
func.func @pairs_word_aligned_view() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  // expected-error @+1 {{source view of @a at byte offset 4 is not a multiple of 8; exchanges move 64-bit items}}
  tile.exchange 256 words from %a[() -> (4)] on tile () -> (0) to %l[() -> (0)] on #tile.tiles<0 to 4> pairs iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}

// -----

// ... or from a buffer aligned to words only.
func.func @pairs_word_aligned_buffer() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 4 tail 16
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  // expected-error @+1 {{source buffer @a is only 4-byte aligned; exchanged buffers need 8-byte alignment to move 64-bit items}}
  tile.exchange 256 words from %a[() -> (0)] on tile () -> (0) to %l[() -> (0)] on #tile.tiles<0 to 4> pairs iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}
