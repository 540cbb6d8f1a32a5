// graph.gemm with transpose_lhs / transpose_rhs through every pass: a transposed argument is
// written by the host straight into the transposed AMP layout (amp_left_t / amp_right_t) the
// plan reads; a transposed intermediate value is rearranged into it by a gather.
// Each pass runs on its own, on the previous pass's printed output.
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16,amp_gemm_f32_r16}' > %t.mid.mlir
// RUN: ipu-opt %t.mid.mlir --split-input-file -p insert-conversions > %t.conv.mlir
// RUN: ipu-opt %t.conv.mlir --split-input-file -p mid-to-tile > %t.tile.mlir
// RUN: ipu-opt %t.tile.mlir --split-input-file -p place-memory > %t.placed.mlir
// RUN: ipu-opt %t.placed.mlir --split-input-file -p schedule-exchange > %t.rows.mlir
// RUN: filecheck %s --check-prefix=MID < %t.mid.mlir
// RUN: filecheck %s --check-prefix=CONV < %t.conv.mlir
// RUN: filecheck %s --check-prefix=TILE < %t.tile.mlir
// RUN: filecheck %s --check-prefix=PLACED < %t.placed.mlir
// RUN: filecheck %s --check-prefix=ROWS < %t.rows.mlir
// Generic form at every level: printed generic, parsed back and printed again, the same text.
// RUN: ipu-opt %t.mid.mlir --split-input-file --print-op-generic > %t.mid.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC < %t.mid.generic.mlir
// RUN: ipu-opt %t.mid.generic.mlir --split-input-file > %t.mid.again.mlir
// RUN: diff %t.mid.mlir %t.mid.again.mlir
// RUN: ipu-opt %t.conv.mlir --split-input-file --print-op-generic | ipu-opt --split-input-file > %t.conv.again.mlir
// RUN: diff %t.conv.mlir %t.conv.again.mlir
// RUN: ipu-opt %t.tile.mlir --split-input-file --print-op-generic > %t.tile.generic.mlir
// RUN: filecheck %s --check-prefix=TILE-GENERIC < %t.tile.generic.mlir
// RUN: ipu-opt %t.tile.generic.mlir --split-input-file > %t.tile.again.mlir
// RUN: diff %t.tile.mlir %t.tile.again.mlir
// RUN: ipu-opt %t.rows.mlir --split-input-file --print-op-generic | ipu-opt --split-input-file > %t.rows.again.mlir
// RUN: diff %t.rows.mlir %t.rows.again.mlir

