"""Batched kernel steps: one kernel on all the tiles of a step, in a few NumPy calls.

`BATCHED` maps an ABI symbol to a function of a `KernelBatch` (the step's tiles, and its
pointers as one array per name) that returns the step's cycles, or None when some tile would
fail a check of the per-tile implementation (`device.model.kernel_impls`); the step then runs
tile by tile, which raises the exact diagnostic. A batched form must write the same bytes as
the per-tile form (test/pytest/test_device_model_batched.py compares them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from device.kernels import KernelAbi
from device.layouts import AMP_BLOCK, block_bytes, from_order, pack, panel_bytes
from device.model.cycles import copy_cycles, gemm_cycles
from device.model.memory import TileMemory
from device.target import WORD_BYTES, Precision, Target


@dataclass(frozen=True)
class KernelBatch:
    """One kernel step on all its tiles: pointers as one int64 array per name."""

    abi: KernelAbi
    tiles: np.ndarray  # int64 [n], distinct and inside the package
    pointers: dict[str, np.ndarray]
    scalars: dict[str, int]
    memory: TileMemory
    target: Target
    where: str

    def aligned(self, name: str, alignment: int) -> bool:
        return not np.any(self.pointers[name] % alignment)

    def inside(self, name: str, nbytes: int) -> bool:
        address = self.pointers[name]
        return bool(np.all(address >= self.memory.base) and
                    np.all(address + nbytes <= self.memory.end))

    def read(self, name: str, nbytes: int) -> np.ndarray:
        """[n, nbytes] operand bytes (the caller checked `inside`)."""
        return self.memory.tile_bytes(self.tiles, self._address(name), nbytes)

    def write(self, name: str, data: np.ndarray) -> None:
        self.memory.write_tile_bytes(self.tiles, self._address(name),
                                     data.reshape(self.tiles.size, -1))

    def _address(self, name: str) -> np.ndarray | int:
        """One address when every tile uses the same one (a slice instead of a gather)."""
        address = self.pointers[name]
        return int(address[0]) if np.all(address == address[0]) else address


BatchedImpl = Callable[[KernelBatch], "int | None"]


def _element_span(target: Target, address: np.ndarray, nbytes: int) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """First and last memory element of [address, address + nbytes) per entry."""
    starts = np.array([e.start for e in target.memory_elements], dtype=np.int64)
    return (np.searchsorted(starts, address, side="right") - 1,
            np.searchsorted(starts, address + nbytes - 1, side="right") - 1)


def _amp_memory_ok(batch: KernelBatch, nbytes: int, left_bytes: int | None = None) -> bool:
    """`KernelCall.check_amp_memory` for every tile at once."""
    target, out, left = batch.target, batch.pointers["out"], batch.pointers["left"]
    if np.any(out < target.interleaved_start) or np.any(out + nbytes > target.memory_end):
        return False
    out_first, out_last = _element_span(target, out, nbytes)
    left_first, left_last = _element_span(target, left,
                                          nbytes if left_bytes is None else left_bytes)
    return not np.any(np.maximum(out_first, left_first) <= np.minimum(out_last, left_last))


# The AMP's operand storage types: FP16 and FP32 values convert exactly to float32, so the
# batched form reorders the stored values and converts once (unpack goes through float64).
AMP_STORAGE: dict[str, type[np.floating[Any]]] = {Precision.F16: np.float16, Precision.F32: np.float32}


def _amp_operand(raw: np.ndarray, shape: tuple[int, ...], order: str,
                 precision: str) -> np.ndarray:
    """`unpack` to float32 for the AMP's precisions."""
    stored = np.ascontiguousarray(raw).reshape(-1).view(AMP_STORAGE[precision])
    return from_order(stored, shape, order, precision).astype(np.float32)


def _amp_gemm_batched(precision: str, accumulate: bool,
                      out_precision: str | None = None) -> BatchedImpl:
    stored = out_precision or precision

    def run(batch: KernelBatch) -> int | None:
        rows = batch.scalars["rows"]
        panel, block = panel_bytes(rows, precision), block_bytes(precision)
        out_panel = panel_bytes(rows, stored)
        names = ("out", "left", "right")
        if rows < 1 or not all(batch.aligned(n, batch.target.pace_alignment) for n in names):
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


def _copy_words_batched(batch: KernelBatch) -> int | None:
    words = batch.scalars["words"]
    nbytes = words * WORD_BYTES
    if words < 0 or not (batch.aligned("out", WORD_BYTES) and batch.aligned("src", WORD_BYTES)):
        return None
    if not (batch.inside("out", nbytes) and batch.inside("src", nbytes)):
        return None
    batch.write("out", batch.read("src", nbytes))
    return copy_cycles(nbytes, batch.target)


BATCHED: dict[str, BatchedImpl] = {
    "amp_gemm_f16_init": _amp_gemm_batched(Precision.F16, accumulate=False),
    "amp_gemm_f16_accum": _amp_gemm_batched(Precision.F16, accumulate=True),
    "amp_gemm_f32_init": _amp_gemm_batched(Precision.F32, accumulate=False),
    "amp_gemm_f32_accum": _amp_gemm_batched(Precision.F32, accumulate=True),
    "amp_gemm_f16p32_init": _amp_gemm_batched(Precision.F16, False, Precision.F32),
    "amp_gemm_f16p32_accum": _amp_gemm_batched(Precision.F16, True, Precision.F32),
    "copy_words": _copy_words_batched,
}
