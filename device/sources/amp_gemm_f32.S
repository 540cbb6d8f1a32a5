// amp_gemm_f32.S -- FP32 AMP GEMM of one output panel (a sketch; not assembled here).
// Its records (ABI, model implementation, cycles) come from device/model/kernels_gemm.py.
//
// AMP configuration A8/B8x16/C16: 16 left rows per pass, the 64x64 right block loaded into
// the AMP weights as 8x16 sub-blocks; FP32 inputs, partials and output.
// Vertex-state record at $m0: out, left, right, rows (32-bit fields).

    .section .text.amp_gemm_f32, "ax"

// ABI: amp_gemm_f32_init(out, left, right; rows) -> void
// status: Implemented
// row_specialization: rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)
    .globl amp_gemm_f32_init
    .type amp_gemm_f32_init, @function
    .align 8
amp_gemm_f32_init:
    setzi   $m7, 0                    // mode: partials start at zero
    bri     .Lgemm_f32_body
    .size amp_gemm_f32_init, .-amp_gemm_f32_init

// ABI: amp_gemm_f32_accum(out, left, right; rows) -> void
// status: Implemented
// row_specialization: rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)
    .globl amp_gemm_f32_accum
    .type amp_gemm_f32_accum, @function
    .align 8
amp_gemm_f32_accum:
    setzi   $m7, 1                    // mode: partials start at the stored FP32 output
.Lgemm_f32_body:
    ld32    $m1, $m0, $m15, 0         // out   (amp_output panel, 32-byte aligned)
    ld32    $m2, $m0, $m15, 1         // left  (amp_left panel, 32-byte aligned)
    ld32    $m3, $m0, $m15, 2         // right (amp_right 64x64 block, 32-byte aligned)
    ld32    $m4, $m0, $m15, 3         // rows
    // load the 64x64 block into the AMP weight registers, 8x16 sub-block by sub-block
    // (8 x 4 sub-blocks) with `ld128putcs`
    // ... weight load loop over $m3 ...
    // row loop: 4 passes (one per 16-column group of out) x rows, streaming left through
    // the AMP with `f32sisoamp` and `ldst64pace` for the paced left-load / output-store
    // pairs; partials seeded from out (accum) or zero (init).
.Lgemm_f32_rows:
    // ... f32sisoamp $a0:1, $a2, $a14:15, TAMP_F32_E4_P0 ...
    brnzdec $m4, .Lgemm_f32_rows
    exitz   $m15
    .size amp_gemm_f32_accum, .-amp_gemm_f32_accum