// %a^T @ %b, then %l @ %c^T; %l is also returned, so the second GEMM reads a local repack of it
// (amp_output -> amp_left on the same tiles: one convert_shard).
func.func @transposed_args(%a: tensor<64x32xf16>, %b: tensor<64x64xf16>, %c: tensor<128x64xf16>) -> (tensor<32x64xf16>, tensor<32x128xf16>) {
  %l = graph.gemm %a, %b transpose_lhs : (tensor<64x32xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  %r = graph.gemm %l, %c transpose_rhs : (tensor<32x64xf16>, tensor<128x64xf16>) -> tensor<32x128xf16>
  func.return %l, %r : tensor<32x64xf16>, tensor<32x128xf16>
}
// MID-LABEL: func.func @transposed_args
// MID-SAME:  (%a: tensor<64x32xf16, #mid.format<f16, amp_left_t, [64 x 1 pad, 16 x 2 pad], replication = 1, group = 4, standard>>, %b: tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, %c: tensor<128x64xf16, #mid.format<f16, amp_right_t, [64 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>)
// MID-NEXT:  %l = mid.gemm %a, %b transpose_lhs plan #mid.plan<"amp_gemm_f16_r16", {{.*}}operands = [#mid.operand<lhs : left, #mid.format<f16, amp_left_t, [64 x 1 pad, 16 x 2 pad], replication = 1, group = 4, standard>, align = 32, tail = 16>, #mid.operand<rhs : right, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 0>, #mid.operand<out : output, #mid.format<f16, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>, align = 32, tail = 0>]
// MID-NEXT:  %[[L:.*]] = builtin.unrealized_conversion_cast %l
// MID-NEXT:  %r = mid.gemm %[[L]], %c transpose_rhs plan #mid.plan<"amp_gemm_f16_r16", {{.*}}#mid.operand<rhs : right, #mid.format<f16, amp_right_t, [64 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 0>
// MID-NEXT:  func.return %l, %r
// CONV-LABEL: func.func @transposed_args
// CONV:       %l_1 = mid.rearrange %l {ipu.for = "graph.gemm %r"} : tensor<32x64xf16, #mid.format<f16, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>> -> tensor<32x64xf16, #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CONV-NEXT:  %r = mid.gemm %l_1, %c transpose_rhs

// TILE-LABEL: func.func @transposed_args()
// TILE-NEXT:  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [64, 16] f16 amp_left_t standard align 32 tail 16
// TILE-NEXT:  %b = tile.buffer @b input 1 on #tile.tiles<0 to 1> shard [64, 64] f16 amp_right standard
// TILE-NEXT:  %c = tile.buffer @c input 2 on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right_t standard
// TILE:       tile.kernel @amp_gemm_f16_init(%l[(d0) -> ((d0 * 2048))], %a[(d0) -> (0)], %l_rhs_slot[(d0) -> (0)]) scalars [16] on #tile.tiles<0 to 2>
// TILE:       tile.kernel @convert_shard(%l_1[() -> (0)], %l[() -> (0)]) scalars [2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 4, 1, 1, 0, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 4, 1, 3, 0] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm %r", value = "%l", reason = "repack each shard on its tile">
// TILE-NEXT:  tile.loop %j_1 = 0 to 2 provenance #tile.provenance<op = "graph.gemm %r", value = "%r", reason = "output-column blocks j"> {
// TILE-NEXT:    tile.exchange 2048 words from %c[(d0) -> (0)] on tile (d0) -> (d0) to %r_rhs_slot[(d0) -> (0)] on #tile.tiles<0 to 2> pairs iv(%j_1)
// TILE-NEXT:    tile.kernel @copy_words(%r_rhs_slot[(d0) -> (0)], %c[(d0) -> (0)]) scalars [2048] on #tile.tiles<0 to 2> only (d0) -> (d0) iv(%j_1)
// TILE-NEXT:    tile.kernel @amp_gemm_f16_init(%r[(d0) -> ((d0 * 2048))], %l_1[(d0) -> (0)], %r_rhs_slot[(d0) -> (0)]) scalars [16] on #tile.tiles<0 to 2> iv(%j_1)
// TILE-NEXT:  }
// TILE-NEXT:  func.return

// PLACED-LABEL: func.func @transposed_args()
// PLACED-NEXT:  %a = tile.buffer @a {{.*}} address 0x54000
// PLACED-NEXT:  %b = tile.buffer @b {{.*}} address 0x5c000
// PLACED-NEXT:  %c = tile.buffer @c {{.*}} address 0x5e000
// PLACED-NEXT:  %l = tile.buffer @l output 0 {{.*}} address 0xac000
// PLACED-NEXT:  %r = tile.buffer @r output 1 {{.*}} address 0xac800
// ROWS-LABEL: func.func @transposed_args()
// ROWS:       tile.exchange 2048 words from %c{{.*}} schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x1_send, 0, "sctl", array<i64: 5, 6>>, #tile.patch<@x1_send, 1, "sctl", array<i64: 5, 6>>, #tile.patch<@x1_receive, 0, "xpic", array<i64: 8192, 8193>>], row_address = 0x4c010, placed = [src 0x5e000, dst 0x5c000]
// ROWS:       exchange.row @x1_send provenance "graph.gemm %r %c: rhs block to output-row tiles" {
// ROWS-NEXT:    exchange.send 63, 0x17800, 5
// GENERIC-LABEL: "func.func"() <{sym_name = "transposed_args"
// GENERIC:       %l = "mid.gemm"(%a, %b) <{transpose_lhs, plan = #mid.plan<"amp_gemm_f16_r16"
// GENERIC:       %r = "mid.gemm"(%{{.*}}, %c) <{transpose_rhs, plan = #mid.plan<"amp_gemm_f16_r16"
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "transposed_args"
// TILE-GENERIC:  "tile.buffer"() <{sym_name = "a", kind = #tile<buffer_kind input>, tiles = #tile.tiles<0 to 2>, shape = array<i64: 64, 16>, precision = #mid<precision f16>, order = #mid<order amp_left_t>

// -----

// A transposed intermediate: %m comes out of a GEMM in amp_output; %m^T @ %w reads it in
// amp_left_t, so a rearrangement gathers %m's 4 row shards and repacks them transposed
// (gather_shard with the amp_left_t descriptor, order 4).
func.func @transposed_value(%a: tensor<64x32xf32>, %b: tensor<32x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %m = graph.gemm %a, %b : (tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<64x64xf32>
  %t = graph.gemm %m, %w transpose_lhs : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %t : tensor<64x64xf32>
}
// MID-LABEL: func.func @transposed_value
// MID:       %[[M:.*]] = builtin.unrealized_conversion_cast %m : tensor<64x64xf32, #mid.format<f32, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>> to tensor<64x64xf32, #mid.format<f32, amp_left_t, [64 x 1 pad, 16 x 4 pad], replication = 1, group = 4, standard>> {ipu.for = "graph.gemm %t"}
// MID-NEXT:  %t = mid.gemm %[[M]], %w transpose_lhs plan #mid.plan<"amp_gemm_f32_r16"
// CONV-LABEL: func.func @transposed_value
// CONV:       %m_1 = mid.rearrange %m {ipu.for = "graph.gemm %t"} : {{.*}} -> tensor<64x64xf32, #mid.format<f32, amp_left_t, [64 x 1 pad, 16 x 4 pad], replication = 1, group = 4, standard>>
// TILE-LABEL: func.func @transposed_value()
// TILE:       %m_1 = tile.buffer @m_1 scratch on #tile.tiles<0 to 4> shard [64, 16] f32 amp_left_t standard align 32 tail 16
// TILE:       tile.loop %r = 0 to 4 provenance #tile.provenance<op = "graph.gemm %t", value = "%m", reason = "rounds of input shards sent at once"> {
// TILE-NEXT:    tile.exchange 1024 words from %m[(d0) -> (0)] on tile (d0, d1) -> (d0) to %m_1_gather_slot[(d0) -> (0)] on #tile.tiles<0 to 4> groups 1 shift (d0, d1) -> (0) iv(%r)
// TILE-NEXT:    tile.loop %g = 0 to 1
// TILE-NEXT:      tile.kernel @copy_words(%m_1_gather_slot[(d0, d1) -> (0)], %m[(d0, d1) -> (0)]) scalars [1024]
// TILE-NEXT:      tile.kernel @gather_shard(%m_1[(d0, d1) -> (0)], %m_1_gather_slot[(d0, d1) -> (0)]) iv_scalars [(d0, d1) -> (d0)] scalars [2, 64, 64, 64, 16, 1, 4, 1, 1, 1, 4, 0, 4, 0, 2, 64, 64, 16, 64, 4, 1, 1, 1, 1, 4, 0, 3, 0] on #tile.tiles<0 to 4> iv(%r, %g)
// TILE-NEXT:    }
// TILE-NEXT:  }
// TILE-NEXT:  tile.loop %j_1 = 0 to 1
// TILE:         tile.kernel @amp_gemm_f32_init(%t[(d0) -> ((d0 * 4096))], %m_1[(d0) -> (0)], %t_rhs_slot[(d0) -> (0)]) scalars [16] on #tile.tiles<0 to 4>
// PLACED-LABEL: func.func @transposed_value()
// PLACED:       %m_1 = tile.buffer @m_1 {{.*}} address 0x54000
// PLACED-NEXT:  %m_1_gather_slot = tile.buffer @m_1_gather_slot {{.*}} address 0x5c000
// ROWS-LABEL: func.func @transposed_value()
// ROWS:       tile.exchange 1024 words from %m{{.*}} schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0, 0, 0, 0], receiver_rows = [1, 1, 1, 1], patches = [#tile.patch<@x1_send, 0, "sctl", array<i64: 1, 3, 3, 2>>, #tile.patch<@x1_send, 1, "sctl", array<i64: 1, 3, 3, 2>>, #tile.patch<@x1_receive, 0, "xpic", array<i64: 0, 1, 2, 3>>, #tile.patch<@x1_receive, 1, "events_m1", array<i64: 1031, 1030, 1030, 1031>>], row_address = 0x4c010, placed = [src 0xac000, dst 0x5c000]
// ROWS:       exchange.row @x1_send provenance "graph.gemm %t %m: input shards of round r, each to the result tiles that hold its elements" {
// ROWS-NEXT:    exchange.send 63, 0x2b000, 1
// ROWS-NEXT:    exchange.sendoff 959, 0x0, 1
// GENERIC-LABEL: "func.func"() <{sym_name = "transposed_value"
// GENERIC:       "mid.gemm"(%{{.*}}, %w) <{transpose_lhs, plan = #mid.plan<"amp_gemm_f32_r16"
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "transposed_value"
// TILE-GENERIC:  "tile.kernel"(%m_1, %m_1_gather_slot, %r, %g) <{callee = @gather_shard
