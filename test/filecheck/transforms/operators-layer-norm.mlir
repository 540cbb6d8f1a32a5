// graph.layer_norm through every pass: whole rows on a tile, weight and bias whole on every tile
// of the output, eps as its f32 bits; following a GEMM's amp_output rows; keeping an input cut
// along the normalized axis (the column split).
// Each pass runs on its own, on the previous pass's printed output.
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4}' > %t.mid.mlir
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

// 8 rows over 4 tiles (layer_norm_split0), eps 1e-5 = f32 bits 0x3727c5ac (925353388).
func.func @rows(%x: tensor<8x16xf16>, %w: tensor<16xf16>, %b: tensor<16xf16>) -> tensor<8x16xf16> {
  %n = graph.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
  func.return %n : tensor<8x16xf16>
}
// MID-LABEL: func.func @rows
// MID-NEXT:  %n = mid.layer_norm %x, %w, %b eps 1.000000e-05 plan #mid.plan<"layer_norm_split0", #mid.dispatch<pointwise, init = @layer_norm>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<weight : input, #mid.format<f16, row_major, [1 x 1 pad], replication = 4, group = 4, standard>, align = 8, tail = 0>, #mid.operand<bias : input, #mid.format<f16, row_major, [1 x 1 pad], replication = 4, group = 4, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f16, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>], distinct = [], alias = none>
// CONV-LABEL: func.func @rows
// CONV-NOT:   mid.rearrange
// CONV:       func.return
// TILE-LABEL: func.func @rows()
// TILE-NEXT:  %x = tile.buffer @x input 0 on #tile.tiles<0 to 4> shard [2, 16] f16
// TILE-NEXT:  %w = tile.buffer @w input 1 on #tile.tiles<0 to 4> shard [16] f16
// TILE-NEXT:  %b = tile.buffer @b input 2 on #tile.tiles<0 to 4> shard [16] f16
// TILE-NEXT:  %n = tile.buffer @n output 0 on #tile.tiles<0 to 4> shard [2, 16] f16
// TILE-NEXT:  tile.kernel @layer_norm(%n[() -> (0)], %x[() -> (0)], %w[() -> (0)], %b[() -> (0)]) scalars [925353388, 2, 8, 16, 1, 1, 4, 1, 1, 1, 1, 4, 1, 0, 0, 2, 8, 16, 1, 1, 4, 1, 1, 1, 1, 4, 1, 0, 0, 1, 16, 1, 1, 1, 4, 4, 1, 0, 0, 1, 16, 1, 1, 1, 4, 4, 1, 0, 0] on #tile.tiles<0 to 4> iv() provenance #tile.provenance<op = "graph.layer_norm %n", value = "%n", reason = "layer_norm, one call per output shard (whole rows)">
// TILE-NEXT:  func.return
// PLACED-LABEL: func.func @rows()
// PLACED-NEXT:  %x = tile.buffer @x {{.*}} address 0x54000
// PLACED-NEXT:  %w = tile.buffer @w {{.*}} address 0x54040
// PLACED-NEXT:  %b = tile.buffer @b {{.*}} address 0x54060
// PLACED-NEXT:  %n = tile.buffer @n {{.*}} address 0x54080
// ROWS-LABEL: func.func @rows()
// ROWS-NOT:   tile.exchange
// ROWS:       func.return
// GENERIC-LABEL: "func.func"() <{sym_name = "rows"
// GENERIC:       %n = "mid.layer_norm"(%x, %w, %b) <{eps = 1.000000e-05 : f64, plan = #mid.plan<"layer_norm_split0",
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "rows"
// TILE-GENERIC:  "tile.kernel"(%n, %x, %w, %b) <{callee = @layer_norm, {{.*}}scalars = array<i64: 925353388, 2, 8, 16,

// -----

