"""NumPy semantics of the Implemented kernels, by ABI symbol.

Each implementation reads its operands' bytes from tile memory in their declared element
orders (`device.layouts.unpack`), computes, and writes the result bytes back (`pack`), so a
wrong pointer, layout or packing shows up as wrong numbers. It returns the modeled cycles of
the call on its tile.

Batching is an optional capability of a kernel (`device.model.kernel_batches.BATCHED`): a
batched form runs a whole step on all its tiles in a few NumPy calls, or returns None when
some tile would fail a check, and the step then runs tile by tile through `IMPLEMENTATIONS`,
which names the first failing tile exactly. A kernel without a batched form always runs
tile by tile, so every kernel needs its per-tile `KernelImpl`.
"""

from __future__ import annotations

import numpy as np

from device.kernels import KernelAbi, get_kernel
from device.layouts import AMP_BLOCK, block_bytes, pack, panel_bytes, unpack
from device.model import (
    kernels_attention,
    kernels_attention_blocked,
    kernels_gemm_f8,
    kernels_layer_norm,
    kernels_layout,
    kernels_pointwise,
    kernels_views,
)
from device.model.cycles import copy_cycles, gemm_cycles, kernel_step_cycles
from device.model.errors import ModelError
from device.model.kernel_batches import BATCHED, KernelBatch
from device.model.kernel_call import KernelCall, KernelImpl
from device.model.memory import TileMemory
from device.package import KernelStep
from device.target import WORD_BYTES, Precision, Target


def _amp_gemm(precision: str, accumulate: bool, out_precision: str | None = None) -> KernelImpl:
    """`out_precision` (default: the inputs') is where the FP32 partials are stored: f32
    for `amp_gemm_f16p32_*`, which keeps them unrounded across calls."""
    stored = out_precision or precision

    def run(call: KernelCall) -> int:
        rows = call.positive_scalar("rows")
        alignment = call.target.pace_alignment
        out, left, right = (call.aligned_pointer(n, alignment) for n in ("out", "left", "right"))
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


def _copy_words(call: KernelCall) -> int:
    words = call.positive_scalar("words", minimum=0)
    out, src = (call.aligned_pointer(n, WORD_BYTES) for n in ("out", "src"))
    nbytes = words * WORD_BYTES
    call.write("out", out, call.read("src", src, nbytes))
    return copy_cycles(nbytes, call.target)


IMPLEMENTATIONS: dict[str, KernelImpl] = {
    "amp_gemm_f16_init": _amp_gemm(Precision.F16, accumulate=False),
    "amp_gemm_f16_accum": _amp_gemm(Precision.F16, accumulate=True),
    "amp_gemm_f32_init": _amp_gemm(Precision.F32, accumulate=False),
    "amp_gemm_f32_accum": _amp_gemm(Precision.F32, accumulate=True),
    "amp_gemm_f16p32_init": _amp_gemm(Precision.F16, accumulate=False, out_precision=Precision.F32),
    "amp_gemm_f16p32_accum": _amp_gemm(Precision.F16, accumulate=True, out_precision=Precision.F32),
    "copy_words": _copy_words,
    "amp_gemm_f8_init": kernels_gemm_f8.amp_gemm_f8(accumulate=False),
    "amp_gemm_f8_accum": kernels_gemm_f8.amp_gemm_f8(accumulate=True),
    "fill_zero": kernels_layout.fill_zero,
    "convert_shard": kernels_layout.convert_shard,
    "gather_shard": kernels_layout.gather_shard,
    "gelu": kernels_pointwise.gelu,
    "add": kernels_pointwise.add,
    "attention": kernels_attention.attention,
    "layer_norm": kernels_layer_norm.layer_norm,
    "view_shard": kernels_views.view_shard,
    "gather_view": kernels_views.gather_view,
    **kernels_attention_blocked.IMPLEMENTATIONS,
}


def implementation_of(symbol: str, where: str) -> tuple[KernelAbi, KernelImpl]:
    try:
        abi = get_kernel(symbol)
    except KeyError as error:
        raise ModelError(f"{where}: {error}") from None
    if not abi.implemented or symbol not in IMPLEMENTATIONS:
        raise ModelError(
            f"{where}: kernel '{symbol}' has status {abi.status} in the ABI registry: its ABI "
            f"is fixed but no implementation exists, so the package cannot run"
        )
    return abi, IMPLEMENTATIONS[symbol]


def _check_step_shape(step: KernelStep, abi: KernelAbi, where: str) -> np.ndarray:
    if not abi.accepts_scalars(len(step.scalars)):
        raise ModelError(
            f"{where}: kernel {abi.symbol} takes {len(abi.scalars)} scalars "
            f"({', '.join(abi.scalars)}), the step gives {len(step.scalars)}"
        )
    pointers = np.asarray(step.pointers, dtype=np.int64)
    tiles = np.asarray(step.tiles).reshape(-1)
    if pointers.ndim != 2 or pointers.shape != (tiles.size, len(abi.pointers)):
        raise ModelError(
            f"{where}: kernel {abi.symbol} takes {len(abi.pointers)} pointers "
            f"({', '.join(abi.pointers)}) on each of {tiles.size} tiles; the step's pointer "
            f"array has shape {pointers.shape}"
        )
    if len(set(tiles.tolist())) != tiles.size:
        raise ModelError(f"{where}: kernel {abi.symbol} lists a tile more than once")
    return pointers


def run_kernel_step(memory: TileMemory, step: KernelStep, where: str, target: Target) -> int:
    """Run `step` on each of its tiles; returns the step's cycles (the slowest tile)."""
    abi, impl = implementation_of(step.symbol, where)
    pointers = _check_step_shape(step, abi, where)
    scalars, variadic = abi.split_scalars(step.scalars)
    tiles = np.asarray(step.tiles, dtype=np.int64).reshape(-1)
    batched = BATCHED.get(step.symbol)
    if batched is not None and tiles.size > 1 and np.all((tiles >= 0) & (tiles < memory.tiles)):
        batch = KernelBatch(abi, tiles, dict(zip(abi.pointers, pointers.T, strict=True)),
                            scalars, memory, target, where)
        cycles = batched(batch)
        if cycles is not None:
            return cycles
    per_tile = []
    for tile, row in zip(np.asarray(step.tiles).reshape(-1).tolist(), pointers.tolist(),
                         strict=True):
        memory.check_tile(tile, f"{where}: kernel {abi.symbol}")
        call = KernelCall(abi, tile, dict(zip(abi.pointers, row, strict=True)), scalars,
                          memory, target, where, variadic)
        per_tile.append(impl(call))
    return kernel_step_cycles(per_tile)
