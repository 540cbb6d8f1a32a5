"""Modeled cycles of each step, from the target's rates only (no constants here)."""

from __future__ import annotations

from device.layouts import AMP_BLOCK
from device.target import Target


def exchange_step_cycles(phase_events: int, target: Target) -> int:
    """A sync, then one exchange event per cycle for the whole phase."""
    return target.sync_cycles + phase_events


def gemm_cycles(rows: int, precision: str, target: Target) -> int:
    """One `rows` x 64 panel times one 64x64 block on the AMP."""
    return target.amp_cycles(rows * AMP_BLOCK * AMP_BLOCK, precision)


def copy_cycles(nbytes: int, target: Target) -> int:
    return target.vector_cycles(nbytes)


def kernel_step_cycles(per_tile_cycles: list[int]) -> int:
    """Tiles run their kernels in parallel; the step lasts as long as the slowest tile."""
    return max(per_tile_cycles, default=0)
