// graph.add through every pass, with NumPy broadcasting: the plans, the kernel call with its
// descriptors, the gather that brings a broadcast operand to every tile, placed buffers, rows.
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
// The passes one by one give what the pipeline gives.
// RUN: ipu-opt %s --split-input-file -p 'ipu-pipeline{tiles=4}' > %t.pipeline.mlir
// RUN: diff %t.rows.mlir %t.pipeline.mlir

// Broadcasting: [4, 6] + [6] cuts the 4 rows over the 4 tiles (add_split0); the bias is whole
// on every tile (replication = 4), as the host writes it. [2, 1, 6] + [4, 6] -> [2, 4, 6]
// cuts the 4 (axis 1, add_split1) so that %s is used in its own format: no conversion.
func.func @broadcast(%a: tensor<4x6xf32>, %b: tensor<6xf32>, %c: tensor<2x1x6xf32>) -> tensor<2x4x6xf32> {
  %s = graph.add %a, %b : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %t = graph.add %c, %s : (tensor<2x1x6xf32>, tensor<4x6xf32>) -> tensor<2x4x6xf32>
  func.return %t : tensor<2x4x6xf32>
}
// MID-LABEL: func.func @broadcast
// MID-SAME:  (%a: tensor<4x6xf32, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>, %b: tensor<6xf32, #mid.format<f32, row_major, [1 x 1 pad], replication = 4, group = 4, standard>>, %c: tensor<2x1x6xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 4, group = 4, standard>>)
// MID-SAME:  -> tensor<2x4x6xf32, #mid.format<f32, row_major, [1 x 1 pad, 1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>>
// MID-NEXT:  %s = mid.add %a, %b plan #mid.plan<"add_split0", #mid.dispatch<pointwise, init = @add>, accumulate = f32, amp = none, operands = [#mid.operand<lhs : input, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<rhs : input, #mid.format<f32, row_major, [1 x 1 pad], replication = 4, group = 4, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>], distinct = [], alias = lhs>
// MID-NEXT:  %t = mid.add %c, %s plan #mid.plan<"add_split1", #mid.dispatch<pointwise, init = @add>, accumulate = f32, amp = none, operands = [#mid.operand<lhs : input, #mid.format<f32, row_major, [1 x 1 pad, 1 x 1 pad, 1 x 1 pad], replication = 4, group = 4, standard>, align = 8, tail = 0>, #mid.operand<rhs : input, #mid.format<f32, row_major, [1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>, #mid.operand<out : output, #mid.format<f32, row_major, [1 x 1 pad, 1 x 4 pad, 1 x 1 pad], replication = 1, group = 4, standard>, align = 8, tail = 0>], distinct = [], alias = none>
// MID-NEXT:  func.return %t
// CONV-LABEL: func.func @broadcast
// CONV-NOT:   mid.rearrange
// CONV:       func.return

// One `add` call per output shard on the tiles of the output; scalars = the descriptors of
// out, lhs, rhs (rank, shape, blocks, partitions, pads, replication, group, precision 0 = f32,
// order 0 = row_major, scale): [4, 6] cut 4 x 1, [6] replicated 4 times.
// TILE-LABEL: func.func @broadcast()
// TILE:       %s = tile.buffer @s scratch on #tile.tiles<0 to 4> shard [1, 6] f32 row_major standard align 8 tail 0
// TILE-NEXT:  tile.kernel @add(%s[() -> (0)], %a[() -> (0)], %b[() -> (0)]) scalars [2, 4, 6, 1, 1, 4, 1, 1, 1, 1, 4, 0, 0, 0, 2, 4, 6, 1, 1, 4, 1, 1, 1, 1, 4, 0, 0, 0, 1, 6, 1, 1, 1, 4, 4, 0, 0, 0] on #tile.tiles<0 to 4> iv() provenance #tile.provenance<op = "graph.add %s", value = "%s", reason = "add, one call per output shard">
// TILE-NEXT:  tile.kernel @add(%t[() -> (0)], %c[() -> (0)], %s[() -> (0)]) scalars [3, 2, 4, 6, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1, 4, 0, 0, 0, 3, 2, 1, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 0, 0, 0, 2, 4, 6, 1, 1, 4, 1, 1, 1, 1, 4, 0, 0, 0] on #tile.tiles<0 to 4>
// TILE-NEXT:  func.return

