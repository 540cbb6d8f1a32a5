// The conversions insert-conversions makes explicit (mid.cast_precision, mid.rearrange) through
// mid-to-tile, place-memory and schedule-exchange, each pass on its own: a local cast or repack
// is one `convert_shard` per shard; a rearrangement between partitionings is a gather loop.
// The input is mid-level IR with graph-to-mid's bridges (and its ipu.config).
// RUN: ipu-opt %s -p insert-conversions > %t.conv.mlir
// RUN: ipu-opt %t.conv.mlir -p mid-to-tile > %t.tile.mlir
// RUN: ipu-opt %t.tile.mlir -p place-memory > %t.placed.mlir
// RUN: ipu-opt %t.placed.mlir -p schedule-exchange > %t.rows.mlir
// RUN: filecheck %s --check-prefix=CONV < %t.conv.mlir
// RUN: filecheck %s --check-prefix=TILE < %t.tile.mlir
// RUN: filecheck %s --check-prefix=PLACED < %t.placed.mlir
// RUN: filecheck %s --check-prefix=ROWS < %t.rows.mlir
// Generic form at every level: printed generic, parsed back and printed again, the same text.
// RUN: ipu-opt %t.conv.mlir --print-op-generic > %t.conv.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC < %t.conv.generic.mlir
// RUN: ipu-opt %t.conv.generic.mlir > %t.conv.again.mlir
// RUN: diff %t.conv.mlir %t.conv.again.mlir
// RUN: ipu-opt %t.tile.mlir --print-op-generic | ipu-opt > %t.tile.again.mlir
// RUN: diff %t.tile.mlir %t.tile.again.mlir
// RUN: ipu-opt %t.rows.mlir --print-op-generic | ipu-opt > %t.rows.again.mlir
// RUN: diff %t.rows.mlir %t.rows.again.mlir

#RM16 = #mid.format<f16, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>
#RM32 = #mid.format<f32, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>
#L16 = #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>
#L32 = #mid.format<f32, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>
#COLS = #mid.format<f16, row_major, [1 x 1 pad, 32 x 2 pad], replication = 1, group = 2, standard>
#F8 = #mid.format<f8f143<-2>, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 2, indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f16_r16"], scheduling = in_order, profiling = off>} {
  func.func @conversions(%a: tensor<32x64xf32, #RM32>, %h: tensor<32x64xf16, #RM16>) -> (tensor<32x64xf16, #L16>, tensor<32x64xf32, #L32>, tensor<32x64xf16, #COLS>, tensor<32x64xf8E4M3FNUZ, #F8>) {
    // narrowing + order: cast where the data is, then repack the f16 data
    %n = builtin.unrealized_conversion_cast %a : tensor<32x64xf32, #RM32> to tensor<32x64xf16, #L16>
    // widening + order: repack the f16 data, then cast
    %w = builtin.unrealized_conversion_cast %h : tensor<32x64xf16, #RM16> to tensor<32x64xf32, #L32>
    // rows cut -> columns cut: a gather
    %c = builtin.unrealized_conversion_cast %h : tensor<32x64xf16, #RM16> to tensor<32x64xf16, #COLS>
    // f16 -> FP8 with scale -2: a cast
    %q = builtin.unrealized_conversion_cast %h : tensor<32x64xf16, #RM16> to tensor<32x64xf8E4M3FNUZ, #F8>
    func.return %n, %w, %c, %q : tensor<32x64xf16, #L16>, tensor<32x64xf32, #L32>, tensor<32x64xf16, #COLS>, tensor<32x64xf8E4M3FNUZ, #F8>
  }
}
// CONV-LABEL: func.func @conversions
// CONV-NEXT:  %n = mid.cast_precision %a : tensor<32x64xf32, #mid.format<f32, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>> -> tensor<32x64xf16, #mid.format<f16, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CONV-NEXT:  %n_1 = mid.rearrange %n : {{.*}} -> tensor<32x64xf16, #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CONV-NEXT:  %w = mid.rearrange %h : {{.*}} -> tensor<32x64xf16, #mid.format<f16, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CONV-NEXT:  %w_1 = mid.cast_precision %w : {{.*}} -> tensor<32x64xf32, #mid.format<f32, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CONV-NEXT:  %c = mid.rearrange %h : {{.*}} -> tensor<32x64xf16, #mid.format<f16, row_major, [1 x 1 pad, 32 x 2 pad], replication = 1, group = 2, standard>>
// CONV-NEXT:  %q = mid.cast_precision %h : {{.*}} -> tensor<32x64xf8E4M3FNUZ, #mid.format<f8f143<-2>, row_major, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>>
// CONV-NEXT:  func.return %n_1, %w_1, %c, %q

