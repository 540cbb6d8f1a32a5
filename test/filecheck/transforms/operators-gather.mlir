// graph.gather (an embedding lookup) through every pass: the table cut along its row axis
// (here the hidden axis: 4 tiles of 4 columns each, all 10 rows), the i32 indices replicated
// on those tiles, one `gather_rows` call per output shard, no exchange.
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4}' > %t.mid.mlir
// RUN: ipu-opt %t.mid.mlir -p insert-conversions,mid-to-tile > %t.tile.mlir
// RUN: ipu-opt %t.tile.mlir -p place-memory,schedule-exchange > %t.rows.mlir
// RUN: filecheck %s --check-prefix=MID < %t.mid.mlir
// RUN: filecheck %s --check-prefix=TILE < %t.tile.mlir
// Round trips: the custom and the generic form of each level print the same text again.
// RUN: ipu-opt %t.mid.mlir | diff %t.mid.mlir -
// RUN: ipu-opt %t.mid.mlir --print-op-generic | ipu-opt | diff %t.mid.mlir -
// RUN: ipu-opt %t.tile.mlir --print-op-generic | ipu-opt | diff %t.tile.mlir -
// RUN: ipu-opt %t.rows.mlir --print-op-generic | ipu-opt | diff %t.rows.mlir -

func.func @embed(%ids: tensor<2x3xi32>, %table: tensor<10x16xf16>) -> tensor<2x3x16xf16> {
  %e = graph.gather %table, %ids : (tensor<10x16xf16>, tensor<2x3xi32>) -> tensor<2x3x16xf16>
  func.return %e : tensor<2x3x16xf16>
}
// MID:      func.func @embed(%ids: tensor<2x3xi32, #mid.format<i32, row_major, [1 x 1 pad, 1 x 1 pad], replication = 4, group = 4, standard>>, %table: tensor<10x16xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 4 pad], replication = 1, group = 4, standard>>)
// MID:      %e = mid.gather %table, %ids plan #mid.plan<"gather_split2", #mid.dispatch<pointwise, init = @gather_rows>
// MID-SAME: : (tensor<10x16xf16, {{.*}}>, tensor<2x3xi32, {{.*}}>) -> tensor<2x3x16xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 4 pad], replication = 1, group = 4, standard>>

// TILE:     tile.buffer @ids input 0 on #tile.tiles<0 to 4> shard [2, 3] i32 row_major standard
// TILE:     tile.buffer @table input 1 on #tile.tiles<0 to 4> shard [10, 4] f16 row_major standard
// TILE-NOT: tile.exchange
// TILE:     tile.kernel @gather_rows(%e[() -> (0)], %table[() -> (0)], %ids[() -> (0)]) scalars [{{.*}}] on #tile.tiles<0 to 4>
// TILE-NOT: tile.exchange