// After a GEMM: the amp_output row shards keep whole rows (64 x 1 on the last axis), so the
// layer norm follows them (layer_norm_follow0) in interleaved memory; eps 1e-3 = 0x3a83126f.
func.func @after_gemm(%a: tensor<64x64xf32>, %m: tensor<64x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64x64xf32> {
  %y = graph.gemm %a, %m : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %n = graph.layer_norm %y, %w, %b eps 1.0e-03 : (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<64x64xf32>
  func.return %n : tensor<64x64xf32>
}
// MID-LABEL: func.func @after_gemm
// MID:       %n = mid.layer_norm %y, %w, %b eps 1.000000e-03 plan #mid.plan<"layer_norm_follow0", #mid.dispatch<pointwise, init = @layer_norm>, accumulate = f32, amp = none, operands = [#mid.operand<src : input, #mid.format<f32, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>, align = 8, tail = 0>, #mid.operand<weight : input, #mid.format<f32, row_major, [64 x 1 pad], replication = 4, group = 4, standard>, align = 8, tail = 0>
// CONV-LABEL: func.func @after_gemm
// CONV-NOT:   mid.rearrange
// CONV:       func.return
// TILE-LABEL: func.func @after_gemm()
// TILE:       tile.kernel @layer_norm(%n[() -> (0)], %y[() -> (0)], %w[() -> (0)], %b[() -> (0)]) scalars [981668463, 2, 64, 64, 16, 64, 4, 1, 1, 1, 1, 4, 0, 3, 0, 2, 64, 64, 16, 64, 4, 1, 1, 1, 1, 4, 0, 3, 0, 1, 64, 64, 1, 1, 4, 4, 0, 0, 0, 1, 64, 64, 1, 1, 4, 4, 0, 0, 0] on #tile.tiles<0 to 4>
// TILE-NEXT:  func.return
// PLACED-LABEL: func.func @after_gemm()
// PLACED:       %n = tile.buffer @n output 0 on #tile.tiles<0 to 4> shard [16, 64] f32 amp_output interleaved {{.*}} address 0xac000
// PLACED-NEXT:  %y = tile.buffer @y scratch {{.*}} interleaved {{.*}} address 0xad000
// ROWS-LABEL: func.func @after_gemm()
// ROWS:       schedule #tile.schedule<rows = [@x0_send, @x0_receive]
// ROWS-NOT:   rows = [@x1_send
// ROWS:       func.return
// GENERIC-LABEL: "func.func"() <{sym_name = "after_gemm"
// GENERIC:       "mid.layer_norm"(%y, %w, %b) <{eps = 1.000000e-03 : f64, plan = #mid.plan<"layer_norm_follow0"
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "after_gemm"
// TILE-GENERIC:  callee = @layer_norm, {{.*}}scalars = array<i64: 981668463,

// -----
// gelu cuts the 64 columns of the one row over the 4 tiles; the layer norm keeps that cut (the
// column split, `layer_norm_cols_follow0`: weight and bias cut as the columns): each tile
// computes its columns' mean and M2, 4 rounds send every tile's block to the other three, and
// `layer_norm_apply` merges them. Nothing is gathered onto one tile
// (`test/pytest/test_layer_norm_columns.py` runs it on the device model).
func.func @cut_last_axis(%x: tensor<1x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<1x64xf32> {
  %g = graph.gelu %x : tensor<1x64xf32> -> tensor<1x64xf32>
  %n = graph.layer_norm %g, %w, %b eps 1.0e-05 : (tensor<1x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x64xf32>
  func.return %n : tensor<1x64xf32>
}
// MID-LABEL: func.func @cut_last_axis
// MID:       %g = mid.gelu %x plan #mid.plan<"gelu_split1"
// MID-NEXT:  %n = mid.layer_norm %g, %w, %b eps 1.000000e-05 plan #mid.plan<"layer_norm_cols_follow0", #mid.dispatch<pointwise, init = @layer_norm_apply>, {{.*}}#mid.operand<weight : input, #mid.format<f32, row_major, [1 x 4 pad], replication = 1, group = 4, standard>
// CONV-LABEL: func.func @cut_last_axis
// CONV-NOT:   mid.rearrange
// CONV:       mid.layer_norm %g,
// TILE-LABEL: func.func @cut_last_axis()
// TILE:       %n_stats = tile.buffer @n_stats scratch on #tile.tiles<0 to 4> shard [1, 8] f32 row_major standard
// TILE:       tile.kernel @layer_norm_stats(%n_stats[() -> (0)], %g[() -> (0)]) scalars [2, 1, 32, 1, 8, 1, 4, {{.*}}] on #tile.tiles<0 to 4>
// TILE-NEXT:  tile.loop %r = 0 to 4 provenance #tile.provenance<op = "graph.layer_norm %n", value = "%n", reason = "the row group's column parts, one a round"> {
// TILE-NEXT:    tile.exchange 2 words from %n_stats[(d0) -> ((d0 * 8))] on tile (d0, d1) -> (d0) to %n_stats[(d0) -> ((d0 * 8))] on #tile.tiles<0 to 4> groups 1 shift (d0, d1) -> ((d1 * 4)) iv(%r)
// TILE-NEXT:  }
// TILE-NEXT:  tile.kernel @layer_norm_apply(%n[() -> (0)], %g[() -> (0)], %w[() -> (0)], %b[() -> (0)], %n_stats[() -> (0)]) scalars [925353388, {{.*}}] on #tile.tiles<0 to 4>
// PLACED-LABEL: func.func @cut_last_axis()
// PLACED:       %n_stats = tile.buffer @n_stats scratch on #tile.tiles<0 to 4> {{.*}} address
// Round r: tile r sends its block to the other three (each a receiver in the rounds it does
// not send).
// ROWS-LABEL: func.func @cut_last_axis()
// ROWS:       tile.exchange 2 words {{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive]
// ROWS:       exchange.row @x0_send provenance "graph.layer_norm %n %n: column part r's statistics to its row group" {
// GENERIC-LABEL: "func.func"() <{sym_name = "cut_last_axis"
// GENERIC:       "mid.layer_norm"(%g, %w, %b) <{eps = 1.000000e-05 : f64, plan = #mid.plan<"layer_norm_cols_follow0"
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "cut_last_axis"
// TILE-GENERIC:  "tile.kernel"(%n_stats, %g) <{callee = @layer_norm_stats

// -----

// With two rows the gelu cuts the rows instead (its look-ahead prices the layer norm's gather
// into whole rows, `LookAhead.consumers_cycles`), and the layer norm follows it: no gather.
func.func @rows_before_a_layer_norm(%x: tensor<2x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x64xf32> {
  %g = graph.gelu %x : tensor<2x64xf32> -> tensor<2x64xf32>
  %n = graph.layer_norm %g, %w, %b eps 1.0e-05 : (tensor<2x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  func.return %n : tensor<2x64xf32>
}
// MID-LABEL: func.func @rows_before_a_layer_norm
// MID:       %g = mid.gelu %x plan #mid.plan<"gelu_split0"
// MID-NEXT:  %n = mid.layer_norm %g, %w, %b eps 1.000000e-05 plan #mid.plan<"layer_norm_follow0"