// First fit from 0x54000 (after the code region); %a is dead once %s is computed, so the
// output %t reuses its bytes.
// PLACED-LABEL: func.func @broadcast()
// PLACED-NEXT:  %a = tile.buffer @a input 0 {{.*}} address 0x54000
// PLACED-NEXT:  %b = tile.buffer @b input 1 {{.*}} address 0x54018
// PLACED-NEXT:  %c = tile.buffer @c input 2 {{.*}} address 0x54030
// PLACED-NEXT:  %t = tile.buffer @t output 0 {{.*}} address 0x54000
// PLACED-NEXT:  %s = tile.buffer @s scratch {{.*}} address 0x54060
// Every operand is where its kernel runs: no exchange.
// ROWS-LABEL: func.func @broadcast()
// ROWS-NOT:   tile.exchange
// ROWS:       func.return
// ROWS-NOT:   exchange.row

// GENERIC-LABEL: "func.func"() <{sym_name = "broadcast"
// GENERIC:       %s = "mid.add"(%a, %b) <{plan = #mid.plan<"add_split0", #mid.dispatch<pointwise, init = @add>
// GENERIC-SAME:  : (tensor<4x6xf32, #mid.format<{{.*}}>>, tensor<6xf32, #mid.format<f32, row_major, [1 x 1 pad], replication = 4, group = 4, standard>>) -> tensor<4x6xf32, #mid.format<{{.*}}>>
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "broadcast"
// TILE-GENERIC:  "tile.kernel"(%s, %a, %b) <{callee = @add, offsets = [affine_map<() -> (0)>, affine_map<() -> (0)>, affine_map<() -> (0)>], scalars = array<i64: 2, 4, 6, 1, 1, 4, 1, 1, 1, 1, 4, 0, 0, 0,

// -----

// A broadcast operand computed elsewhere: the bias %g comes out of gelu cut over the 4 tiles,
// the add follows the GEMM's amp_output rows (add_follow0) and wants %g whole on every tile,
// so insert-conversions adds a rearrangement that mid-to-tile lowers to a gather: one loop
// over %g's 4 shards (every tile holds all of %g: one shard per round), each broadcast to the
// 4 tiles and taken by `gather_shard`.
func.func @gathered_bias(%a: tensor<64x64xf32>, %w: tensor<64x64xf32>, %v: tensor<64xf32>) -> tensor<64x64xf32> {
  %m = graph.gemm %a, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %g = graph.gelu %v : tensor<64xf32> -> tensor<64xf32>
  %y = graph.add %m, %g : (tensor<64x64xf32>, tensor<64xf32>) -> tensor<64x64xf32>
  func.return %y : tensor<64x64xf32>
}
// MID-LABEL: func.func @gathered_bias
// MID:       %g = mid.gelu %v plan #mid.plan<"gelu_split0"
// MID-NEXT:  %[[B:.*]] = builtin.unrealized_conversion_cast %g : tensor<64xf32, #mid.format<f32, row_major, [1 x 4 pad], replication = 1, group = 4, standard>> to tensor<64xf32, #mid.format<f32, row_major, [64 x 1 pad], replication = 4, group = 4, standard>> {ipu.for = "graph.add %y"}
// MID-NEXT:  %y = mid.add %m, %[[B]] plan #mid.plan<"add_follow0"
// MID-SAME:  #mid.operand<lhs : input, #mid.format<f32, amp_output, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>
// MID-SAME:  #mid.operand<rhs : input, #mid.format<f32, row_major, [64 x 1 pad], replication = 4, group = 4, standard>
// CONV-LABEL: func.func @gathered_bias
// CONV:       %g_1 = mid.rearrange %g {ipu.for = "graph.add %y"} : tensor<64xf32, #mid.format<f32, row_major, [1 x 4 pad], replication = 1, group = 4, standard>> -> tensor<64xf32, #mid.format<f32, row_major, [64 x 1 pad], replication = 4, group = 4, standard>>
// CONV-NEXT:  %y = mid.add %m, %g_1 plan
// CONV-NOT:   unrealized_conversion_cast

