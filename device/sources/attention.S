// attention.S -- Required kernels: ABI fixed, no implementation yet.
// Each entry point traps so that a package calling it fails loudly on hardware, as the
// executable model rejects a Required symbol. The ABI is device/kernels.py.

    .section .text.attention, "ax"

// ABI: attention_f16(out, query, key, value; query_rows, key_rows, head_dim, causal, scale_bits) -> void
// status: Required
// row_specialization: query_rows: multiple of 16 (AMP row blocks)
// out = softmax(scale * query @ key^T [causal mask]) @ value for one head; scale_bits is
// the f32 bit pattern of the scale; causal is 0 or 1.
    .globl attention_f16
    .type attention_f16, @function
    .align 8
attention_f16:
    trap    0                         // not implemented (Required)
    .size attention_f16, .-attention_f16
