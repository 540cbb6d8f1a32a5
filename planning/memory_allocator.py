"""First-fit placement of buffers in one tile's SRAM: the rules of `place-memory`, in one place.

`place-memory` places every `tile.buffer`; `graph-to-mid` places the buffers of one
output-row tile of a GEMM candidate to reject plans that could not be placed. Both use this
allocator, so the plan check cannot drift from the pass. The rules (spec: architecture.md,
the retained GEMM plan; exchange-isa.md for the contention):

- nothing goes in the code region (`Target.code_region`); buffers that an exchange sends from
  or receives into are also kept out of the memory elements the code region touches, so a
  row's instruction fetch never contends with its own sends or incoming writes;
- interleaved buffers go to the interleaved region; standard buffers go below it and spill
  into the interleaved region only when the standard region is full;
- a buffer's access tail is reserved right after it;
- a buffer and its *partners* (the `out` and `left` operands of an AMP kernel) never share a
  memory element (`Target.elements_of_range`);
- two buffers that share a tile never overlap.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from device.target import Target

K = TypeVar("K", bound=Hashable)


def align_up(address: int, alignment: int) -> int:
    return -(-address // alignment) * alignment


@dataclass(frozen=True)
class Request:
    """What the allocator needs to know of one buffer."""

    nbytes: int
    tail: int  # access tail reserved after the buffer
    alignment: int
    interleaved: bool
    exchanged: bool  # an exchange source or destination

    @property
    def extent(self) -> int:
        return self.nbytes + self.tail


def code_elements_end(target: Target) -> int:
    """End of the last memory element the code region touches."""
    code_start, code_end = target.code_region
    return max(e.end for e in target.memory_elements if e.start < code_end and code_start < e.end)


def regions(request: Request, target: Target) -> list[tuple[int, int]]:
    """Where a buffer may go, in the order they are tried."""
    interleaved = (target.interleaved_start, target.memory_end)
    if request.interleaved:
        return [interleaved]
    start = code_elements_end(target) if request.exchanged else target.code_region[1]
    return [(start, target.interleaved_start), interleaved]


@dataclass(frozen=True)
class Placement(Generic[K]):
    key: K
    address: int
    end: int  # address + extent (tail included)

    @property
    def extent(self) -> int:
        return self.end - self.address


def _always(a: object, b: object) -> bool:
    return True


@dataclass
class FirstFit(Generic[K]):
    """Buffers keyed by `K`, placed one at a time at the lowest address that fits."""

    target: Target
    share_a_tile: Callable[[K, K], bool] = _always  # one tile: every pair shares it
    placed: list[Placement[K]] = field(default_factory=list)

    def fits(self, key: K, start: int, end: int, partners: Collection[K]) -> bool:
        elements = None
        for other in self.placed:
            if not self.share_a_tile(key, other.key):
                continue
            if start < other.end and other.address < end:
                return False
            if other.key in partners:
                if elements is None:
                    elements = self.target.elements_of_range(start, end - start)
                if elements & self.target.elements_of_range(other.address, other.extent):
                    return False
        return True

    def candidates(self, request: Request, start: int, stop: int, with_elements: bool) -> list[int]:
        """Aligned first-fit candidates: region start, ends of placed buffers and, when an
        element must be avoided, element starts."""
        points = {start}
        points.update(p.end for p in self.placed if start <= p.end < stop)
        if with_elements:
            points.update(e.start for e in self.target.memory_elements if start <= e.start < stop)
        return sorted(align_up(p, request.alignment) for p in points)

    def find_address(self, key: K, request: Request, partners: Collection[K] = ()) -> int | None:
        for start, stop in regions(request, self.target):
            for address in self.candidates(request, start, stop, bool(partners)):
                end = address + request.extent
                if end <= stop and self.fits(key, address, end, partners):
                    return address
        return None

    def place(self, key: K, request: Request, partners: Collection[K] = ()) -> int | None:
        """Place `key` and return its address, or None when no range fits."""
        address = self.find_address(key, request, partners)
        if address is not None:
            self.placed.append(Placement(key, address, address + request.extent))
        return address

    def largest_free_range(self, start: int, stop: int) -> int:
        """Largest gap in [start, stop) between placed buffers (all tiles, for one tile)."""
        taken = sorted(
            (max(p.address, start), min(p.end, stop)) for p in self.placed
            if p.address < stop and start < p.end
        )
        largest, cursor = 0, start
        for a, e in taken:
            largest, cursor = max(largest, a - cursor), max(cursor, e)
        return max(largest, stop - cursor)
