// gelu.S -- Required kernels: ABI fixed, no implementation yet.
// Each entry point traps so that a package calling it fails loudly on hardware, as the
// executable model rejects a Required symbol. The ABI is device/kernels.py.

    .section .text.gelu, "ax"

// ABI: gelu_f16(out, src; elements) -> void
// status: Required
// row_specialization: none
// out = gelu(src), exact erf form, f16 row-major elements (FP32 internally).
    .globl gelu_f16
    .type gelu_f16, @function
    .align 8
gelu_f16:
    trap    0                         // not implemented (Required)
    .size gelu_f16, .-gelu_f16

// ABI: gelu_f32(out, src; elements) -> void
// status: Required
// row_specialization: none
// out = gelu(src), exact erf form, f32 row-major elements.
    .globl gelu_f32
    .type gelu_f32, @function
    .align 8
gelu_f32:
    trap    0                         // not implemented (Required)
    .size gelu_f32, .-gelu_f32
