// The catalog is pinned to the row-plan candidates (the default catalog before the grid plan):
// this file tests the row plan; the grid plan has mid-to-tile-gemm-grid.mlir.
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64},mid-to-tile,place-memory' | filecheck %s
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16},mid-to-tile,place-memory{row-elements=1}' | filecheck %s --check-prefix=ROWS1
// RUN: ipu-opt %s -p 'graph-to-mid{tiles=4 catalog=amp_gemm_f16_r16},mid-to-tile,place-memory{row-elements=2}' | filecheck %s --check-prefix=ROWS2
// RUN: not ipu-opt %s -p 'graph-to-mid{tiles=4},mid-to-tile,place-memory{row-elements=-1}' 2>&1 | filecheck %s --check-prefix=NEGATIVE
// NEGATIVE: place-memory: row-elements=-1: expected a count of memory elements >= 0
// RUN: not ipu-opt %s -p 'graph-to-mid{tiles=4},mid-to-tile,place-memory{row-elements=9}' 2>&1 | filecheck %s --check-prefix=PAST
// PAST: place-memory: row-elements=9 reaches past the standard region (it ends at 0xac000)

// Code region [0x4c000, 0x54000) stays free; a (left stream, 8192 bytes + 16 tail) first,
// right after it. b and the slot are exchanged (b is sent, the slot receives), so they stay
// out of element 0, which the code region's instruction fetches use: b at the start of
// element 1 (0x5c000), the slot after b. The interleaved output at 0xac000.
func.func @gemm(%a: tensor<64x256xf16>, %b: tensor<256x128xf16>) -> tensor<64x128xf16> {
  %c = graph.gemm %a, %b : (tensor<64x256xf16>, tensor<256x128xf16>) -> tensor<64x128xf16>
  func.return %c : tensor<64x128xf16>
}
// CHECK:      %a = tile.buffer @a input 0 {{.*}} address 0x54000
// CHECK-NEXT: %b = tile.buffer @b input 1 {{.*}} address 0x5c000
// With room kept for exchange rows (what ipu-pipeline asks when the rows do not fit), the
// rest of element 0, and with row-elements=2 element 1 too, stay free of buffers.
// ROWS1:      %a = tile.buffer @a input 0 {{.*}} address 0x5c000
// ROWS2:      %a = tile.buffer @a input 0 {{.*}} address 0x6c000
// CHECK-NEXT: %c = tile.buffer @c output 0 {{.*}} interleaved {{.*}} address 0xac000
// CHECK-NEXT: %c_rhs_slot = tile.buffer @c_rhs_slot scratch {{.*}} address 0x60000
