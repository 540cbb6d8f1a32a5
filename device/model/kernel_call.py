"""A kernel record (`Kernel`) and the calls its parts are written against.

A `Kernel` is everything about one symbol in one place: its ABI (`device.kernel_abi`), its
per-tile model implementation (a function of a `KernelCall`: one call on one tile, reading
and writing tile memory), optionally a batched form (a function of a `KernelBatch`: the
whole step on all its tiles at once) and its cycle function (a function of `KernelScalars`:
the call's scalars, tile and target, never memory). The records live beside their
implementations in `device/model/kernels_*.py`; `device/kernels.py` is the table of all of
them by symbol, which the model's steps (`device/model/kernel_steps.py`) and the compiler's
cost model both read, so the model charges and the compiler estimates the same cycles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from device.kernel_abi import KernelAbi
from device.model.errors import ModelError
from device.model.memory import TileMemory
from device.shard_geometry import ShardGeometry, cached_descriptors
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


# Runs one call on one tile and returns its cycles (those of the record's cycle function).
KernelImpl = Callable[[KernelCall], int]


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
    variadic: tuple[int, ...] = ()  # the words after the named scalars (descriptors)

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


# Runs the whole step and returns its cycles, or None when some tile would fail a check of
# the per-tile form: the step then runs tile by tile, which raises the exact diagnostic. It
# must write the bytes the per-tile form writes (test/pytest/test_device_model_batched.py).
BatchedImpl = Callable[[KernelBatch], "int | None"]


@dataclass(frozen=True)
class KernelScalars:
    """One call as its cycles see it: named scalars, variadic words, tile and target."""

    abi: KernelAbi
    scalars: dict[str, int]
    words: tuple[int, ...]
    tile: int
    target: Target

    def formats(self) -> list[ShardGeometry]:
        """The pointers' descriptors, in pointer order (DescriptorError when malformed),
        decoded once per distinct words (`shard_geometry.cached_descriptors`)."""
        return list(cached_descriptors(tuple(self.words), len(self.abi.pointers)))


CallCycles = Callable[[KernelScalars], int]


@dataclass(frozen=True)
class StepScalars:
    """One step as its cycles see it: named scalars, variadic words, all its tiles."""

    abi: KernelAbi
    scalars: dict[str, int]
    words: tuple[int, ...]
    tiles: np.ndarray  # int64 [n]
    target: Target


# The cycles of a whole step (the max over its tiles of the call cycles) computed for all
# tiles at once, or None where the per-call function must be asked tile by tile (a tile it
# would refuse: that call then raises its exact error).
StepCycles = Callable[[StepScalars], "int | None"]


def of_formats(cycles: Callable[..., int]) -> CallCycles:
    """The cycle function of a descriptor kernel whose cycles depend on its pointers' formats
    only: `cycles(*formats, tile, target)` (`convert_shard_cycles`, `add_cycles`, ...)."""
    return lambda call: cycles(*call.formats(), call.tile, call.target)


@dataclass(frozen=True)
class Kernel:
    """One kernel: its ABI, per-tile model implementation, optional batched form and cycle
    function. An Implemented ABI needs `run` and `cycles`; a Required one has neither."""

    abi: KernelAbi
    run: KernelImpl | None = None
    cycles: CallCycles | None = None
    batched: BatchedImpl | None = None
    step_cycles: StepCycles | None = None

    def __post_init__(self) -> None:
        has_model = self.run is not None and self.cycles is not None
        if has_model != self.abi.implemented or (self.batched is not None and not has_model):
            raise ValueError(f"kernel {self.symbol}: status {self.abi.status} needs a model "
                             f"implementation and a cycle function exactly when Implemented")

    @property
    def symbol(self) -> str:
        return self.abi.symbol

    def call_cycles(self, scalars: Sequence[int], tile: int, target: Target) -> int:
        """Cycles of one call with these scalars (descriptors included) on `tile`; ValueError
        (e.g. `DescriptorError`) for scalars that give none."""
        if self.cycles is None:
            raise ValueError(f"kernel {self.symbol} is {self.abi.status}: it has no cycles")
        named, words = self.abi.split_scalars(scalars)
        return self.cycles(KernelScalars(self.abi, named, words, tile, target))

    def call_step_cycles(self, scalars: Sequence[int], tiles: Sequence[int] | np.ndarray,
                         target: Target) -> int:
        """Cycles of one step with these scalars on `tiles`: the max of `call_cycles` over
        them (what the model charges the step), through `step_cycles` when the record has
        it (a layout step on a whole chip: 1472 calls in a few NumPy operations)."""
        tiles = np.asarray(tiles, dtype=np.int64).reshape(-1)
        if self.step_cycles is not None and tiles.size > 1:
            named, words = self.abi.split_scalars(scalars)
            cycles = self.step_cycles(StepScalars(self.abi, named, words, tiles, target))
            if cycles is not None:
                return cycles
        return max((self.call_cycles(scalars, tile, target) for tile in tiles.tolist()),
                   default=0)
