"""One kernel call on one tile, as the per-tile kernel implementations see it.

The kernels of `device/model/kernels_*.py` are written against `KernelCall`;
`device/model/kernel_impls.py` registers them by symbol (`IMPLEMENTATIONS`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from device.kernels import KernelAbi
from device.model.errors import ModelError
from device.model.memory import TileMemory
from device.target import Target


@dataclass(frozen=True)
class KernelCall:
    """One kernel call on one tile: named pointers and scalars, plus where it happens."""

    abi: KernelAbi
    tile: int
    pointers: dict[str, int]
    scalars: dict[str, int]
    memory: TileMemory
    target: Target
    where: str  # "step N" for messages
    variadic: tuple[int, ...] = ()  # the words after the named scalars (descriptors)

    def describe(self) -> str:
        return f"{self.where}: kernel {self.abi.symbol} on tile {self.tile}"

    def fail(self, reason: str) -> ModelError:
        return ModelError(f"{self.describe()}: {reason}")

    def aligned_pointer(self, name: str, alignment: int) -> int:
        address = self.pointers[name]
        if address % alignment:
            raise self.fail(f"pointer '{name}' = {address:#x} is not {alignment}-byte aligned")
        return address

    def positive_scalar(self, name: str, minimum: int = 1) -> int:
        value = self.scalars[name]
        if value < minimum:
            raise self.fail(f"scalar '{name}' = {value} must be >= {minimum}")
        return value

    def check_amp_memory(self, out: int, left: int, nbytes: int,
                         left_bytes: int | None = None) -> None:
        """The AMP stores its output to interleaved memory while the left stream is read, so
        the two must sit in different memory elements (spec: the retained GEMM plan).
        `left_bytes` defaults to `nbytes` (FP8 panels are half their f16 output's size)."""
        target = self.target
        if not (target.interleaved_start <= out and out + nbytes <= target.memory_end):
            raise self.fail(f"output panel at {out:#x} is not in interleaved memory "
                            f"[{target.interleaved_start:#x}, {target.memory_end:#x})")
        left_range = target.elements_of_range(left, nbytes if left_bytes is None else left_bytes)
        shared = target.elements_of_range(out, nbytes) & left_range
        if shared:
            raise self.fail(f"output panel at {out:#x} and left panel at {left:#x} share "
                            f"memory element {min(shared)}")

    def read(self, name: str, address: int, nbytes: int) -> np.ndarray:
        return self.memory.read(self.tile, address, nbytes, f"{self.describe()}, operand '{name}'")

    def write(self, name: str, address: int, data: np.ndarray) -> None:
        self.memory.write(self.tile, address, data, f"{self.describe()}, operand '{name}'")


KernelImpl = Callable[[KernelCall], int]