// TILE-LABEL: func.func @gathered_bias()
// TILE:       %g_1_gather_slot = tile.buffer @g_1_gather_slot scratch on #tile.tiles<0 to 4> shard [16] f32 row_major standard align 8 tail 0
// TILE:       tile.kernel @gelu(%g[() -> (0)], %v[() -> (0)]) scalars [1, 64, 1, 4, 1, 1, 4, 0, 0, 0, 1, 64, 1, 4, 1, 1, 4, 0, 0, 0] on #tile.tiles<0 to 4>
// TILE-NEXT:  tile.loop %r = 0 to 4 provenance #tile.provenance<op = "graph.add %y", value = "%g", reason = "rounds of input shards sent at once"> {
// TILE-NEXT:    tile.exchange 16 words from %g[(d0) -> (0)] on tile (d0, d1) -> (d0) to %g_1_gather_slot[(d0) -> (0)] on #tile.tiles<0 to 4> groups 1 shift (d0, d1) -> (0) iv(%r) provenance #tile.provenance<op = "graph.add %y", value = "%g", reason = "input shards of round r, each to the result tiles that hold its elements">
// TILE-NEXT:    tile.loop %g_2 = 0 to 1
// TILE-NEXT:      tile.kernel @copy_words(%g_1_gather_slot[(d0, d1) -> (0)], %g[(d0, d1) -> (0)]) scalars [16] on #tile.tiles<0 to 4> only (d0, d1) -> (d0) iv(%r, %g_2)
// TILE-NEXT:      tile.kernel @gather_shard(%g_1[(d0, d1) -> (0)], %g_1_gather_slot[(d0, d1) -> (0)]) iv_scalars [(d0, d1) -> (d0)] scalars [1, 64, 64, 1, 1, 4, 4, 0, 0, 0, 1, 64, 1, 4, 1, 1, 4, 0, 0, 0] on #tile.tiles<0 to 4> iv(%r, %g_2)
// TILE-NEXT:    }
// TILE-NEXT:  }
// amp_output is order 3; the bias descriptor is the replicated one.
// TILE-NEXT:  tile.kernel @add(%y[() -> (0)], %m[() -> (0)], %g_1[() -> (0)]) scalars [2, 64, 64, 16, 64, 4, 1, 1, 1, 1, 4, 0, 3, 0, 2, 64, 64, 16, 64, 4, 1, 1, 1, 1, 4, 0, 3, 0, 1, 64, 64, 1, 1, 4, 4, 0, 0, 0] on #tile.tiles<0 to 4>
// TILE-NEXT:  func.return

// PLACED-LABEL: func.func @gathered_bias()
// PLACED:       %y = tile.buffer @y output 0 {{.*}} interleaved {{.*}} address 0xac000
// PLACED:       %g = tile.buffer @g scratch {{.*}} address 0x5c000
// PLACED:       %g_1_gather_slot = tile.buffer @g_1_gather_slot scratch {{.*}} address 0x5c040

// The gather's exchange: shard r (16 words at %g, word address 0x5c000 / 4 = 0x17000) from
// tile r to the other 3 tiles' slot (pic 0x5c040 / 4 = 0x17010); one shared send row and one
// receive row, patched per iteration: direction (1 up, 2 down, 3 both), the receivers' xpic
// (the sender) and their delay (16 words + the farthest receiver's latency 6 + |r - t| - 2, t the receiver).
// ROWS-LABEL: func.func @gathered_bias()
// ROWS:       tile.loop %r = 0 to 4
// ROWS-NEXT:    tile.exchange 16 words from %g[(d0) -> (0)] on tile (d0, d1) -> (d0) to %g_1_gather_slot[(d0) -> (0)] on #tile.tiles<0 to 4> groups 1 shift (d0, d1) -> (0) iv(%r) provenance #tile.provenance<{{.*}}> schedule #tile.schedule<rows = [@x1_send, @x1_receive], sender_rows = [0, 0, 0, 0], receiver_rows = [1, 1, 1, 1], patches = [#tile.patch<@x1_send, 0, "sctl", array<i64: 1, 3, 3, 2>>, #tile.patch<@x1_receive, 0, "xpic", array<i64: 0, 1, 2, 3>>, #tile.patch<@x1_receive, 1, "events_m1", array<i64: 23, 22, 22, 23>>], row_address = 0x4c010, placed = [src 0x5c000, dst 0x5c040]
// ROWS:       exchange.row @x1_send provenance "graph.add %y %g: input shards of round r, each to the result tiles that hold its elements" {
// ROWS-NEXT:    exchange.send 15, 0x17000, 1
// ROWS-NEXT:  }
// ROWS-NEXT:  exchange.row @x1_receive provenance "graph.add %y %g: input shards of round r, each to the result tiles that hold its elements" {
// ROWS-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x17010
// ROWS-NEXT:    exchange.delay 23
// ROWS-NEXT:  }

// GENERIC-LABEL: "func.func"() <{sym_name = "gathered_bias"
// GENERIC:       "builtin.unrealized_conversion_cast"(%g) {ipu.for = "graph.add %y"}
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "gathered_bias"
// TILE-GENERIC:  "tile.loop"() <{lower = 0 : i64, upper = 4 : i64, provenance = #tile.provenance<op = "graph.add %y", value = "%g", reason = "rounds of input shards sent at once">}> ({
// TILE-GENERIC-NEXT: ^{{.*}}(%r: index):
// TILE-GENERIC-NEXT: "tile.exchange"(%g, %g_1_gather_slot, %r) <{words = 16 : i64
