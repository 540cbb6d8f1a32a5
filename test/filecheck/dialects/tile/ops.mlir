// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

func.func @gemm() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [16, 128] f16 amp_left standard align 32 tail 128 from tensor<32x128xf16> address 0x54000
  %b = tile.buffer @b input 1 on #tile.tiles<[0, 1, 3]> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 2> shard [16, 64] f32 amp_output interleaved align 32 tail 0 {note = "x"}
  %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
  tile.exchange 2048 words from %b[() -> (0)] on tile () -> (0) to %s[() -> (0)] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "rhs block to output-row tiles">
  tile.kernel @copy_words(%s[() -> (0)], %b[() -> (0)]) scalars [2048] on #tile.tiles<0 to 2> only () -> (0) iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "home tile keeps its block">
  tile.loop %n = 0 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "batch"> {
    tile.loop %k = 1 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "k blocks"> {
      tile.exchange 2048 words from %b[(d0, d1) -> (0)] on tile (d0, d1) -> (d1) to %s[(d0, d1) -> (0)] on #tile.tiles<0 to 2> iv(%n, %k) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "rhs"> schedule #tile.schedule<rows = [@r0, @r1], sender_rows = [1, 0], receiver_rows = [0, 0], row_address = 0x4c100>
      tile.kernel @amp_gemm_f16_accum(%c[(d0, d1) -> (0)], %a[(d0, d1) -> (d1 * 2048)], %s[(d0, d1) -> (0)]) scalars [16] on #tile.tiles<0 to 2> iv(%n, %k) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "accumulate">
    }
  }
  func.return
}
exchange.row @r0 {
  exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x18000
  exchange.delay 2055
}
exchange.row @r1 {
  exchange.sendpicp 0, 0x0, 0, 0, xpic = 0x0, pic = 0x18000
  exchange.delay 2055
}

// CHECK-LABEL: func.func @gemm()
// CHECK-NEXT:    %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [16, 128] f16 amp_left standard align 32 tail 128 from tensor<32x128xf16> address 0x54000
// CHECK-NEXT:    %b = tile.buffer @b input 1 on #tile.tiles<[0, 1, 3]> shard [64, 64] f16 amp_right standard align 32 tail 0
// CHECK-NEXT:    %c = tile.buffer @c output 0 on #tile.tiles<0 to 2> shard [16, 64] f32 amp_output interleaved align 32 tail 0 {note = "x"}
// CHECK-NEXT:    %s = tile.buffer @slot scratch on #tile.tiles<0 to 2> shard [64, 64] f16 amp_right standard align 32 tail 0
// CHECK-NEXT:    tile.exchange 2048 words from %b[() -> (0)] on tile () -> (0) to %s[() -> (0)] on #tile.tiles<0 to 2> iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "rhs block to output-row tiles">
// CHECK-NEXT:    tile.kernel @copy_words(%s[() -> (0)], %b[() -> (0)]) scalars [2048] on #tile.tiles<0 to 2> only () -> (0) iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "home tile keeps its block">
// CHECK-NEXT:    tile.loop %n = 0 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "batch"> {
// CHECK-NEXT:      tile.loop %k = 1 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "k blocks"> {
// CHECK-NEXT:        tile.exchange 2048 words from %b[(d0, d1) -> (0)] on tile (d0, d1) -> (d1) to %s[(d0, d1) -> (0)] on #tile.tiles<0 to 2> iv(%n, %k) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "rhs"> schedule #tile.schedule<rows = [@r0, @r1], sender_rows = [1, 0], receiver_rows = [0, 0], row_address = 0x4c100
// CHECK-NEXT:        tile.kernel @amp_gemm_f16_accum(%c[(d0, d1) -> (0)], %a[(d0, d1) -> ((d1 * 2048))], %s[(d0, d1) -> (0)]) scalars [16] on #tile.tiles<0 to 2> iv(%n, %k) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "accumulate">
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// CHECK-GENERIC:      %a = "tile.buffer"() <{sym_name = "a", kind = #tile<buffer_kind input>, tiles = #tile.tiles<0 to 2>, shape = array<i64: 16, 128>, precision = #mid<precision f16>, order = #mid<order amp_left>, memory = #mid<memory standard>, alignment = 32 : i64, tail = 128 : i64, index = 0 : i64, origin = tensor<32x128xf16>, address = 344064 : i64}> : () -> !tile.buffer
// CHECK-GENERIC-NEXT: %b = "tile.buffer"() <{sym_name = "b", kind = #tile<buffer_kind input>, tiles = #tile.tiles<[0, 1, 3]>, {{.*}}index = 1 : i64}> : () -> !tile.buffer
// CHECK-GENERIC-NEXT: %c = "tile.buffer"() <{sym_name = "c", kind = #tile<buffer_kind output>, {{.*}} memory = #mid<memory interleaved>, {{.*}}}> {note = "x"} : () -> !tile.buffer
// CHECK-GENERIC-NEXT: %s = "tile.buffer"() <{sym_name = "slot", kind = #tile<buffer_kind scratch>, {{.*}}tail = 0 : i64}> : () -> !tile.buffer
// CHECK-GENERIC-NEXT: "tile.exchange"(%b, %s) <{words = 2048 : i64, src_offset = affine_map<() -> (0)>, src_tile = affine_map<() -> (0)>, dst_offset = affine_map<() -> (0)>, dst_tiles = #tile.tiles<0 to 2>, provenance = #tile.provenance<op = "graph.gemm", value = "%c", reason = "rhs block to output-row tiles">}> : (!tile.buffer, !tile.buffer) -> ()
// CHECK-GENERIC-NEXT: "tile.kernel"(%s, %b) <{callee = @copy_words, offsets = [affine_map<() -> (0)>, affine_map<() -> (0)>], scalars = array<i64: 2048>, tiles = #tile.tiles<0 to 2>, provenance = {{.*}}, on_tile = affine_map<() -> (0)>, operandSegmentSizes = array<i32: 2, 0>}> : (!tile.buffer, !tile.buffer) -> ()
// CHECK-GENERIC-NEXT: "tile.loop"() <{lower = 0 : i64, upper = 2 : i64, provenance = #tile.provenance<op = "graph.gemm", value = "%c", reason = "batch">}> ({
// CHECK-GENERIC-NEXT: ^bb0(%n: index):
// CHECK-GENERIC-NEXT:   "tile.loop"() <{lower = 1 : i64, upper = 2 : i64, {{.*}}}> ({
// CHECK-GENERIC-NEXT:   ^{{.*}}(%k: index):
// CHECK-GENERIC-NEXT:     "tile.exchange"(%b, %s, %n, %k) <{{{.*}}schedule = #tile.schedule<rows = [@r0, @r1], sender_rows = [1, 0], receiver_rows = [0, 0], row_address = 0x4c100>}> : (!tile.buffer, !tile.buffer, index, index) -> ()
// CHECK-GENERIC-NEXT:     "tile.kernel"(%c, %a, %s, %n, %k) <{callee = @amp_gemm_f16_accum, {{.*}}operandSegmentSizes = array<i32: 3, 2>}> : (!tile.buffer, !tile.buffer, !tile.buffer, index, index) -> ()
