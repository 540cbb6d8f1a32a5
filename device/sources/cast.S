// cast.S -- Required kernels: ABI fixed, no implementation yet.
// Each entry point traps so that a package calling it fails loudly on hardware, as the
// executable model rejects a Required symbol. The ABI is device/kernels.py.

    .section .text.cast, "ax"

// ABI: cast_f32_to_f16(out, src; elements) -> void
// status: Required
// row_specialization: none
// Round-to-nearest-even f32 -> f16 conversion of `elements` values.
    .globl cast_f32_to_f16
    .type cast_f32_to_f16, @function
    .align 8
cast_f32_to_f16:
    trap    0                         // not implemented (Required)
    .size cast_f32_to_f16, .-cast_f32_to_f16

// ABI: cast_f16_to_f32(out, src; elements) -> void
// status: Required
// row_specialization: none
// Exact f16 -> f32 conversion of `elements` values.
    .globl cast_f16_to_f32
    .type cast_f16_to_f32, @function
    .align 8
cast_f16_to_f32:
    trap    0                         // not implemented (Required)
    .size cast_f16_to_f32, .-cast_f16_to_f32

// ABI: cast_f16_to_f8f143(out, src; elements, scale) -> void
// status: Required
// row_specialization: none
// f16 -> float8_e4m3fnuz codes with value q * 2**scale, saturating at +-240.
    .globl cast_f16_to_f8f143
    .type cast_f16_to_f8f143, @function
    .align 8
cast_f16_to_f8f143:
    trap    0                         // not implemented (Required)
    .size cast_f16_to_f8f143, .-cast_f16_to_f8f143

// ABI: cast_f8f143_to_f16(out, src; elements, scale) -> void
// status: Required
// row_specialization: none
// float8_e4m3fnuz codes (value q * 2**scale) -> f16.
    .globl cast_f8f143_to_f16
    .type cast_f8f143_to_f16, @function
    .align 8
cast_f8f143_to_f16:
    trap    0                         // not implemented (Required)
    .size cast_f8f143_to_f16, .-cast_f8f143_to_f16
