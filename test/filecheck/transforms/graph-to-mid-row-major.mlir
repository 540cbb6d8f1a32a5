// graph-to-mid{inputs=row_major}: the host writes every argument row-major, whole, on tile 0;
// insert-conversions turns the bridges into rearrangements that mid-to-tile lowers (a gather
// to the GEMM's 2 row tiles for %a, a local repack to amp_right for %b on tile 0).
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4 inputs=row_major catalog=amp_gemm_f16_r16}' > %t.mid.mlir
// RUN: ipu-opt %t.mid.mlir -p insert-conversions > %t.conv.mlir
// RUN: ipu-opt %t.conv.mlir -p mid-to-tile > %t.tile.mlir
// RUN: ipu-opt %t.tile.mlir -p place-memory > %t.placed.mlir
// RUN: ipu-opt %t.placed.mlir -p schedule-exchange > %t.rows.mlir
// RUN: filecheck %s --check-prefix=MID < %t.mid.mlir
// RUN: filecheck %s --check-prefix=CONV < %t.conv.mlir
// RUN: filecheck %s --check-prefix=TILE < %t.tile.mlir
// RUN: filecheck %s --check-prefix=PLACED < %t.placed.mlir
// RUN: filecheck %s --check-prefix=ROWS < %t.rows.mlir
// RUN: ipu-opt %t.mid.mlir --print-op-generic | ipu-opt > %t.mid.again.mlir
// RUN: diff %t.mid.mlir %t.mid.again.mlir
// RUN: ipu-opt %t.conv.mlir --print-op-generic > %t.conv.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC < %t.conv.generic.mlir
// RUN: ipu-opt %t.conv.generic.mlir > %t.conv.again.mlir
// RUN: diff %t.conv.mlir %t.conv.again.mlir
// RUN: ipu-opt %t.rows.mlir --print-op-generic | ipu-opt > %t.rows.again.mlir
// RUN: diff %t.rows.mlir %t.rows.again.mlir

func.func @gemm(%a: tensor<32x64xf16>, %b: tensor<64x64xf16>) -> tensor<32x64xf16> {
  %c = graph.gemm %a, %b : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  func.return %c : tensor<32x64xf16>
}
// MID:       ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = row_major,
// MID-LABEL: func.func @gemm(%a: tensor<32x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>, %b: tensor<64x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>)
// MID-NEXT:  %[[A:.*]] = builtin.unrealized_conversion_cast %a : {{.*}} to tensor<32x64xf16, #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>> {ipu.for = "graph.gemm %c"}
// MID-NEXT:  %[[B:.*]] = builtin.unrealized_conversion_cast %b : {{.*}} to tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>> {ipu.for = "graph.gemm %c"}
// MID-NEXT:  %c = mid.gemm %[[A]], %[[B]] plan #mid.plan<"amp_gemm_f16_r16"
// CONV-LABEL: func.func @gemm
// CONV-NEXT:  %a_1 = mid.rearrange %a {ipu.for = "graph.gemm %c"} : tensor<32x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>> -> tensor<32x64xf16, #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CONV-NEXT:  %b_1 = mid.rearrange %b {ipu.for = "graph.gemm %c"} : tensor<64x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>> -> tensor<64x64xf16, #mid.format<f16, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
// CONV-NEXT:  %c = mid.gemm %a_1, %b_1 plan
// CONV-NOT:   unrealized_conversion_cast

// TILE-LABEL: func.func @gemm()
// TILE-NEXT:  %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [32, 64] f16 row_major standard align 8 tail 0
// TILE-NEXT:  %b = tile.buffer @b input 1 on #tile.tiles<0 to 1> shard [64, 64] f16 row_major standard align 8 tail 0
// TILE:       tile.loop %r = 0 to 1 provenance #tile.provenance<op = "graph.gemm %c", value = "%a", reason = "rounds of input shards sent at once"> {
// TILE-NEXT:    tile.exchange 1024 words from %a[(d0) -> (0)] on tile (d0, d1) -> (d0) to %a_1_gather_slot[(d0) -> (0)] on #tile.tiles<0 to 2> groups 1 shift (d0, d1) -> (0) iv(%r)
// TILE-NEXT:    tile.loop %g = 0 to 1
// TILE-NEXT:      tile.kernel @copy_words(%a_1_gather_slot[(d0, d1) -> (0)], %a[(d0, d1) -> (0)]) scalars [1024] on #tile.tiles<0 to 1> only (d0, d1) -> (d0) iv(%r, %g)
// TILE-NEXT:      tile.kernel @gather_shard(%a_1[(d0, d1) -> (0)], %a_1_gather_slot[(d0, d1) -> (0)]) iv_scalars [(d0, d1) -> (d0)] scalars [2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 4, 1, 1, 0, 2, 32, 64, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0] on #tile.tiles<0 to 2> iv(%r, %g)
// TILE-NEXT:    }
// TILE-NEXT:  }
// TILE-NEXT:  tile.kernel @convert_shard(%b_1[() -> (0)], %b[() -> (0)]) scalars [2, 64, 64, 64, 64, 1, 1, 1, 1, 1, 4, 1, 2, 0, 2, 64, 64, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0] on #tile.tiles<0 to 1> iv() provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "repack each shard on its tile">
// TILE-NEXT:  tile.loop %j = 0 to 1
// TILE:         tile.kernel @amp_gemm_f16_init(%c[(d0) -> ((d0 * 2048))], %a_1[(d0) -> (0)], %c_rhs_slot[(d0) -> (0)]) scalars [16] on #tile.tiles<0 to 2>

// PLACED-LABEL: func.func @gemm()
// PLACED-NEXT:  %a = tile.buffer @a input 0 {{.*}} address 0x5c000
// PLACED-NEXT:  %b = tile.buffer @b input 1 {{.*}} address 0x54000
// PLACED:       %a_1_gather_slot = tile.buffer @a_1_gather_slot scratch {{.*}} address 0x5d000

// ROWS-LABEL: func.func @gemm()
// ROWS:       tile.exchange 1024 words from %a{{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [0], receiver_rows = [1], row_address = 0x4c000, placed = [src 0x5c000, dst 0x5d000]
// ROWS:       exchange.row @x0_send provenance "graph.gemm %c %a: input shards of round r, each to the result tiles that hold its elements" {
// ROWS-NEXT:    exchange.send 63, 0x17000, 1
// ROWS-NEXT:    exchange.sendoff 959, 0x0, 1
// ROWS-NEXT:  }
// ROWS-NEXT:  exchange.row @x0_receive provenance "graph.gemm %c %a: input shards of round r, each to the result tiles that hold its elements" {
// ROWS-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x17400
// ROWS-NEXT:    exchange.delay 1029

// GENERIC:       %a_1 = "mid.rearrange"(%a) {ipu.for = "graph.gemm %c"} : (tensor<32x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 1 x 1 pad], replication = 1, group = 1, standard>>) -> tensor<32x64xf16, #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>
