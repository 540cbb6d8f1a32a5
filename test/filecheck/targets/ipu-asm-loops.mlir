// RUN: ipu-opt %s -p 'ipu-pipeline{tiles=4 catalog=amp_gemm_f16_r16_p16}' -t ipu-asm | filecheck %s

// The GEMMs are pinned to the 16-row FP16-partials candidates (catalog=...): this file is
// about the listing's loops, which then see the same lowering whatever the cost model prefers.

// C[64x256] = A[64x512] x B[512x256] on 4 tiles: 4 column blocks j (one per tile as home)
// by 8 k blocks. Each tile's 32 phases fold into loops: over k = 1..7 within one j, and
// over the j it receives in, with the row slot address and the left panel stepping by
// constant amounts (the slot stride 0x10 per iteration, a 16x64 f16 panel 0x800).

func.func @gemm(%a: tensor<64x512xf16>, %b: tensor<512x256xf16>) -> tensor<64x256xf16> {
  %c = graph.gemm %a, %b : (tensor<64x512xf16>, tensor<512x256xf16>) -> tensor<64x256xf16>
  func.return %c : tensor<64x256xf16>
}

// CHECK:      # `loop iN, R` .. `endloop` runs its body R times with iN = 0 .. R-1
// CHECK:      # ipu-asm: function @gemm, 4 tiles, target ipu21
// CHECK:      tile_0:
// CHECK-NEXT:     sync {{ +}}# graph.gemm %c %b: rhs block to output-row tiles [j=0]
// CHECK-NEXT:     exchange .Lx0_send.0, 0x4c000
// CHECK-NEXT:     call copy_words, {{.*}} [j=0]
// CHECK-NEXT:     call amp_gemm_f16_init, out={{0x[0-9a-f]+}}, left=[[A:0x[0-9a-f]+]], {{.*}} [j=0]
// CHECK-NEXT:     loop i0, 7
// CHECK-NEXT:         sync {{ +}}# {{.*}} [j=0, k=1+1*i0]
// CHECK-NEXT:         exchange row[{{[0-9]+}}+1*i0], 0x4c040+0x10*i0
// CHECK-NEXT:         call copy_words, out=[[SLOT:0x[0-9a-f]+]], src=0x{{[0-9a-f]+}}+0x2000*i0, words=2048
// CHECK-NEXT:         call amp_gemm_f16_accum, out=[[C:0x[0-9a-f]+]], left=[[A1:0x[0-9a-f]+]]+0x800*i0, right=[[SLOT]], rows=16
// CHECK-NEXT:     endloop
// CHECK-NEXT:     loop i0, 2
// CHECK-NEXT:         sync {{ +}}# {{.*}} [j=1+1*i0]
// CHECK-NEXT:         exchange row[{{.*}}], 0x4c010+0x10*i0
// CHECK-NEXT:         call amp_gemm_f16_init, out=0x{{[0-9a-f]+}}+0x800*i0, left=[[A]], right=[[SLOT]], rows=16
// CHECK-NEXT:         loop i1, 7
// CHECK-NEXT:             sync {{ +}}# {{.*}} [j=1+1*i0, k=1+1*i1]
// CHECK-NEXT:             exchange row[{{.*}}], 0x4c0b0+0x70*i0+0x10*i1
// CHECK-NEXT:             call amp_gemm_f16_accum, {{.*}}left=[[A1]]+0x800*i1, {{.*}} [j=1+1*i0, k=1+1*i1]
// CHECK-NEXT:         endloop
// CHECK-NEXT:     endloop
// CHECK:          .section .exchange_rows
// CHECK-NEXT: .Lx0_receive.0: {{ +}}# row[0]
