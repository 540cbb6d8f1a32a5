// graph.gelu (exact, erf form) through every pass: one `gelu` call per shard with the
// descriptors of out and src; FP8 storage with a different scale in and out.
// Each pass runs on its own, on the previous pass's printed output.
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16}' > %t.mid.mlir
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

// Following the GEMM's amp_output (2 row tiles) would leave 2 of the 4 tiles idle; cutting the
// 32 rows over the 4 tiles (gelu_split0) and gathering %m is cheaper: each 16-row shard of %m
// feeds two of the 8-row tiles, so both shards travel in one phase (two groups).
func.func @after_gemm(%a: tensor<32x64xf16>, %w: tensor<64x64xf16>) -> tensor<32x64xf16> {
  %m = graph.gemm %a, %w : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  %g = graph.gelu %m : tensor<32x64xf16> -> tensor<32x64xf16>
  func.return %g : tensor<32x64xf16>
}
// MID-LABEL: func.func @after_gemm
// MID:       %m = mid.gemm %a, %w plan #mid.plan<"amp_gemm_f16_r16"
// MID-NEXT:  %[[B:.*]] = builtin.unrealized_conversion_cast %m : tensor<32x64xf16, #mid.format<f16, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>> to tensor<32x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>> {ipu.for = "graph.gelu %g"}
// MID-NEXT:  %g = mid.gelu %[[B]] plan #mid.plan<"gelu_split0", #mid.dispatch<pointwise, init = @gelu>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>], distinct = [], alias = src>
// CONV-LABEL: func.func @after_gemm
// CONV:       %m_1 = mid.rearrange %m {ipu.for = "graph.gelu %g"} : tensor<32x64xf16, #mid.format<f16, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>> -> tensor<32x64xf16, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>
// CONV-NEXT:  %g = mid.gelu %m_1 plan #mid.plan<"gelu_split0"

// The gather of %m's 2 amp_output shards (512 words each) in one round of two groups (shard g
// from tile g to tiles 2g, 2g + 1), one take in which each tile finds its shard from its id
// (first_source 0, first_dest 0, source_step 1, dest_step 2, groups 2, takes_own 0, the group
// one digit: group_inner 2, outer_step 0; group_span 4, each group's window 2 tiles, and
// outer_dest_step 1, outer_span 1, the outer digit always 0; tile 0, whose source is
// itself, skips it), tile 0's take of its own shard's rows from %m itself (its source is its
// own tile: groups 1, takes_own 1, group_span 1, outer 1 and 1), then one gelu call per row
// shard:
// descriptors [32, 64] cut 4 x 1, f16 (1), row_major (0).
// TILE-LABEL: func.func @after_gemm()
// TILE:       tile.loop %r = 0 to 1 provenance #tile.provenance<op = "graph.gelu %g", value = "%m", reason = "rounds of input shards sent at once"> {
// TILE-NEXT:    tile.exchange 512 words from %m[(d0) -> (0)] on tile (d0, d1) -> (d1) to %m_1_gather_slot[(d0) -> (0)] on #tile.tiles<0 to 2> groups 2 shift (d0, d1) -> ((d1 * 2)) iv(%r)
// TILE-NEXT:    tile.kernel @gather_round(%m_1[(d0) -> (0)], %m_1_gather_slot[(d0) -> (0)]) iv_scalars [(d0) -> (0), (d0) -> (0)] scalars [1, 2, 2, 0, 2, 0, 4, 1, 1, 2, 32, 64, 1, 1, 4, 1, 1, 1, 1, 4, 1, 0, 0, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 4, 1, 3, 0] on #tile.tiles<0 to 4> iv(%r)
// TILE-NEXT:  }
// TILE-NEXT:  tile.kernel @gather_round(%m_1[() -> (0)], %m[() -> (0)]) scalars [0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 2, 32, 64, 1, 1, 4, 1, 1, 1, 1, 4, 1, 0, 0, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 4, 1, 3, 0] on #tile.tiles<0 to 1> iv()
// TILE-NEXT:  tile.kernel @gelu(%g[() -> (0)], %m_1[() -> (0)]) scalars [2, 32, 64, 1, 1, 4, 1, 1, 1, 1, 4, 1, 0, 0, 2, 32, 64, 1, 1, 4, 1, 1, 1, 1, 4, 1, 0, 0] on #tile.tiles<0 to 4> iv() provenance #tile.provenance<op = "graph.gelu %g", value = "%g", reason = "exact gelu, one call per shard">
// TILE-NEXT:  func.return

