// RUN: ipu-opt %s -p schedule-exchange | filecheck %s

// Rows past the code region. place-memory output (kernels dropped) of the FP16 GEMM
// [16 x 4160] x [4160 x 2048] on 128 tiles: 65 x 32 = 2080 blocks, one exchange iteration
// each, 16 bytes of row slot per iteration: x0 takes 32 x 16 = 512 bytes (0x4c000..0x4c200),
// x1 needs 32 x 64 x 16 = 32768 more, past the 32 KiB code region [0x4c000, 0x54000). They go
// to standard memory no buffer uses, outside the elements of the exchanged @b (0x74820..
// 0x96820: elements 2-4) and @c_rhs_slot (element 4): element 5 starts at 0x9c000.
// (test_schedule_exchange.py runs the same GEMM from the graph, on the device model.)
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 128, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @many_blocks() {
    %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [16, 4160] f16 amp_left standard align 32 tail 16 address 0x54000
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 128> shard [1088, 64] f16 amp_right standard align 32 tail 0 address 0x74820
    %c = tile.buffer @c output 0 on #tile.tiles<0 to 1> shard [16, 2048] f16 amp_output interleaved align 32 tail 0 address 0xac000
    %c_rhs_slot = tile.buffer @c_rhs_slot scratch on #tile.tiles<0 to 1> shard [64, 64] f16 amp_right standard align 32 tail 0 address 0x96820
    tile.loop %j = 0 to 32 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "output-column blocks j"> {
      tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0) -> (d0) to %c_rhs_slot[(d0) -> (0)] on #tile.tiles<0 to 1> iv(%j) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
      tile.loop %k = 1 to 65 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulating inner blocks k"> {
        tile.exchange 2048 words from %b[(d0, d1) -> (((d1 mod 17) * 8192))] on tile (d0, d1) -> ((((d1 floordiv 17) * 32) + d0)) to %c_rhs_slot[(d0, d1) -> (0)] on #tile.tiles<0 to 1> iv(%j, %k) provenance #tile.provenance<op = "graph.gemm %c", value = "%b", reason = "rhs block to output-row tiles">
      }
    }
    func.return
  }
}
// CHECK-LABEL: func.func @many_blocks()
// CHECK:         tile.exchange 2048 words {{.*}} row_address = 0x4c000
// CHECK:         tile.exchange 2048 words {{.*}} row_address = 0x9c000
