// rearrange.S -- Required kernels: ABI fixed, no implementation yet.
// Each entry point traps so that a package calling it fails loudly on hardware, as the
// executable model rejects a Required symbol. The ABI is device/kernels.py.

    .section .text.rearrange, "ax"

// ABI: rearrange_rect(out, src; rows, cols, element_bytes, src_order, dst_order) -> void
// status: Required
// row_specialization: rows: multiple of 64 for amp_right, of 1 otherwise
// Repack one rows x cols rectangle between element orders (device.layouts ORDERS index);
// element_bytes is 1, 2 or 4.
    .globl rearrange_rect
    .type rearrange_rect, @function
    .align 8
rearrange_rect:
    trap    0                         // not implemented (Required)
    .size rearrange_rect, .-rearrange_rect
