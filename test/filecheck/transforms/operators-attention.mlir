// graph.attention through every pass: causal with the default scale and unmasked with an
// explicit scale; the head-sharded plan and the query-row plan (fewer heads than tiles); one
// `attention` call per output shard with `causal`, the scale's f32 bits and four descriptors.
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

// 2 heads on 4 tiles: the query rows are cut (attention_split1: 16 rows, 4 per tile), key and
// value whole on every tile (replication = 4). Causal, default scale 1/sqrt(8).
func.func @causal_rows(%q: tensor<2x16x8xf16>, %k: tensor<2x16x8xf16>, %v: tensor<2x16x8xf16>) -> tensor<2x16x8xf16> {
  %o = graph.attention %q, %k, %v causal : (tensor<2x16x8xf16>, tensor<2x16x8xf16>, tensor<2x16x8xf16>) -> tensor<2x16x8xf16>
  func.return %o : tensor<2x16x8xf16>
}
// MID-LABEL: func.func @causal_rows
// MID-SAME:  (%q: tensor<2x16x8xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>, %k: tensor<2x16x8xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 4, group = 4, standard>>, %v: tensor<2x16x8xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 4, group = 4, standard>>)
// MID-NEXT:  %o = mid.attention %q, %k, %v causal scale 0.35355339059327373 plan #mid.plan<"attention_split1", #mid.dispatch<head_sharded, init = @attention>, accumulate = f32, amp = none, operands = [#mid.operand<query : input, #mid.format<f16, row_major, [1 x 1 pad, 1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<key : input, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 4, group = 4, standard>, align = 8, tail = 0>, #mid.operand<value : input, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 4, group = 4, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f16, row_major, [1 x 1 pad, 1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>], distinct = [], alias = none>
// CONV-LABEL: func.func @causal_rows
// CONV-NOT:   mid.rearrange
// CONV:       func.return

// Scalars: causal 1, scale bits 0x3eb504f3 (1052050675), then out, query, key, value.
// TILE-LABEL: func.func @causal_rows()
// TILE-NEXT:  %q = tile.buffer @q input 0 on #tile.tiles<0 to 4> shard [2, 4, 8] f16 row_major
// TILE-NEXT:  %k = tile.buffer @k input 1 on #tile.tiles<0 to 4> shard [2, 16, 8] f16 row_major
// TILE-NEXT:  %v = tile.buffer @v input 2 on #tile.tiles<0 to 4> shard [2, 16, 8] f16 row_major
// TILE-NEXT:  %o = tile.buffer @o output 0 on #tile.tiles<0 to 4> shard [2, 4, 8] f16 row_major
// TILE-NEXT:  tile.kernel @attention(%o[() -> (0)], %q[() -> (0)], %k[() -> (0)], %v[() -> (0)]) scalars [1, 1052050675, 3, 2, 16, 8, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1, 4, 1, 0, 0, 3, 2, 16, 8, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1, 4, 1, 0, 0, 3, 2, 16, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 1, 0, 0, 3, 2, 16, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 1, 0, 0] on #tile.tiles<0 to 4> iv() provenance #tile.provenance<op = "graph.attention %o", value = "%o", reason = "attention, one call per output shard">
// TILE-NEXT:  func.return
// PLACED-LABEL: func.func @causal_rows()
// PLACED-NEXT:  %q = tile.buffer @q {{.*}} address 0x54000
// PLACED-NEXT:  %k = tile.buffer @k {{.*}} address 0x54080
// PLACED-NEXT:  %v = tile.buffer @v {{.*}} address 0x54280
// PLACED-NEXT:  %o = tile.buffer @o {{.*}} address 0x54480
// ROWS-LABEL: func.func @causal_rows()
// ROWS-NOT:   tile.exchange
// ROWS:       func.return
// GENERIC-LABEL: "func.func"() <{sym_name = "causal_rows"
// GENERIC:       %o = "mid.attention"(%q, %k, %v) <{causal, scale = 0.35355339059327373 : f64, plan = #mid.plan<"attention_split1"
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "causal_rows"
// TILE-GENERIC:  "tile.kernel"(%o, %q, %k, %v) <{callee = @attention, offsets = [{{.*}}], scalars = array<i64: 1, 1052050675, 3, 2, 16, 8,

// -----

// 8 heads on 4 tiles: whole heads per tile (attention_split0), key and value cut the same way;
// key length 12 differs from the query length 4. Unmasked, scale 0.25 (0x3e800000).
func.func @heads(%q: tensor<8x4x16xf32>, %k: tensor<8x12x16xf32>, %v: tensor<8x12x16xf32>) -> tensor<8x4x16xf32> {
  %o = graph.attention %q, %k, %v scale 0.25 : (tensor<8x4x16xf32>, tensor<8x12x16xf32>, tensor<8x12x16xf32>) -> tensor<8x4x16xf32>
  func.return %o : tensor<8x4x16xf32>
}
// MID-LABEL: func.func @heads
// MID-SAME:  %k: tensor<8x12x16xf32, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 4, standard>>
// MID-NEXT:  %o = mid.attention %q, %k, %v scale 2.500000e-01 plan #mid.plan<"attention_split0", #mid.dispatch<head_sharded, init = @attention>, accumulate = f32, amp = none, operands = [#mid.operand<query : input, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<key : input, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<value : input, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>], distinct = [], alias = none>
// TILE-LABEL: func.func @heads()
// TILE:       %k = tile.buffer @k input 1 on #tile.tiles<0 to 4> shard [2, 12, 16] f32 row_major
// TILE:       tile.kernel @attention(%o[() -> (0)], %q[() -> (0)], %k[() -> (0)], %v[() -> (0)]) scalars [0, 1048576000, 3, 8, 4, 16, 1, 1, 1, 4, 1, 1, 1, 1, 1, 1, 4, 0, 0, 0, 3, 8, 4, 16, 1, 1, 1, 4, 1, 1, 1, 1, 1, 1, 4, 0, 0, 0, 3, 8, 12, 16, 1, 1, 1, 4, 1, 1, 1, 1, 1, 1, 4, 0, 0, 0, 3, 8, 12, 16, 1, 1, 1, 4, 1, 1, 1, 1, 1, 1, 4, 0, 0, 0] on #tile.tiles<0 to 4>
// PLACED-LABEL: func.func @heads()
// PLACED:       %o = tile.buffer @o output 0 {{.*}} address 0x54e00
// ROWS-LABEL: func.func @heads()
// ROWS-NOT:   tile.exchange
// ROWS:       func.return
// GENERIC-LABEL: "func.func"() <{sym_name = "heads"
// GENERIC:       "mid.attention"(%q, %k, %v) <{scale = 2.500000e-01 : f64, plan = #mid.plan<"attention_split0"
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "heads"
// TILE-GENERIC:  callee = @attention, {{.*}}scalars = array<i64: 0, 1048576000,