// PLACED-LABEL: func.func @after_gemm()
// PLACED:       %g = tile.buffer @g output 0 on #tile.tiles<0 to 4> shard [8, 64] f16 row_major standard align 8 tail 0 {{.*}} address 0x54000
// PLACED:       %m = tile.buffer @m scratch on #tile.tiles<0 to 2> shard [16, 64] f16 amp_output interleaved {{.*}} address 0xac000
// PLACED:       %m_1 = tile.buffer @m_1 scratch {{.*}} address 0x54400
// PLACED-NEXT:  %m_1_gather_slot = tile.buffer @m_1_gather_slot scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output standard align 8 tail 0 address 0x5c000

// The gather's rows: 512 words from %m (0xac000 / 4 = 0x2b000) = send 64 + sendoff 448. Tile 1
// sends shard 1 while it receives shard 0 from tile 0: its row is full duplex.
// ROWS-LABEL: func.func @after_gemm()
// ROWS:       tile.exchange 512 words {{.*}} schedule #tile.schedule<rows = [@x1_send, @x1_receive, @x1_duplex], row_loops = [], sender_rows = [0, 2], receiver_rows = [1, 1], patches = [#tile.patch<@x1_receive, 0, "xpic", array<i64: 0, 1>>, #tile.patch<@x1_receive, 1, "events_m1", array<i64: 517, 518>>], row_address = 0x4c010, placed = [src 0xac000, dst 0x5c000]
// ROWS:       exchange.row @x1_send provenance "graph.gelu %g %m: input shards of round r, each to the result tiles that hold its elements" {
// ROWS-NEXT:    exchange.send 63, 0x2b000, 1
// ROWS-NEXT:    exchange.sendoff 447, 0x0, 1
// ROWS-NEXT:  }
// ROWS-NEXT:  exchange.row @x1_receive provenance "graph.gelu %g %m: input shards of round r, each to the result tiles that hold its elements" {
// ROWS-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x17000
// ROWS-NEXT:    exchange.delay 517
// ROWS-NEXT:  }
// ROWS-NEXT:  exchange.row @x1_duplex provenance "graph.gelu %g %m: input shards of round r, each to the result tiles that hold its elements" {
// ROWS-NEXT:    exchange.sendpicp 63, 0x2b000, 1, 0, xpic = 0x0, pic = 0x17000
// ROWS-NEXT:    exchange.sendoff 447, 0x0, 1
// ROWS-NEXT:    exchange.delay 6

// GENERIC-LABEL: "func.func"() <{sym_name = "after_gemm"
// GENERIC:       %g = "mid.gelu"(%{{.*}}) <{plan = #mid.plan<"gelu_split0", #mid.dispatch<pointwise, init = @gelu>
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "after_gemm"
// TILE-GENERIC:  "tile.kernel"(%g, %m_1) <{callee = @gelu, offsets = [affine_map<() -> (0)>, affine_map<() -> (0)>], scalars = array<i64: 2, 32, 64, 1, 1, 4, 1, 1, 1, 1, 4, 1, 0, 0,

// -----

