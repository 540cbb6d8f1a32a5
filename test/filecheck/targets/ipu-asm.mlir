// RUN: ipu-opt %s --split-input-file -p 'ipu-pipeline{tiles=2 catalog=amp_gemm_f16_r16_p16}' -t ipu-asm | filecheck %s
// RUN: ipu-opt %s --split-input-file -p 'ipu-pipeline{tiles=4 catalog=amp_gemm_f16_r16_p16}' -t ipu-asm | filecheck %s --check-prefix=FOUR

// The GEMMs are pinned to the 16-row FP16-partials candidates (catalog=...): this file is
// about the assembly listing, which then see the same lowering whatever the cost model prefers.

// FP16 C[32x128] = A[32x128] x B[128x128] on 2 tiles: each tile owns 16 output rows and the
// B column block j = its tile id (both k blocks). Per (j, k): a sync and an exchange phase
// (the home tile sends, the other receives), the home tile's local copy into its slot,
// then the GEMM kernel on both tiles. Placed addresses (place-memory): a 0x54000 (the
// k = 1 panel 16 x 64 x 2 = 2048 bytes further, 0x54800), b 0x5c000 (k = 1 block at
// 0x5e000), c 0xac000 (column panel j = 1 at 0xac800), slot 0x60000; row slots 16 bytes
// per iteration from 0x4c000 (x0: j = 0, 1; x1: j = 0, 1 at 0x4c020).
func.func @gemm(%a: tensor<32x128xf16>, %b: tensor<128x128xf16>) -> tensor<32x128xf16> {
  %c = graph.gemm %a, %b : (tensor<32x128xf16>, tensor<128x128xf16>) -> tensor<32x128xf16>
  func.return %c : tensor<32x128xf16>
}

// CHECK:      # ipu-asm: function @gemm, 2 tiles, target ipu21
// CHECK-NEXT:     .text
// CHECK-EMPTY:
// CHECK-NEXT: # tiles 0
// CHECK-NEXT: tile_0:
// CHECK-NEXT:     sync {{ +}}# graph.gemm %c %b: rhs block to output-row tiles [j=0]
// CHECK-NEXT:     exchange .Lx0_send.0, 0x4c000
// CHECK-NEXT:     call copy_words, out=0x60000, src=0x5c000, words=2048 # {{.*}} [j=0]
// CHECK-NEXT:     call amp_gemm_f16_init, out=0xac000, left=0x54000, right=0x60000, rows=16 # graph.gemm %c %c: initializing gemm phase k = 0 [j=0]
// CHECK-NEXT:     sync {{ +}}# {{.*}} [j=0, k=1]
// CHECK-NEXT:     exchange .Lx1_send.0, 0x4c020
// CHECK-NEXT:     call copy_words, out=0x60000, src=0x5e000, words=2048 # {{.*}} [j=0, k=1]
// CHECK-NEXT:     call amp_gemm_f16_accum, out=0xac000, left=0x54800, right=0x60000, rows=16 # {{.*}} [j=0, k=1]
// CHECK-NEXT:     sync {{ +}}# {{.*}} [j=1]
// CHECK-NEXT:     exchange .Lx0_receive.1, 0x4c010
// CHECK-NEXT:     call amp_gemm_f16_init, out=0xac800, left=0x54000, right=0x60000, rows=16 # {{.*}} [j=1]
// CHECK-NEXT:     sync {{ +}}# {{.*}} [j=1, k=1]
// CHECK-NEXT:     exchange .Lx1_receive.1, 0x4c030
// CHECK-NEXT:     call amp_gemm_f16_accum, out=0xac800, left=0x54800, right=0x60000, rows=16 # {{.*}} [j=1, k=1]
// CHECK-NEXT:     ret
// CHECK-EMPTY:
// CHECK-NEXT: # tiles 1
// CHECK-NEXT: tile_1:
// CHECK-NEXT:     sync {{ +}}# {{.*}} [j=0]
// CHECK-NEXT:     exchange .Lx0_receive.0, 0x4c000
// CHECK-NEXT:     call amp_gemm_f16_init, out=0xac000, left=0x54000, right=0x60000, rows=16 # {{.*}} [j=0]
// CHECK-NEXT:     sync {{ +}}# {{.*}} [j=0, k=1]
// CHECK-NEXT:     exchange .Lx1_receive.0, 0x4c020
// CHECK-NEXT:     call amp_gemm_f16_accum, out=0xac000, left=0x54800, right=0x60000, rows=16 # {{.*}} [j=0, k=1]
// CHECK-NEXT:     sync {{ +}}# {{.*}} [j=1]
// CHECK-NEXT:     exchange .Lx0_send.1, 0x4c010
// CHECK-NEXT:     call copy_words, out=0x60000, src=0x5c000, words=2048 # {{.*}} [j=1]
// CHECK-NEXT:     call amp_gemm_f16_init, out=0xac800, left=0x54000, right=0x60000, rows=16 # {{.*}} [j=1]
// CHECK-NEXT:     sync {{ +}}# {{.*}} [j=1, k=1]
// CHECK-NEXT:     exchange .Lx1_send.1, 0x4c030
// CHECK-NEXT:     call copy_words, out=0x60000, src=0x5e000, words=2048 # {{.*}} [j=1, k=1]
// CHECK-NEXT:     call amp_gemm_f16_accum, out=0xac800, left=0x54800, right=0x60000, rows=16 # {{.*}} [j=1, k=1]
// CHECK-NEXT:     ret