// Descriptors (rank 2, [32, 64], blocks [16, 64], partitions [2, 1], pads, replication 1,
// group 2, precision, order, scale): f32 0 / f16 1 / f8f143 2; row_major 0 / amp_left 1.
// TILE-LABEL: func.func @conversions()
// TILE:       %c_gather_slot = tile.buffer @c_gather_slot scratch on #tile.tiles<0 to 2> shard [16, 64] f16 row_major standard align 8 tail 0
// TILE-NEXT:  tile.kernel @convert_shard({{.*}}, %a[() -> (0)]) scalars [2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 1, 0, 0, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 0, 0, 0] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.cast_precision %n", value = "%n", reason = "cast precision, one call per shard">
// TILE-NEXT:  tile.kernel @convert_shard({{.*}}) scalars [2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 1, 1, 0, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 1, 0, 0] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.rearrange %n", value = "%n", reason = "repack each shard on its tile">
// TILE-NEXT:  tile.kernel @convert_shard({{.*}}, %h[() -> (0)]) scalars [2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 1, 1, 0, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 1, 0, 0] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.rearrange %w", value = "%w", reason = "repack each shard on its tile">
// TILE-NEXT:  tile.kernel @convert_shard({{.*}}) scalars [2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 0, 1, 0, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 1, 1, 0] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.cast_precision %w", value = "%w", reason = "cast precision, one call per shard">
// Rows cut -> columns cut on 2 tiles: each result tile needs both shards, so one shard per
// round (1 group); each sender holds elements of its own shard and copies it into its slot.
// TILE-NEXT:  tile.loop %r = 0 to 2 provenance #tile.provenance<op = "graph.rearrange %c", value = "%c", reason = "rounds of input shards sent at once"> {
// TILE-NEXT:    tile.exchange 512 words from %h[(d0) -> (0)] on tile (d0, d1) -> (d0) to %c_gather_slot[(d0) -> (0)] on #tile.tiles<0 to 2> groups 1 shift (d0, d1) -> (0) iv(%r)
// TILE-NEXT:    tile.loop %g = 0 to 1 provenance #tile.provenance<op = "graph.rearrange %c", value = "%c", reason = "the shards of round r"> {
// TILE-NEXT:      tile.kernel @copy_words(%c_gather_slot[(d0, d1) -> (0)], %h[(d0, d1) -> (0)]) scalars [512] on #tile.tiles<0 to 2> only (d0, d1) -> (d0) iv(%r, %g)
// TILE-NEXT:      tile.kernel @gather_shard(%c[(d0, d1) -> (0)], %c_gather_slot[(d0, d1) -> (0)]) iv_scalars [(d0, d1) -> (d0)] scalars [2, 32, 64, 1, 32, 1, 2, 1, 1, 1, 2, 1, 0, 0, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 1, 0, 0] on #tile.tiles<0 to 2> iv(%r, %g)
// TILE-NEXT:    }
// TILE-NEXT:  }
// TILE-NEXT:  tile.kernel @convert_shard(%q[() -> (0)], %h[() -> (0)]) scalars [2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 2, 0, -2, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 2, 1, 0, 0] on #tile.tiles<0 to 2>
// TILE-NEXT:  func.return

// PLACED-LABEL: func.func @conversions()
// PLACED-NEXT:  tile.buffer @a input 0 {{.*}} address 0x54000
// PLACED-NEXT:  tile.buffer @h input 1 {{.*}} address 0x5c000
// PLACED:       tile.buffer @c output 2 on #tile.tiles<0 to 2> shard [32, 32] f16 row_major {{.*}} address 0x55800
// PLACED:       tile.buffer @c_gather_slot scratch {{.*}} address 0x5c800

// %h's shard r (512 words at 0x5c000 = word 0x17000) to the other tile's slot (0x5c800 =
// word 0x17200); delay 512 + L(0, 1) 7 - 2.
// ROWS-LABEL: func.func @conversions()
// ROWS:       tile.exchange 512 words from %h{{.*}} schedule #tile.schedule<rows = [@x0_send, @x0_receive], sender_rows = [0, 0], receiver_rows = [1, 1], patches = [#tile.patch<@x0_send, 0, "sctl", array<i64: 1, 2>>, #tile.patch<@x0_send, 1, "sctl", array<i64: 1, 2>>, #tile.patch<@x0_receive, 0, "xpic", array<i64: 0, 1>>], row_address = 0x4c000, placed = [src 0x5c000, dst 0x5c800]
// ROWS:       exchange.row @x0_send provenance "graph.rearrange %c %c: input shards of round r, each to the result tiles that hold its elements" {
// ROWS-NEXT:    exchange.send 63, 0x17000, 1
// ROWS-NEXT:    exchange.sendoff 447, 0x0, 1
// ROWS-NEXT:  }
// ROWS-NEXT:  exchange.row @x0_receive provenance "graph.rearrange %c %c: input shards of round r, each to the result tiles that hold its elements" {
// ROWS-NEXT:    exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x17200
// ROWS-NEXT:    exchange.delay 517
// ROWS-NEXT:  }

// GENERIC:       %n = "mid.cast_precision"(%a) : (tensor<32x64xf32, #mid.format<f32, row_major, {{.*}}>>) -> tensor<32x64xf16, #mid.format<f16, row_major, {{.*}}>>
// GENERIC-NEXT:  %n_1 = "mid.rearrange"(%n) : (tensor<32x64xf16, #mid.format<f16, row_major, {{.*}}>>) -> tensor<32x64xf16, #mid.format<f16, amp_left, {{.*}}>>
