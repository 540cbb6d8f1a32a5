"""The AMP GEMM kernels, generated from one table (`GEMM_FAMILIES`): per family an `init`
and an `accum` kernel, `out = left @ right` and `out += left @ right` on one panel.

left is a 64-column amp_left panel of `rows` rows, right one 64x64 amp_right block, out a
64-column amp_output panel of `rows` rows in the family's accumulation precision (the
partials kept across calls). Every pointer is PACE-aligned (Target.pace_alignment), out lies
in interleaved memory and not in a memory element of left (`KernelCall.check_amp_memory`).
Rate: Target.amp_macs_per_cycle of the inputs' precision (`gemm_cycles`).

FP16 and FP32 inputs: the product of one call is formed in FP32 (float32 matmul: the AMP's
FP32 partials) and rounded once to out's precision at the store. FP8 (`scales`): left and
right hold float8_e4m3fnuz codes (value q * 2**left_scale, q * 2**right_scale; FP8
amp_right uses 16-row sub-blocks, as f16); each call's 64-deep product is computed exactly
(float64: 4-bit significands, 64 terms) and rounded to FP32, then `previous + product`
(accum) or the product (init) is rounded once to the f16 out panel. Planning picks a family
by (inputs, accumulation) (`planning.gemm_plans.KERNEL_FAMILY` reads this table).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from device.kernel_abi import IMPLEMENTED, KernelAbi, non_negative
from device.layouts import (
    AMP_BLOCK,
    FP8_SCALE_RANGE,
    block_bytes,
    from_order,
    pack,
    panel_bytes,
    unpack,
)
from device.model.cycles import gemm_cycles
from device.model.kernel_call import (
    BatchedImpl,
    Kernel,
    KernelBatch,
    KernelCall,
    KernelImpl,
    KernelScalars,
)
from device.target import Precision

F8, F16, F32 = Precision.F8F143, Precision.F16, Precision.F32
MODES = ("init", "accum")
GEMM_POINTERS = ("out", "left", "right")
# One entry point serves every row count: the 16-row AMP blocks are loop trips inside it.
GEMM_ROWS = "rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)"


@dataclass(frozen=True)
class GemmFamily:
    """One family of AMP kernels: `amp_gemm_{name}_init` and `amp_gemm_{name}_accum`."""

    name: str
    precision: Precision  # of left and right
    accumulate: Precision  # of the partials kept across calls: out's precision
    summary: str  # for the ABI doc
    scales: bool = False  # FP8: the scalars carry left_scale and right_scale

    @property
    def prefix(self) -> str:
        return f"amp_gemm_{self.name}_"


# FP16 inputs accumulate all of K in FP32 (`f16p32`: an f32 partials panel, rounded to FP16
# once at the end, by convert_shard) or round to FP16 after every 64-deep block (`f16`:
# cheaper, less accurate). FP8 has FP16 partials only. The order is the table's order.
GEMM_FAMILIES: tuple[GemmFamily, ...] = (
    GemmFamily("f16", F16, F16, "(f16), FP32 partials, stored FP16"),
    GemmFamily("f32", F32, F32, "(f32), FP32 throughout"),
    GemmFamily("f8", F8, F16, "(float8_e4m3fnuz codes, value q * 2**scale; the output panel "
               "is f16; each call's 64-deep product in FP32, then previous + product "
               "rounded to FP16), FP16 partials", scales=True),
    GemmFamily("f16p32", F16, F32, "(f16 inputs), FP32 partials stored FP32 in an f32 out "
               "panel (the partial sums, never rounded to FP16)"),
)


# ---- the per-tile forms -------------------------------------------------------------------
def _amp_gemm(family: GemmFamily, accumulate: bool) -> KernelImpl:
    precision, stored = family.precision, family.accumulate

    def run(call: KernelCall) -> int:
        rows = call.positive_scalar("rows")
        alignment = call.target.pace_alignment
        out, left, right = (call.aligned_pointer(n, alignment) for n in GEMM_POINTERS)
        call.check_amp_memory(out, left, panel_bytes(rows, stored),
                              left_bytes=panel_bytes(rows, precision))
        panel_shape = (rows, AMP_BLOCK)
        lhs = unpack(call.read("left", left, panel_bytes(rows, precision)), panel_shape,
                     "amp_left", precision)
        rhs = unpack(call.read("right", right, block_bytes(precision)), (AMP_BLOCK, AMP_BLOCK),
                     "amp_right", precision)
        # FP16 and FP32 inputs are exact in float32, and float32 matmul accumulates in FP32:
        # the AMP's FP32 partials. One rounding to the storage precision at the store.
        result = lhs.astype(np.float32) @ rhs.astype(np.float32)
        if accumulate:
            previous = unpack(call.read("out", out, panel_bytes(rows, stored)), panel_shape,
                              "amp_output", stored)
            result = previous.astype(np.float32) + result
        call.write("out", out, pack(result, "amp_output", stored))
        return gemm_cycles(rows, precision, call.target)

    return run


def _scale(call: KernelCall, name: str) -> int:
    value = call.scalars[name]
    if value not in FP8_SCALE_RANGE:
        raise call.fail(f"scalar '{name}' = {value} is outside the FP8 scale range "
                        f"{FP8_SCALE_RANGE.start}..{FP8_SCALE_RANGE.stop - 1}")
    return value


def _amp_gemm_f8(accumulate: bool) -> KernelImpl:
    def run(call: KernelCall) -> int:
        rows = call.positive_scalar("rows")
        left_scale, right_scale = _scale(call, "left_scale"), _scale(call, "right_scale")
        alignment = call.target.pace_alignment
        out, left, right = (call.aligned_pointer(n, alignment) for n in GEMM_POINTERS)
        out_bytes = panel_bytes(rows, F16)
        call.check_amp_memory(out, left, out_bytes, left_bytes=panel_bytes(rows, F8))
        panel_shape = (rows, AMP_BLOCK)
        lhs = unpack(call.read("left", left, panel_bytes(rows, F8)), panel_shape, "amp_left",
                     F8, left_scale)
        rhs = unpack(call.read("right", right, block_bytes(F8)), (AMP_BLOCK, AMP_BLOCK),
                     "amp_right", F8, right_scale)
        product = (lhs @ rhs).astype(np.float32).astype(np.float64)
        if accumulate:
            product = unpack(call.read("out", out, out_bytes), panel_shape, "amp_output",
                             F16) + product
        call.write("out", out, pack(product, "amp_output", F16))
        return gemm_cycles(rows, F8, call.target)

    return run


# ---- the batched forms (FP16 and FP32 inputs) ----------------------------------------------
def _element_span(batch: KernelBatch, address: np.ndarray,
                  nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """First and last memory element of [address, address + nbytes) per entry."""
    starts = np.array([e.start for e in batch.target.memory_elements], dtype=np.int64)
    return (np.searchsorted(starts, address, side="right") - 1,
            np.searchsorted(starts, address + nbytes - 1, side="right") - 1)


def _amp_memory_ok(batch: KernelBatch, nbytes: int, left_bytes: int) -> bool:
    """`KernelCall.check_amp_memory` for every tile at once."""
    target, out, left = batch.target, batch.pointers["out"], batch.pointers["left"]
    if np.any(out < target.interleaved_start) or np.any(out + nbytes > target.memory_end):
        return False
    out_first, out_last = _element_span(batch, out, nbytes)
    left_first, left_last = _element_span(batch, left, left_bytes)
    return not np.any(np.maximum(out_first, left_first) <= np.minimum(out_last, left_last))


# The AMP's operand storage types: FP16 and FP32 values convert exactly to float32, so the
# batched form reorders the stored values and converts once (unpack goes through float64).
AMP_STORAGE: dict[str, type[np.floating[Any]]] = {F16: np.float16, F32: np.float32}


def _amp_operand(raw: np.ndarray, shape: tuple[int, ...], order: str,
                 precision: str) -> np.ndarray:
    """`unpack` to float32 for the AMP's precisions."""
    stored = np.ascontiguousarray(raw).reshape(-1).view(AMP_STORAGE[precision])
    return from_order(stored, shape, order, precision).astype(np.float32)


