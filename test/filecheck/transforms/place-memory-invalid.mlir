// RUN: ipu-opt %s --split-input-file -p place-memory --verify-diagnostics
// Placing again after scheduling would move buffers under the rows' absolute addresses.
// RUN: not ipu-opt %examples/gemm_f16.mlir -p 'ipu-pipeline{tiles=4},place-memory' 2>&1 | filecheck %s --check-prefix=SCHEDULED
// SCHEDULED: place-memory: the module is scheduled already (tile.exchange 'rhs blocks k down every grid column' has rows, which hold buffer addresses); place buffers before schedule-exchange

builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @too_big() {
    // expected-error @+1 {{Out of memory on tile 3: 786448 bytes needed, tiles only have 638976 bytes (code region 32768, buffers live together: a 376832 + tail 16, c 376832)}}
    %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [368, 512] f16 amp_left standard align 32 tail 16
    %c = tile.buffer @c output 0 on #tile.tiles<3 to 4> shard [368, 512] f16 amp_output interleaved align 32 tail 0
    func.return
  }
}

// -----

builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 1, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @interleaved_too_big() {
    // expected-error @+1 {{Out of interleaved memory on tile 0: interleaved buffers need 262144 bytes, the interleaved region has 245760 bytes (buffers live together: c 262144)}}
    %c = tile.buffer @c output 0 on #tile.tiles<0 to 1> shard [256, 512] f16 amp_output interleaved align 32 tail 0
    func.return
  }
}

// -----

// Left stream and output both interleaved: the output takes elements 6..8, the left stream
// would need 90 KiB outside them, but only element 9 (48 KiB) is left.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 1, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @elements() {
    %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [720, 64] f16 amp_left interleaved align 32 tail 16
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 1> shard [64, 64] f16 amp_right standard align 32 tail 0
    // expected-error @+1 {{place-memory: cannot keep @c (128000 bytes) in a memory element apart from @a at 0xac000 (92176 bytes, elements [6, 7]) on tile 0: no free range of its memory class avoids those elements}}
    %c = tile.buffer @c output 0 on #tile.tiles<0 to 1> shard [1000, 64] f16 amp_output interleaved align 32 tail 0
    tile.kernel @amp_gemm_f16_init(%c[() -> (0)], %a[() -> (0)], %b[() -> (0)]) scalars [720] on #tile.tiles<0 to 1> iv() provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "r">
    func.return
  }
}

// -----

// A kernel the ABI registry does not know has no pointer roles to place.
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f16_r16"], scheduling = in_order, profiling = off>} {
  func.func @unknown_kernel() {
    %s = tile.buffer @s scratch on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
    tile.kernel @no_such_kernel(%s[() -> (0)], %s[() -> (4)]) scalars [1] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
    func.return
  }
}
// expected-error @unknown {{place-memory: tile.kernel @no_such_kernel: unknown kernel symbol 'no_such_kernel'; the ABI registry (device/kernels.py) knows: add, amp_gemm_f16_accum, amp_gemm_f16_init, amp_gemm_f16p32_accum, amp_gemm_f16p32_init, amp_gemm_f32_accum, amp_gemm_f32_init, amp_gemm_f8_accum, amp_gemm_f8_init, attention, attention_block_f16_accum, attention_block_f16_accum_masked, attention_block_f16_init, attention_block_f16_init_masked, attention_block_f32_accum, attention_block_f32_accum_masked, attention_block_f32_init, attention_block_f32_init_masked, attention_finish_f16, attention_finish_f32, attention_merge, convert_shard, copy_words, fill_zero, gather_round, gather_rows, gather_shard, gather_view, gather_view_round, gelu, gelu_tanh, layer_norm, layer_norm_apply, layer_norm_stats, view_shard}}
