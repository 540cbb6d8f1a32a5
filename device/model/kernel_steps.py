"""Kernel steps: one kernel on the tiles of a step, through its record (`device/kernels.py`).

A record's implementation reads its operands' bytes from tile memory in their declared
element orders (`device.layouts.unpack`), computes, and writes the result bytes back
(`pack`), so a wrong pointer, layout or packing shows up as wrong numbers; it returns the
modeled cycles of the call on its tile. A record with a batched form runs a whole step on
all its tiles in a few NumPy calls, or returns None when some tile would fail a check; the
step then runs tile by tile, which names the first failing tile exactly. The step lasts as
long as its slowest tile (`kernel_step_cycles`); a batched form charges the cycles of its
largest call (the cycle functions are non-decreasing in the work, so that is the slowest
tile's). Batched: the AMP GEMMs (FP16/FP32), `copy_words`, and the layout kernels
`gather_shard`, `gather_view` and `view_shard`, which a whole-chip re-tiling calls once per source shard
on every result tile (a GPT-2-small layer at 1472 tiles: 13,000 gather steps, 12 million
calls, of which 2% move anything): tile by tile they were most of the run.
"""

from __future__ import annotations

import numpy as np

from device.kernel_abi import KernelAbi
from device.kernels import RECORDS, get_kernel
from device.model.cycles import kernel_step_cycles
from device.model.errors import ModelError
from device.model.kernel_call import Kernel, KernelBatch, KernelCall
from device.model.memory import TileMemory
from device.package import KernelStep
from device.target import Target


def record_of(symbol: str, where: str) -> Kernel:
    """The record of an Implemented kernel (ModelError for an unknown or Required one)."""
    try:
        abi = get_kernel(symbol)
    except KeyError as error:
        raise ModelError(f"{where}: {error}") from None
    record = RECORDS.get(symbol)
    if not abi.implemented or record is None:
        raise ModelError(
            f"{where}: kernel '{symbol}' has status {abi.status} in the ABI registry: its ABI "
            f"is fixed but no implementation exists, so the package cannot run"
        )
    return record


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
    ordered = np.sort(tiles)
    if np.any(ordered[1:] == ordered[:-1]):
        raise ModelError(f"{where}: kernel {abi.symbol} lists a tile more than once")
    return pointers


def run_kernel_step(memory: TileMemory, step: KernelStep, where: str, target: Target) -> int:
    """Run `step` on each of its tiles; returns the step's cycles (the slowest tile)."""
    record = record_of(step.symbol, where)
    abi, impl = record.abi, record.run
    assert impl is not None  # record_of returns Implemented records only
    pointers = _check_step_shape(step, abi, where)
    scalars, variadic = abi.split_scalars(step.scalars)
    tiles = np.asarray(step.tiles, dtype=np.int64).reshape(-1)
    batched = record.batched
    if batched is not None and tiles.size > 1 and np.all((tiles >= 0) & (tiles < memory.tiles)):
        batch = KernelBatch(abi, tiles, dict(zip(abi.pointers, pointers.T, strict=True)),
                            scalars, memory, target, where, variadic)
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
