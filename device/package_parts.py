"""The parts of a package (`device/package.py`): its steps, host tensors, format version and
error class, below both the `Package` and the schema that loads one
(`device/package_schema.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from xdsl.utils.exceptions import DiagnosticException

FORMAT_VERSION = 3


class PackageError(DiagnosticException, ValueError):
    """A package directory that does not match the schema; the message starts with the file
    and the field at fault (`pkg/metadata.json: steps[3].row_address: ...`)."""


@dataclass
class HostTensor:
    """Where a graph input or output lives: one record per shard, as parallel arrays."""

    name: str
    shape: tuple[int, ...]
    precision: str  # device.target.Precision name
    order: str  # device.layouts order name
    padded: tuple[int, ...]  # stored shard shape, the same for every shard
    tiles: np.ndarray  # int32 [S]
    addresses: np.ndarray  # int64 [S] absolute byte address of the shard
    origins: np.ndarray  # int64 [S, rank] logical start of the shard per axis
    scale: int = 0  # FP8 power-of-two scale

    def shard_count(self) -> int:
        return int(self.tiles.shape[0])


@dataclass
class ExchangeStep:
    row_address: int
    row_id: np.ndarray  # int32 [tiles]; -1 = no row on that tile
    provenance: str = ""


@dataclass
class KernelStep:
    symbol: str
    tiles: np.ndarray  # int32 [n]
    pointers: np.ndarray  # int64 [n, pointer_count]
    scalars: tuple[int, ...] = ()
    provenance: str = ""
    # int64 [loops, pointer_count]: bytes each pointer advances per iteration of each
    # enclosing `LoopStep`, outermost first (None outside loops): a repeat's sequences.
    pointer_strides: np.ndarray | None = None

    def at(self, ivs: tuple[int, ...]) -> KernelStep:
        """The step as it runs in iteration `ivs` of its enclosing loops."""
        if self.pointer_strides is None or not ivs:
            return self
        advance = np.asarray(ivs, dtype=np.int64) @ self.pointer_strides
        return KernelStep(self.symbol, self.tiles, self.pointers + advance, self.scalars,
                          self.provenance)


@dataclass
class LoopStep:
    """`count` runs of `body`: the same rows at the same slots in every iteration, kernel
    pointers advanced by their strides (a structured repeat, kept as one loop so that the
    package does not grow with its depth)."""

    count: int
    body: list[Step]
    provenance: str = ""


Step = ExchangeStep | KernelStep | LoopStep
RunStep = ExchangeStep | KernelStep


def executed_steps(steps: list[Step], ivs: tuple[int, ...] = ()) -> Iterator[RunStep]:
    """The steps in the order the device runs them, loops unrolled (lazily)."""
    for step in steps:
        if isinstance(step, LoopStep):
            for iv in range(step.count):
                yield from executed_steps(step.body, (*ivs, iv))
        elif isinstance(step, KernelStep):
            yield step.at(ivs)
        else:
            yield step


def executed_count(steps: list[Step]) -> int:
    return sum(s.count * executed_count(s.body) if isinstance(s, LoopStep) else 1
               for s in steps)


def flat_steps(steps: list[Step]) -> Iterator[tuple[int, Step]]:
    """Every step of the program once, loops included, in pre-order with its loop depth."""
    for step in steps:
        yield 0, step
        if isinstance(step, LoopStep):
            yield from ((depth + 1, s) for depth, s in flat_steps(step.body))
