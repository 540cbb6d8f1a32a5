"""FP8 GEMM on the AMP: `amp_gemm_f8_init` / `amp_gemm_f8_accum`.

left and right hold float8_e4m3fnuz codes (value q * 2**left_scale, q * 2**right_scale) in
amp_left and amp_right order (FP8 amp_right uses 16-row sub-blocks, as f16); out is an f16
amp_output panel of partial sums in units of 2**out_scale (value = stored * 2**out_scale).
The AMP multiplies the stored codes; the three scales meet once, where a product joins the
partials: each call's 64-deep product of codes is computed exactly (float64: 4-bit
significands, 64 terms), scaled by 2**(left_scale + right_scale - out_scale) and rounded to
FP32, then `previous + product` (accum) or the product (init) is rounded once to f16. With
out_scale the FP8 result's scale, FP16 holds every FP8 value of that scale (240 < 65504, and
FP16's subnormals reach 2**-24 below FP8's 2**-10), so the partials neither overflow where
the FP8 result does not nor lose what it keeps. Rate: Target.amp_macs_per_cycle["f8f143"].
The alignment and memory-element rules are those of the f16/f32 AMP kernels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from device.layouts import AMP_BLOCK, FP8_SCALE_RANGE, block_bytes, pack, panel_bytes, unpack
from device.model.cycles import gemm_cycles
from device.target import Precision

if TYPE_CHECKING:
    from device.model.kernel_call import KernelCall, KernelImpl

F8, F16 = Precision.F8F143, Precision.F16
SCALES = ("left_scale", "right_scale", "out_scale")


def _scale(call: KernelCall, name: str) -> int:
    value = call.scalars[name]
    if value not in FP8_SCALE_RANGE:
        raise call.fail(f"scalar '{name}' = {value} is outside the FP8 scale range "
                        f"{FP8_SCALE_RANGE.start}..{FP8_SCALE_RANGE.stop - 1}")
    return value


def amp_gemm_f8(accumulate: bool) -> KernelImpl:
    def run(call: KernelCall) -> int:
        rows = call.positive_scalar("rows")
        left_scale, right_scale, out_scale = (_scale(call, n) for n in SCALES)
        alignment = call.target.pace_alignment
        out, left, right = (call.aligned_pointer(n, alignment) for n in ("out", "left", "right"))
        out_bytes = panel_bytes(rows, F16)
        call.check_amp_memory(out, left, out_bytes, left_bytes=panel_bytes(rows, F8))
        panel_shape = (rows, AMP_BLOCK)
        lhs = unpack(call.read("left", left, panel_bytes(rows, F8)), panel_shape, "amp_left", F8)
        rhs = unpack(call.read("right", right, block_bytes(F8)), (AMP_BLOCK, AMP_BLOCK),
                     "amp_right", F8)
        with np.errstate(over="ignore"):  # beyond FP32: inf, as the FP16 store would give
            product = ((lhs @ rhs) * 2.0 ** (left_scale + right_scale - out_scale)).astype(
                np.float32).astype(np.float64)
        if accumulate:
            product = unpack(call.read("out", out, out_bytes), panel_shape, "amp_output",
                             F16) + product
        call.write("out", out, pack(product, "amp_output", F16))
        return gemm_cycles(rows, F8, call.target)

    return run