// Unique concrete rows of each shared row, named after the shared row and the iteration of
// its first use (x1's receiver rows have x0's words but are listed under x1, their op). Encodings by hand
// (spec: exchange-isa.md): sendpicp prefix 0xf0000000 (no words, no direction), inline word
// xpic << 18 | pic, xpic = 0x2000 | sender (the pair mux: the row plan's broadcast is a pair
// broadcast of 1024 64-bit items): 0x2000 << 18 | 0x18000 (pic = slot 0x60000 / 4) =
// 0x80018000, 0x2001 << 18 | 0x18000 = 0x80058000; delay 1029 = 0x40a00000 | 0x405;
// send 63, 0x17000, sctl = 0x78000000 | 63 << 21 | 0x17000 << 3 | sctl = 0x7feb800s (sctl 5
// or 6: a direction and bit 2, 64-bit items); sendoff 959 = 0x70000000 | (959 & 63) << 21 |
// (959 >> 6) << 14 | sctl = 0x77e3800s.
// CHECK:          .section .exchange_rows
// CHECK-NEXT: .Lx0_receive.0:
// CHECK-NEXT:     .word 0xf0000000, 0x80018000  # sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x18000
// CHECK-NEXT:     .word 0x40a00405              # delay 1029
// CHECK-NEXT: .Lx0_send.0:
// CHECK-NEXT:     .word 0x7feb8005              # send 63, 0x17000, 5
// CHECK-NEXT:     .word 0x77e38005              # sendoff 959, 0x0, 5
// CHECK-NEXT: .Lx1_receive.0:
// CHECK-NEXT:     .word 0xf0000000, 0x80018000  # sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic = 0x18000
// CHECK-NEXT:     .word 0x40a00405              # delay 1029
// CHECK-NEXT: .Lx1_send.0:
// CHECK-NEXT:     .word 0x7febc005              # send 63, 0x17800, 5
// CHECK-NEXT:     .word 0x77e38005              # sendoff 959, 0x0, 5
// CHECK-NEXT: .Lx0_receive.1:
// CHECK-NEXT:     .word 0xf0000000, 0x80058000  # sendpicp 0, 0x0, 0, 0, xpic = 0x2001, pic = 0x18000
// CHECK-NEXT:     .word 0x40a00405              # delay 1029
// CHECK-NEXT: .Lx0_send.1:
// CHECK-NEXT:     .word 0x7feb8006              # send 63, 0x17000, 6
// CHECK-NEXT:     .word 0x77e38006              # sendoff 959, 0x0, 6
// CHECK-NEXT: .Lx1_receive.1:
// CHECK-NEXT:     .word 0xf0000000, 0x80058000  # sendpicp 0, 0x0, 0, 0, xpic = 0x2001, pic = 0x18000
// CHECK-NEXT:     .word 0x40a00405              # delay 1029
// CHECK-NEXT: .Lx1_send.1:
// CHECK-NEXT:     .word 0x7febc006              # send 63, 0x17800, 6
// CHECK-NEXT:     .word 0x77e38006              # sendoff 959, 0x0, 6
// CHECK-NOT:  .word

// -----

// C[48x64] = A[48x64] x B[64x64]: one block, one phase. On 4 tiles, 3 output-row tiles;
// tile 0 holds B and sends it to tiles 1 and 2, which run identical programs and share one
// listing; tile 3 only takes part in the sync.
func.func @rows3(%a: tensor<48x64xf16>, %b: tensor<64x64xf16>) -> tensor<48x64xf16> {
  %c = graph.gemm %a, %b : (tensor<48x64xf16>, tensor<64x64xf16>) -> tensor<48x64xf16>
  func.return %c : tensor<48x64xf16>
}

// CHECK:      # ipu-asm: function @rows3, 2 tiles, target ipu21

// FOUR:      # ipu-asm: function @rows3, 4 tiles, target ipu21
// FOUR:      # tiles 0
// FOUR-NEXT: tile_0:
// FOUR-NEXT:     sync {{ +}}# graph.gemm %c %b: rhs block to output-row tiles [j=0]
// FOUR-NEXT:     exchange .Lx0_send, 0x4c000
// FOUR-NEXT:     call copy_words, out=[[SLOT:0x[0-9a-f]+]], src=[[B:0x[0-9a-f]+]], words=2048
// FOUR-NEXT:     call amp_gemm_f16_init, out=[[C:0x[0-9a-f]+]], left=[[A:0x[0-9a-f]+]], right=[[SLOT]], rows=16
// FOUR-NEXT:     ret
// FOUR-EMPTY:
// FOUR-NEXT: # tiles 1-2
// FOUR-NEXT: tile_1:
// FOUR-NEXT:     sync {{ +}}# graph.gemm %c %b: rhs block to output-row tiles [j=0]
// FOUR-NEXT:     exchange .Lx0_receive, 0x4c000
// FOUR-NEXT:     call amp_gemm_f16_init, out=[[C]], left=[[A]], right=[[SLOT]], rows=16
// FOUR-NEXT:     ret
// FOUR-EMPTY:
// FOUR-NEXT: # tiles 3
// FOUR-NEXT: tile_3:
// FOUR-NEXT:     sync
// FOUR-NEXT:     ret
// FOUR-EMPTY:
// FOUR-NEXT:     .section .exchange_rows
// FOUR-NEXT: .Lx0_receive:
// FOUR-NEXT:     .word 0xf0000000, 0x{{[0-9a-f]+}}  # sendpicp 0, 0x0, 0, 0, xpic = 0x2000, pic =
// FOUR-NEXT:     .word 0x40a00406              # delay 1030
// FOUR-NEXT: .Lx0_send:
// FOUR-NEXT:     .word 0x7f{{[0-9a-f]+}}5              # send 63, {{.*}}, 5
