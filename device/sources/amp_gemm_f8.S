// amp_gemm_f8.S -- FP8 AMP GEMM of one output panel (a sketch; not assembled here).
// Its records (ABI, model implementation, cycles) come from device/model/kernels_gemm.py.
//
// Inputs are float8_e4m3fnuz codes (F143, value q * 2**scale); the AMP runs them at the FP8
// rate (Target.amp_macs_per_cycle["f8f143"]) with FP16 partials, the only partials type
// poplibs supports for quarter inputs. The output panel is f16 amp_output; the two power-of-two
// scales are applied to the product (2**(left_scale + right_scale)) before the FP16 store.
// amp_right holds 16-row sub-blocks, as for f16. Vertex-state record at $m0: out, left, right,
// rows, left_scale, right_scale (32-bit fields).

    .section .text.amp_gemm_f8, "ax"

// ABI: amp_gemm_f8_init(out, left, right; rows, left_scale, right_scale) -> void
// status: Implemented
// row_specialization: rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)
    .globl amp_gemm_f8_init
    .type amp_gemm_f8_init, @function
    .align 8
amp_gemm_f8_init:
    setzi   $m7, 0                    // mode: partials start at zero
    bri     .Lgemm_f8_body
    .size amp_gemm_f8_init, .-amp_gemm_f8_init

// ABI: amp_gemm_f8_accum(out, left, right; rows, left_scale, right_scale) -> void
// status: Implemented
// row_specialization: rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)
    .globl amp_gemm_f8_accum
    .type amp_gemm_f8_accum, @function
    .align 8
amp_gemm_f8_accum:
    setzi   $m7, 1                    // mode: partials start at the stored FP16 output
.Lgemm_f8_body:
    ld32    $m1, $m0, $m15, 0         // out   (f16 amp_output panel, 32-byte aligned)
    ld32    $m2, $m0, $m15, 1         // left  (f8 amp_left panel, 32-byte aligned)
    ld32    $m3, $m0, $m15, 2         // right (f8 amp_right 64x64 block, 32-byte aligned)
    ld32    $m4, $m0, $m15, 3         // rows
    ld32    $m5, $m0, $m15, 4         // left_scale
    ld32    $m6, $m0, $m15, 5         // right_scale
    add     $m5, $m5, $m6             // product scale: 2**(left_scale + right_scale)
    // set the FP8 metadata ($FP_CTL quarter format F143, scale $m5) for the AMP
    // ... weight load: 4 x 4 sub-blocks of 16 x 16 codes from $m3 into the CWEI registers ...
.Lgemm_f8_rows:
    // ... f8v8hihoamp: FP8 left stream in, FP16 partials, seeded from out (accum) or 0 ...
    brnzdec $m4, .Lgemm_f8_rows
    exitz   $m15
    .size amp_gemm_f8_accum, .-amp_gemm_f8_accum
