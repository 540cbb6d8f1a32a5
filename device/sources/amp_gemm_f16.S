// amp_gemm_f16.S -- FP16 AMP GEMM of one output panel (a sketch; not assembled here).
// Its records (ABI, model implementation, cycles) come from device/model/kernels_gemm.py.
//
// AMP configuration A16/B16x16/C16: 16 left rows per pass, the 64x64 right block loaded into
// the AMP weights as 16x16 sub-blocks, FP32 partials, output rounded to FP16 once per call.
// Vertex-state record at $m0: out, left, right, rows (32-bit fields).

    .section .text.amp_gemm_f16, "ax"

// ABI: amp_gemm_f16_init(out, left, right; rows) -> void
// status: Implemented
// row_specialization: rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)
    .globl amp_gemm_f16_init
    .type amp_gemm_f16_init, @function
    .align 8
amp_gemm_f16_init:
    setzi   $m7, 0                    // mode: partials start at zero
    bri     .Lgemm_f16_body
    .size amp_gemm_f16_init, .-amp_gemm_f16_init

// ABI: amp_gemm_f16_accum(out, left, right; rows) -> void
// status: Implemented
// row_specialization: rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)
    .globl amp_gemm_f16_accum
    .type amp_gemm_f16_accum, @function
    .align 8
amp_gemm_f16_accum:
    setzi   $m7, 1                    // mode: partials start at the stored FP16 output
.Lgemm_f16_body:
    ld32    $m1, $m0, $m15, 0         // out   (amp_output panel, 32-byte aligned)
    ld32    $m2, $m0, $m15, 1         // left  (amp_left panel, 32-byte aligned)
    ld32    $m3, $m0, $m15, 2         // right (amp_right 64x64 block, 32-byte aligned)
    ld32    $m4, $m0, $m15, 3         // rows
    // load the 64x64 block into the AMP weight registers, 16x16 sub-block by sub-block
    // (4 x 4 sub-blocks; each `ld128putcs` feeds one row of 8 halves to the CWEI registers)
    // ... weight load loop over $m3 ...
    // row loop: 4 passes (one per 16-column group of out) x rows, streaming left through
    // the AMP with `f16v4sisoamp` (FP16 in, FP32 partials) and `ldst64pace` for the
    // paced left-load / output-store pairs; partials in $a registers are FP32,
    // seeded from out (accum) or zero (init), rounded with `f32v2tof16` on store.
.Lgemm_f16_rows:
    // ... f16v4sisoamp $a0:1, $a2:3, $a14:15, TAMP_F16V4_E4_P0 ...
    brnzdec $m4, .Lgemm_f16_rows
    exitz   $m15
    .size amp_gemm_f16_accum, .-amp_gemm_f16_accum

// FP32 partials across calls: the same AMP pass, but the partials are loaded from and stored
// to an f32 amp_output panel without rounding (no `f32v2tof16`), so a GEMM accumulates all of
// K in FP32 and rounds to FP16 once (convert_shard after the last K block).

// ABI: amp_gemm_f16p32_init(out, left, right; rows) -> void
// status: Implemented
// row_specialization: rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)
    .globl amp_gemm_f16p32_init
    .type amp_gemm_f16p32_init, @function
    .align 8
amp_gemm_f16p32_init:
    setzi   $m7, 0                    // mode: partials start at zero
    bri     .Lgemm_f16p32_body
    .size amp_gemm_f16p32_init, .-amp_gemm_f16p32_init

// ABI: amp_gemm_f16p32_accum(out, left, right; rows) -> void
// status: Implemented
// row_specialization: rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)
    .globl amp_gemm_f16p32_accum
    .type amp_gemm_f16p32_accum, @function
    .align 8
amp_gemm_f16p32_accum:
    setzi   $m7, 1                    // mode: partials start at the stored FP32 panel
.Lgemm_f16p32_body:
    ld32    $m1, $m0, $m15, 0         // out   (f32 amp_output panel, 32-byte aligned)
    ld32    $m2, $m0, $m15, 1         // left  (f16 amp_left panel, 32-byte aligned)
    ld32    $m3, $m0, $m15, 2         // right (f16 amp_right 64x64 block, 32-byte aligned)
    ld32    $m4, $m0, $m15, 3         // rows
    // ... weight load as amp_gemm_f16; row loop with `f16v4sisoamp`, partials seeded from
    // the f32 panel (accum) or zero (init) and stored back as f32 pairs (`st64pace`) ...
.Lgemm_f16p32_rows:
    brnzdec $m4, .Lgemm_f16p32_rows
    exitz   $m15
    .size amp_gemm_f16p32_accum, .-amp_gemm_f16p32_accum
