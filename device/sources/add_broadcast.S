// add_broadcast.S -- Required kernels: ABI fixed, no implementation yet.
// Each entry point traps so that a package calling it fails loudly on hardware, as the
// executable model rejects a Required symbol. The ABI is device/kernels.py.

    .section .text.add_broadcast, "ax"

// ABI: add_broadcast_f16(out, lhs, rhs; rows, cols, lhs_row_stride, lhs_col_stride, rhs_row_stride, rhs_col_stride) -> void
// status: Required
// row_specialization: rows: any >= 1, one call per output rectangle
// out[r][c] = lhs[r*lrs + c*lcs] + rhs[r*rrs + c*rcs], f16 row-major out; a zero stride
// broadcasts that axis (NumPy broadcasting of a rectangle).
    .globl add_broadcast_f16
    .type add_broadcast_f16, @function
    .align 8
add_broadcast_f16:
    trap    0                         // not implemented (Required)
    .size add_broadcast_f16, .-add_broadcast_f16

// ABI: add_broadcast_f32(out, lhs, rhs; rows, cols, lhs_row_stride, lhs_col_stride, rhs_row_stride, rhs_col_stride) -> void
// status: Required
// row_specialization: rows: any >= 1, one call per output rectangle
// As add_broadcast_f16 with f32 elements.
    .globl add_broadcast_f32
    .type add_broadcast_f32, @function
    .align 8
add_broadcast_f32:
    trap    0                         // not implemented (Required)
    .size add_broadcast_f32, .-add_broadcast_f32
