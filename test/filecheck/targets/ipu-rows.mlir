// RUN: ipu-opt %s --split-input-file -p 'ipu-pipeline{tiles=2 catalog=amp_gemm_f16_r16_p16}' -t ipu-rows | filecheck %s --check-prefix=TWO --match-full-lines
// RUN: ipu-opt %s --split-input-file -p 'ipu-pipeline{tiles=4 catalog=amp_gemm_f16_r16_p16}' -t ipu-rows | filecheck %s --check-prefix=FOUR --match-full-lines

// The GEMMs are pinned to the 16-row FP16-partials candidates (catalog=...): this file is
// about the rows listing, which then see the same lowering whatever the cost model prefers.

// FP16 C[32x128] = A[32x128] x B[128x128] on 2 tiles. Steps per (j, k) iteration:
// exchange, home-tile copy, GEMM, so the exchanges are steps 0, 3, 6, 9 (iterations
// (0,0) (0,1) (1,0) (1,1)) with slots 0x4c000, 0x4c020 (x1, j = 0), 0x4c010, 0x4c030.
// One line per unique concrete row of each shared row: x1's receiver rows have the same
// words as x0's (same sender tile, slot and delay) but stay listed under their own op.
// Words: see ipu-asm.mlir (xpic << 18 | pic with xpic 0x2000 | sender (the pair mux) and pic 0x18000;
// delay 1029; send 63 from word 0x17000 or 0x17800; sctl 5 from tile 0, 6 from tile 1: 64-bit items).
func.func @gemm(%a: tensor<32x128xf16>, %b: tensor<128x128xf16>) -> tensor<32x128xf16> {
  %c = graph.gemm %a, %b : (tensor<32x128xf16>, tensor<128x128xf16>) -> tensor<32x128xf16>
  func.return %c : tensor<32x128xf16>
}

// TWO:      # ipu-rows: function @gemm, 2 tiles, 8 unique rows
// TWO-NEXT: @x0_receive.0: f0000000 80018000 40a00405
// TWO-NEXT:   step 0 at 0x4c000 on tiles 1
// TWO-NEXT: @x0_send.0: 7feb8005 77e38005
// TWO-NEXT:   step 0 at 0x4c000 on tiles 0
// TWO-NEXT: @x1_receive.0: f0000000 80018000 40a00405
// TWO-NEXT:   step 3 at 0x4c020 on tiles 1
// TWO-NEXT: @x1_send.0: 7febc005 77e38005
// TWO-NEXT:   step 3 at 0x4c020 on tiles 0
// TWO-NEXT: @x0_receive.1: f0000000 80058000 40a00405
// TWO-NEXT:   step 6 at 0x4c010 on tiles 0
// TWO-NEXT: @x0_send.1: 7feb8006 77e38006
// TWO-NEXT:   step 6 at 0x4c010 on tiles 1
// TWO-NEXT: @x1_receive.1: f0000000 80058000 40a00405
// TWO-NEXT:   step 9 at 0x4c030 on tiles 0
// TWO-NEXT: @x1_send.1: 7febc006 77e38006
// TWO-NEXT:   step 9 at 0x4c030 on tiles 1
// TWO-NEXT: {{/}}/ -----

// -----

// M = 16 on 4 tiles: tile 0 is the only output-row tile and column block j lives on tile j.
// Iteration j = 0 has no traffic, so it has no exchange step at all: steps 0-3 are tile 0's
// copies and GEMMs; then per j = 1..3: exchange (x0), GEMM, exchange (x1), GEMM. The slot of
// iteration n is 0x4c000 + 16 n (x0) and 0x4c040 + 16 n (x1); slot 0 of each stays unused.
// Sender rows differ only by the source (x0 0x17000, x1 0x17800), so one row each serves
// tiles 1-3 (sctl 6: tile 0 is below, 64-bit items); receiver rows carry xpic = 0x2000 | j
// and delay 1024 + L(j, 0) - 2 = 1028 + j: 0x40a00405, 0x40a00406, 0x40a00407.
func.func @one_row_tile(%a: tensor<16x128xf16>, %b: tensor<128x256xf16>) -> tensor<16x256xf16> {
  %c = graph.gemm %a, %b : (tensor<16x128xf16>, tensor<128x256xf16>) -> tensor<16x256xf16>
  func.return %c : tensor<16x256xf16>
}

// FOUR:      # ipu-rows: function @one_row_tile, 4 tiles, 8 unique rows
// FOUR-NEXT: @x0_receive.1: f0000000 80058000 40a00405
// FOUR-NEXT:   step 4 at 0x4c010 on tiles 0
// FOUR-NEXT: @x0_send: 7feb8006 77e38006
// FOUR-NEXT:   step 4 at 0x4c010 on tiles 1
// FOUR-NEXT:   step 8 at 0x4c020 on tiles 2
// FOUR-NEXT:   step 12 at 0x4c030 on tiles 3
// FOUR-NEXT: @x1_receive.1: f0000000 80058000 40a00405
// FOUR-NEXT:   step 6 at 0x4c050 on tiles 0
// FOUR-NEXT: @x1_send: 7febc006 77e38006
// FOUR-NEXT:   step 6 at 0x4c050 on tiles 1
// FOUR-NEXT:   step 10 at 0x4c060 on tiles 2
// FOUR-NEXT:   step 14 at 0x4c070 on tiles 3
// FOUR-NEXT: @x0_receive.2: f0000000 80098000 40a00406
// FOUR-NEXT:   step 8 at 0x4c020 on tiles 0
// FOUR-NEXT: @x1_receive.2: f0000000 80098000 40a00406
// FOUR-NEXT:   step 10 at 0x4c060 on tiles 0
// FOUR-NEXT: @x0_receive.3: f0000000 800d8000 40a00407
// FOUR-NEXT:   step 12 at 0x4c030 on tiles 0
// FOUR-NEXT: @x1_receive.3: f0000000 800d8000 40a00407
// FOUR-NEXT:   step 14 at 0x4c070 on tiles 0
