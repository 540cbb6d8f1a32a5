// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

// The grid GEMM's IR on a 2 x 2 grid (tile t = 2r + c): concurrent exchange groups
// (`groups G shift MAP`: group g sends from src_tile(k, g) to dst_tiles shifted by
// shift(k, g)) and kernel home views (`home [P: %buf[MAP] on TILES shift MAP]`: on TILES
// shifted by shift(k), pointer P reads %buf instead of its own view).
func.func @grid() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  tile.loop %k = 0 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "k blocks"> {
    tile.exchange 512 words from %a[(d0) -> (0)] on tile (d0, d1) -> (((d1 * 2) + d0)) to %l[(d0) -> (0)] on #tile.tiles<0 to 2> groups 2 shift (d0, d1) -> ((d1 * 2)) iv(%k) provenance #tile.provenance<op = "graph.gemm", value = "%a", reason = "lhs panel k along every grid row">
    tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0, d1) -> (((d0 * 2) + d1)) to %r[(d0) -> (0)] on #tile.tiles<[0, 2]> groups 2 shift (d0, d1) -> (d1) iv(%k) provenance #tile.provenance<op = "graph.gemm", value = "%b", reason = "rhs blocks k down every grid column">
    tile.kernel @amp_gemm_f16_accum(%c[(d0) -> (0)], %l[(d0) -> (0)], %r[(d0) -> (0)]) scalars [16] on #tile.tiles<0 to 4> home [1: %a[(d0) -> (0)] on #tile.tiles<[0, 2]> shift (d0) -> (d0), 2: %b[(d0) -> (0)] on #tile.tiles<0 to 2> shift (d0) -> ((d0 * 2))] iv(%k) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "accumulate">
  }
  func.return
}

// CHECK-LABEL: func.func @grid()
// CHECK-NEXT:   %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
// CHECK-NEXT:   %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
// CHECK-NEXT:   %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
// CHECK-NEXT:   %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
// CHECK-NEXT:   %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
// CHECK-NEXT:   tile.loop %k = 0 to 2 provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "k blocks"> {
// CHECK-NEXT:     tile.exchange 512 words from %a[(d0) -> (0)] on tile (d0, d1) -> (((d1 * 2) + d0)) to %l[(d0) -> (0)] on #tile.tiles<0 to 2> groups 2 shift (d0, d1) -> ((d1 * 2)) iv(%k) provenance #tile.provenance<op = "graph.gemm", value = "%a", reason = "lhs panel k along every grid row">
// CHECK-NEXT:     tile.exchange 2048 words from %b[(d0) -> (0)] on tile (d0, d1) -> (((d0 * 2) + d1)) to %r[(d0) -> (0)] on #tile.tiles<[0, 2]> groups 2 shift (d0, d1) -> (d1) iv(%k) provenance #tile.provenance<op = "graph.gemm", value = "%b", reason = "rhs blocks k down every grid column">
// CHECK-NEXT:     tile.kernel @amp_gemm_f16_accum(%c[(d0) -> (0)], %l[(d0) -> (0)], %r[(d0) -> (0)]) scalars [16] on #tile.tiles<0 to 4> home [1: %a[(d0) -> (0)] on #tile.tiles<[0, 2]> shift (d0) -> (d0), 2: %b[(d0) -> (0)] on #tile.tiles<0 to 2> shift (d0) -> ((d0 * 2))] iv(%k) provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "accumulate">
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NEXT: }

// CHECK-GENERIC: "tile.exchange"(%a, %l, %k) <{words = 512 : i64, src_offset = affine_map<(d0) -> (0)>, src_tile = affine_map<(d0, d1) -> (((d1 * 2) + d0))>, dst_offset = affine_map<(d0) -> (0)>, dst_tiles = #tile.tiles<0 to 2>, provenance = #tile.provenance<op = "graph.gemm", value = "%a", reason = "lhs panel k along every grid row">, groups = 2 : i64, dst_shift = affine_map<(d0, d1) -> ((d1 * 2))>}> : (!tile.buffer, !tile.buffer, index) -> ()
// CHECK-GENERIC: "tile.exchange"(%b, %r, %k) <{words = 2048 : i64, src_offset = affine_map<(d0) -> (0)>, src_tile = affine_map<(d0, d1) -> (((d0 * 2) + d1))>, dst_offset = affine_map<(d0) -> (0)>, dst_tiles = #tile.tiles<[0, 2]>, provenance = #tile.provenance<op = "graph.gemm", value = "%b", reason = "rhs blocks k down every grid column">, groups = 2 : i64, dst_shift = affine_map<(d0, d1) -> (d1)>}> : (!tile.buffer, !tile.buffer, index) -> ()
// CHECK-GENERIC: "tile.kernel"(%c, %l, %r, %a, %b, %k) <{callee = @amp_gemm_f16_accum, offsets = [affine_map<(d0) -> (0)>, affine_map<(d0) -> (0)>, affine_map<(d0) -> (0)>, affine_map<(d0) -> (0)>, affine_map<(d0) -> (0)>], scalars = array<i64: 16>, tiles = #tile.tiles<0 to 4>, provenance = #tile.provenance<op = "graph.gemm", value = "%c", reason = "accumulate">, home_pointers = array<i64: 1, 2>, home_tiles = [#tile.tiles<[0, 2]>, #tile.tiles<0 to 2>], home_shifts = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ((d0 * 2))>], operandSegmentSizes = array<i32: 5, 1>}> : (!tile.buffer, !tile.buffer, !tile.buffer, !tile.buffer, !tile.buffer, index) -> ()

// -----

// A pair broadcast (`pairs`): the words go as 64-bit items to tile pairs (2i, 2i + 1),
// which take them through their pair mux at two words per event.
func.func @pairs() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  tile.exchange 512 words from %a[() -> (0)] on tile (d0) -> ((d0 * 2)) to %l[() -> (0)] on #tile.tiles<0 to 2> groups 2 shift (d0) -> ((d0 * 2)) pairs iv() provenance #tile.provenance<op = "graph.gemm", value = "%a", reason = "lhs panel along every grid row">
  func.return
}

// CHECK-LABEL: func.func @pairs()
// CHECK:         tile.exchange 512 words from %a[() -> (0)] on tile (d0) -> ((d0 * 2)) to %l[() -> (0)] on #tile.tiles<0 to 2> groups 2 shift (d0) -> ((d0 * 2)) pairs iv() provenance
// CHECK-GENERIC: "tile.exchange"(%a, %l) <{{{.*}}groups = 2 : i64, dst_shift = affine_map<(d0) -> ((d0 * 2))>, pairs}> : (!tile.buffer, !tile.buffer) -> ()