def _amp_gemm_batched(family: GemmFamily, accumulate: bool) -> BatchedImpl:
    precision, stored = family.precision, family.accumulate

    def run(batch: KernelBatch) -> int | None:
        rows = batch.scalars["rows"]
        panel, block = panel_bytes(rows, precision), block_bytes(precision)
        out_panel = panel_bytes(rows, stored)
        if rows < 1 or not all(batch.aligned(n, batch.target.pace_alignment)
                               for n in GEMM_POINTERS):
            return None
        if not (batch.inside("out", out_panel) and batch.inside("left", panel)
                and batch.inside("right", block) and _amp_memory_ok(batch, out_panel, panel)):
            return None
        count = batch.tiles.size
        shape = (count, rows, AMP_BLOCK)
        lhs = _amp_operand(batch.read("left", panel), shape, "amp_left", precision)
        right = batch.read("right", block)
        if np.array_equal(right, np.broadcast_to(right[:1], right.shape)):
            # every tile holds the same block (a broadcast): decode it once. Still one
            # product per tile, so the sums run in the order of the per-tile form.
            rhs = _amp_operand(right[:1], (1, AMP_BLOCK, AMP_BLOCK), "amp_right", precision)
            result = np.matmul(lhs, rhs)
        else:
            rhs = _amp_operand(right, (count, AMP_BLOCK, AMP_BLOCK), "amp_right", precision)
            result = np.matmul(lhs, rhs)
        if accumulate:
            result += _amp_operand(batch.read("out", out_panel), shape, "amp_output", stored)
        batch.write("out", pack(result, "amp_output", stored))
        return gemm_cycles(rows, precision, batch.target)

    return run


