// copy_words.S -- tile-local word copy (a sketch; not assembled here).
// Its record (ABI, model implementation, cycles) is in device/model/kernels_layout.py.
// Used by the GEMM plan when a block's home tile is also an output-row tile (its own
// broadcast does not reach it). Vertex-state record at $m0: out, src, words.

    .section .text.copy_words, "ax"

// ABI: copy_words(out, src; words) -> void
// status: Implemented
// row_specialization: none
    .globl copy_words
    .type copy_words, @function
    .align 8
copy_words:
    ld32    $m1, $m0, $m15, 0         // out
    ld32    $m2, $m0, $m15, 1         // src
    ld32    $m3, $m0, $m15, 2         // words
    brz     $m3, .Lcopy_done
    add     $m3, $m3, -1              // brnzdec counts down to zero inclusive
.Lcopy_loop:
    ld32step $m4, $m15, $m2+=, 1
    st32step $m4, $m15, $m1+=, 1
    brnzdec $m3, .Lcopy_loop
.Lcopy_done:
    exitz   $m15
    .size copy_words, .-copy_words