// FP8 in, FP8 out with another scale: the kernel reads q * 2^1 and rounds once to q * 2^-2
// (precision code 2, the scale last in each descriptor); no cast op. 10 columns over 4 tiles:
// chunks of 3, padded to 12.
func.func @fp8(%x: tensor<3x10xf8E4M3FNUZ, #graph.fp8_scale<1>>) -> tensor<3x10xf8E4M3FNUZ, #graph.fp8_scale<-2>> {
  %g = graph.gelu %x : tensor<3x10xf8E4M3FNUZ, #graph.fp8_scale<1>> -> tensor<3x10xf8E4M3FNUZ, #graph.fp8_scale<-2>>
  func.return %g : tensor<3x10xf8E4M3FNUZ, #graph.fp8_scale<-2>>
}
// MID-LABEL: func.func @fp8(%x: tensor<3x10xf8E4M3FNUZ, #mid.format<f8f143<1>, row_major, [1 x 1 pad, 1 x 4 pad], replication = 1, group = 4, standard>>) -> tensor<3x10xf8E4M3FNUZ, #mid.format<f8f143<-2>, row_major, [1 x 1 pad, 1 x 4 pad], replication = 1, group = 4, standard>>
// MID-NEXT:  %g = mid.gelu %x plan #mid.plan<"gelu_split1", #mid.dispatch<pointwise, init = @gelu>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #mid.format<f8f143<1>, row_major, [1 x 1 pad, 1 x 4 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f8f143<-2>, row_major, [1 x 1 pad, 1 x 4 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>]
// CONV-LABEL: func.func @fp8
// CONV-NOT:   mid.cast_precision
// CONV:       func.return
// TILE-LABEL: func.func @fp8()
// TILE-NEXT:  %x = tile.buffer @x input 0 on #tile.tiles<0 to 4> shard [3, 3] f8f143 row_major standard align 8 tail 0
// TILE-NEXT:  %g = tile.buffer @g output 0 on #tile.tiles<0 to 4> shard [3, 3] f8f143 row_major standard align 8 tail 0
// TILE-NEXT:  tile.kernel @gelu(%g[() -> (0)], %x[() -> (0)]) scalars [2, 3, 10, 1, 1, 1, 4, 1, 1, 1, 4, 2, 0, -2, 2, 3, 10, 1, 1, 1, 4, 1, 1, 1, 4, 2, 0, 1] on #tile.tiles<0 to 4>
// PLACED-LABEL: func.func @fp8()
// PLACED-NEXT:  %x = tile.buffer @x {{.*}} address 0x54000
// PLACED-NEXT:  %g = tile.buffer @g {{.*}} address 0x54010
// ROWS-LABEL: func.func @fp8()
// ROWS-NOT:   tile.exchange
// ROWS:       func.return
// GENERIC-LABEL: "func.func"() <{sym_name = "fp8"
// GENERIC:       "mid.gelu"(%x) <{plan = #mid.plan<"gelu_split1"
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "fp8"
// TILE-GENERIC:  "tile.buffer"() <{sym_name = "x", kind = #tile<buffer_kind input>, tiles = #tile.tiles<0 to 4>, shape = array<i64: 3, 3>, precision = #mid<precision f8f143>

// -----

// The tanh form: `approximate tanh` is carried to mid.gelu, whose plan calls `gelu_tanh` (the
// same descriptors as `gelu`); the generic form holds it as the graph dialect's property.
func.func @tanh(%x: tensor<8x64xf16>) -> tensor<8x64xf16> {
  %g = graph.gelu %x approximate tanh : tensor<8x64xf16> -> tensor<8x64xf16>
  func.return %g : tensor<8x64xf16>
}
// MID-LABEL: func.func @tanh
// MID-NEXT:  %g = mid.gelu %x approximate tanh plan #mid.plan<"gelu_split0", #mid.dispatch<pointwise, init = @gelu_tanh>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>], distinct = [], alias = src>
// CONV-LABEL: func.func @tanh
// CONV-NEXT:  %g = mid.gelu %x approximate tanh plan
// TILE-LABEL: func.func @tanh()
// TILE:       tile.kernel @gelu_tanh(%g[() -> (0)], %x[() -> (0)]) scalars [2, 8, 64, 1, 1, 4, 1, 1, 1, 1, 4, 1, 0, 0, 2, 8, 64, 1, 1, 4, 1, 1, 1, 1, 4, 1, 0, 0] on #tile.tiles<0 to 4> iv() provenance #tile.provenance<op = "graph.gelu %g", value = "%g", reason = "tanh gelu, one call per shard">
// PLACED-LABEL: func.func @tanh()
// PLACED:       tile.kernel @gelu_tanh
// ROWS-LABEL: func.func @tanh()
// ROWS-NOT:   tile.exchange
// ROWS:       func.return
// GENERIC-LABEL: "func.func"() <{sym_name = "tanh"
// GENERIC:       "mid.gelu"(%x) <{approximate = #graph<gelu_approximation tanh>, plan = #mid.plan<"gelu_split0", #mid.dispatch<pointwise, init = @gelu_tanh>
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "tanh"
// TILE-GENERIC:  "tile.kernel"(%g, %x) <{callee = @gelu_tanh