# ---- the records ----------------------------------------------------------------------------
def _abi(family: GemmFamily, mode: str) -> KernelAbi:
    precision, stored = family.precision, family.accumulate

    def footprint(scalars: Mapping[str, int], _: tuple[int, ...]) -> dict[str, int]:
        non_negative(scalars, "rows")
        rows = scalars["rows"]
        return {"out": panel_bytes(rows, stored), "left": panel_bytes(rows, precision),
                "right": block_bytes(precision)}

    effect = "out = left @ right" if mode == "init" else "out += left @ right"
    scalars = ("rows", "left_scale", "right_scale") if family.scales else ("rows",)
    doc = (f"{effect} on the AMP {family.summary}. left: a 64-column {precision} amp_left "
           f"panel of `rows` rows; right: one 64x64 {precision} amp_right block; out: a "
           f"64-column {stored} amp_output panel of `rows` rows. Every pointer PACE-aligned "
           f"(Target.pace_alignment).")
    return KernelAbi(f"{family.prefix}{mode}", GEMM_POINTERS, scalars, "void", GEMM_ROWS,
                     IMPLEMENTED, doc, footprint)


def _record(family: GemmFamily, mode: str) -> Kernel:
    accumulate = mode == "accum"
    precision = family.precision

    def cycles(call: KernelScalars) -> int:
        return gemm_cycles(call.scalars["rows"], precision, call.target)

    if family.scales:
        return Kernel(_abi(family, mode), _amp_gemm_f8(accumulate), cycles)
    return Kernel(_abi(family, mode), _amp_gemm(family, accumulate), cycles,
                  _amp_gemm_batched(family, accumulate))


RECORDS: tuple[Kernel, ...] = tuple(_record(f, mode) for f in GEMM_FAMILIES for mode in MODES)
