// An FP8 graph.gemm through every pass: f8f143 operands on the AMP (A8/B8x16/C16 at the FP8
// rate) with FP16 partials in units of 2^7 (the result's scale -3, raised so that 128 products
// of the largest codes, 128 * 240^2 * 2^(1 - 1), cannot overflow FP16: f16<7>), the f8 kernels
// with the operands' scales and that unit as scalars, and the cast of the partials to the
// declared FP8 result (one `convert_shard` per shard).
// Each pass runs on its own, on the previous pass's printed output.
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f8_r16}' > %t.mid.mlir
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

// 32x128 (q * 2^1) by 128x64 (q * 2^-1) -> 32x64 (q * 2^-3): 2 row tiles of 16, K in 2 blocks.
func.func @fp8(%x: tensor<32x128xf8E4M3FNUZ, #graph.fp8_scale<1>>, %w: tensor<128x64xf8E4M3FNUZ, #graph.fp8_scale<-1>>) -> tensor<32x64xf8E4M3FNUZ, #graph.fp8_scale<-3>> {
  %y = graph.gemm %x, %w : (tensor<32x128xf8E4M3FNUZ, #graph.fp8_scale<1>>, tensor<128x64xf8E4M3FNUZ, #graph.fp8_scale<-1>>) -> tensor<32x64xf8E4M3FNUZ, #graph.fp8_scale<-3>>
  func.return %y : tensor<32x64xf8E4M3FNUZ, #graph.fp8_scale<-3>>
}
// The plan stores the result as f16 partials in units of 2^7 (out : f16<7>); the bridge to
// the declared storage names the GEMM.
// MID-LABEL: func.func @fp8
// MID-SAME:  (%x: tensor<32x128xf8E4M3FNUZ, #mid.format<f8f143<1>, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>, %w: tensor<128x64xf8E4M3FNUZ, #mid.format<f8f143<-1>, amp_right, [64 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>>) -> tensor<32x64xf8E4M3FNUZ, #mid.format<f8f143<-3>, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// MID-NEXT:  %y = mid.gemm %x, %w plan #mid.plan<"amp_gemm_f8_r16", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f8_init, accum = @amp_gemm_f8_accum>, accumulate = f16, amp = "AF8/BF8x16/C16", operands = [#mid.operand<lhs : left, #mid.format<f8f143<1>, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 16>, #mid.operand<rhs : right, #mid.format<f8f143<-1>, amp_right, [64 x 2 pad, 64 x 1 pad], replication = 1, group = 4, standard>, align = 32, tail = 0>, #mid.operand<out : output, #mid.format<f16<7>, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>, align = 32, tail = 0>], distinct = [(out, lhs)], alias = none>
// MID-SAME:  -> tensor<32x64xf8E4M3FNUZ, #mid.format<f16<7>, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// MID-NEXT:  %[[C:.*]] = builtin.unrealized_conversion_cast %y : {{.*}} to tensor<32x64xf8E4M3FNUZ, #mid.format<f8f143<-3>, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>> {ipu.for = "graph.gemm %y (its declared storage)"}
// MID-NEXT:  func.return %[[C]]
// CONV-LABEL: func.func @fp8
// CONV:       %y_1 = mid.cast_precision %y {ipu.for = "graph.gemm %y (its declared storage)"} : tensor<32x64xf8E4M3FNUZ, #mid.format<f16<7>, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>> -> tensor<32x64xf8E4M3FNUZ, #mid.format<f8f143<-3>, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 4, interleaved>>
// CONV-NEXT:  func.return %y_1

// The f8 kernels take rows, the left scale (1), the right scale (-1) and the partials' unit
// (7); rhs blocks are 64x64 bytes (1024 words). The cast's descriptors: out f8f143 (2) scale
// -3, src f16 (1) scale 7, both amp_output (3).
// TILE-LABEL: func.func @fp8()
// TILE:       tile.buffer @y_1 output 0 on #tile.tiles<0 to 2> shard [16, 64] f8f143 amp_output interleaved
// TILE-NEXT:  tile.buffer @y scratch on #tile.tiles<0 to 2> shard [16, 64] f16 amp_output interleaved align 32 tail 0
// TILE-NEXT:  %y_rhs_slot = tile.buffer @y_rhs_slot scratch on #tile.tiles<0 to 2> shard [64, 64] f8f143 amp_right
// TILE:       tile.exchange 1024 words from %w
// TILE:       tile.kernel @amp_gemm_f8_init({{.*}}) scalars [16, 1, -1, 7] on #tile.tiles<0 to 2>
// TILE:       tile.loop %k = 1 to 2
// TILE:         tile.kernel @amp_gemm_f8_accum({{.*}}) scalars [16, 1, -1, 7] on #tile.tiles<0 to 2>
// TILE:       tile.kernel @convert_shard({{.*}}) scalars [2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 4, 2, 3, -3, 2, 32, 64, 16, 64, 2, 1, 1, 1, 1, 4, 1, 3, 7] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm %y (its declared storage)", value = "%y", reason = "cast precision, one call per shard">
// TILE-NEXT:  func.return

// The FP16 partials sit in interleaved memory after the FP8 output shard (16 x 64 bytes).
// PLACED-LABEL: func.func @fp8()
// PLACED:       tile.buffer @y_1 output 0 {{.*}} address 0xac000
// PLACED-NEXT:  tile.buffer @y scratch {{.*}} address 0xac400
// ROWS-LABEL: func.func @fp8()
// ROWS:       exchange.row @x0_send provenance "graph.gemm %y %w: rhs block to output-row tiles" {
// ROWS-NEXT:    exchange.send 63, 0x17000, 5
// ROWS-NEXT:    exchange.sendoff 447, 0x0, 5

// GENERIC-LABEL: "func.func"() <{sym_name = "fp8"
// GENERIC:       %y = "mid.gemm"(%x, %w) <{plan = #mid.plan<"amp_gemm_f8_r16", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, init = @amp_gemm_f8_init, accum = @amp_gemm_f8_accum>, accumulate = f16, amp = "AF8/BF8x16/C16"
// TILE-GENERIC-LABEL: "func.func"() <{sym_name = "fp8"
// TILE-GENERIC:  "tile.kernel"({{.*}}) <{callee = @amp_gemm_f8_init, {{.*}}scalars = array<i64: 16, 1, -1, 7>
