"""Does a GEMM plan fit tile memory: the per-tile limits `place-memory` enforces, checked
while planning so that a plan that is chosen can also be placed.

A layout (`planning/gemm_layout.py`) says which buffers its busiest tile holds (`RowTileBuffer`,
built with `shard_buffer` / `scratch_buffer`) and how many bytes of exchange-row slots its
exchange ops need (`phase_stride`); the checks below then simulate `place-memory` on that tile:
the total and the interleaved region (`check_capacity`), a first-fit placement by its rules
with the pairs kept in distinct memory elements (`check_placement`, `kept_apart`), and the
ranges `schedule-exchange` would give the row slots (`check_row_slots`); the rule that runs
them is `planning.gemm_layout.check_memory`. Tile 0 holds every buffer of
the GEMM (shards are equal-sized on every tile): its memory decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from device.target import Target
from ipu_dialects.mid import MemoryClass, OperandPlanAttr, OperatorPlanAttr
from planning.exchange_rows import (
    duplex_instructions,
    free_row_ranges,
    plan_broadcast,
    receiver_instructions,
    sender_instructions,
    slot_stride,
    take_row_range,
)
from planning.gemm_problem import GemmProblem, InvalidPlan
from planning.memory_allocator import FirstFit, Request, regions
from planning.shard_geometry import ShardGeometry


@dataclass(frozen=True)
class RowTileBuffer:
    """One buffer of a GEMM tile as `place-memory` sees it."""

    what: str  # for diagnostics: "its left shard"
    request: Request

    @property
    def extent(self) -> int:
        return self.request.extent

    def described(self) -> str:
        if not self.request.tail:
            return self.what
        return f"{self.what} ({self.request.nbytes} bytes + {self.request.tail}-byte access tail)"


def shard_buffer(plan: OperatorPlanAttr, problem: GemmProblem, target: Target, operand: str,
                 what: str, exchanged: bool) -> RowTileBuffer:
    """The tile's shard of `operand`, in the format the plan gives it."""
    entry = plan.operand_plan(operand)
    g = ShardGeometry.from_format(problem.shape_of(operand), entry.format)
    return RowTileBuffer(what, Request(
        g.shard_bytes(),
        entry.tail.data,
        max(target.pace_alignment, entry.alignment.data),
        entry.format.memory.data == MemoryClass.INTERLEAVED,
        exchanged,
    ))


def scratch_buffer(what: str, nbytes: int, entry: OperandPlanAttr, target: Target,
                   interleaved: bool, exchanged: bool, tail: int = 0) -> RowTileBuffer:
    """A scratch buffer (a receive slot, partials) aligned like the operand `entry`."""
    return RowTileBuffer(what, Request(nbytes, tail, max(target.pace_alignment,
                                                         entry.alignment.data),
                                       interleaved, exchanged))


class DoesNotFit(InvalidPlan):
    """The plan's buffers do not fit the memory of a tile."""


def check_capacity(buffers: dict[str, RowTileBuffer], target: Target, who: str) -> None:
    available = target.usable_bytes
    needed = sum(b.extent for b in buffers.values())
    if needed > available:
        raise DoesNotFit(
            f"{who} needs {needed} bytes, tile memory holds {available} outside "
            "the code region"
        )
    region = target.memory_end - target.interleaved_start
    for b in buffers.values():
        if b.request.interleaved and b.extent > region:
            raise DoesNotFit(
                f"{who} needs {b.extent} bytes of interleaved memory for "
                f"{b.what}, the interleaved region holds {region}"
            )
    interleaved = sum(b.extent for b in buffers.values() if b.request.interleaved)
    if interleaved > region:
        raise DoesNotFit(
            f"{who} needs {interleaved} bytes of interleaved memory, the "
            f"interleaved region holds {region}"
        )


def _placement_failure(
    allocator: FirstFit[str], name: str, partner_names: Sequence[str],
    buffers: dict[str, RowTileBuffer], who: str,
) -> DoesNotFit:
    target = allocator.target
    buffer = buffers[name]
    if partner_names and allocator.find_address(name, buffer.request) is not None:
        others = " and ".join(buffers[p].what.removeprefix("its ") for p in partner_names)
        return DoesNotFit(
            f"{who} cannot keep {buffer.described()} in a memory element apart "
            f"from the {others}: no free range of its memory class avoids their elements"
        )
    standard = (
        "standard memory above the code region's memory elements (an exchanged buffer)"
        if buffer.request.exchanged
        else "standard memory outside the code region"
    )
    free = [
        f"{allocator.largest_free_range(start, stop)} bytes of "
        f"{'interleaved memory' if start >= target.interleaved_start else standard}"
        for start, stop in regions(buffer.request, target)
    ]
    return DoesNotFit(
        f"{who} needs one free range of {buffer.extent} bytes for "
        f"{buffer.described()}; the largest free ranges left are {' and '.join(free)}"
    )


def check_placement(buffers: dict[str, RowTileBuffer], target: Target,
                    distinct: Sequence[tuple[str, str]], who: str) -> FirstFit[str]:
    allocator: FirstFit[str] = FirstFit(target)
    # interleaved buffers first, like place-memory: they have only one region to go to
    order = [n for n, b in buffers.items() if b.request.interleaved]
    order += [n for n, b in buffers.items() if not b.request.interleaved]
    for name in order:
        partners = [b for a, b in distinct if a == name] + [a for a, b in distinct if b == name]
        if allocator.place(name, buffers[name].request, partners) is None:
            raise _placement_failure(allocator, name, partners, buffers, who)
    return allocator


# Exchange rows. `schedule-exchange` gives every iteration of an exchange op its own row slot
# and bump-allocates each op's slots as one range: in the code region while it has room, then
# in standard memory that no buffer occupies and that lies outside the memory elements of the
# exchanged buffers (`passes/schedule_exchange.py`, `RowMemory`). The plan's exchange ops
# must find their ranges there, next to its buffers.


def farthest_latency(tiles: int, target: Target) -> np.ndarray:
    """The rows' length depends on the phase's events only past a `delay`'s range: the
    farthest receiver on the chip is as long as any phase gets."""
    return np.full((2, 2), target.max_latency(tiles))


def phase_stride(words: int, pairs: bool, farthest: np.ndarray, duplex: bool = False) -> int:
    """Bytes of one row slot of a broadcast phase of `words` words (to pairs, or with
    full-duplex rows when its senders also receive): its longest row."""
    phase = plan_broadcast(0, (1,), words, 0, 0, farthest, pairs)
    rows = [sender_instructions(phase), receiver_instructions(phase)]
    if duplex:
        rows.append(duplex_instructions(phase, phase))
    return slot_stride(rows)


def row_ranges(allocator: FirstFit[str], exchanged: Sequence[str],
               target: Target) -> list[list[int]]:
    """The ranges `schedule-exchange` would give row slots on a tile placed like `allocator`."""
    busy = frozenset().union(*(target.elements_of_range(p.address, p.extent)
                               for p in allocator.placed if p.key in exchanged))
    return free_row_ranges(sorted((p.address, p.end) for p in allocator.placed), busy, target)


def check_row_slots(allocator: FirstFit[str], buffers: dict[str, RowTileBuffer],
                    slot_bytes: Sequence[int], target: Target, who: str) -> None:
    exchanged = [name for name, b in buffers.items() if b.request.exchanged]
    ranges = row_ranges(allocator, exchanged, target)
    for nbytes in slot_bytes:
        if take_row_range(ranges, nbytes) is None:
            largest = max((end - start for start, end in ranges), default=0)
            raise DoesNotFit(
                f"{who} has no room for the exchange rows: one exchange needs "
                f"{nbytes} bytes of row slots in one range of the code region or of standard "
                f"memory outside the exchanged buffers' memory elements; the largest such "
                f"range left is {largest} bytes"
            )


def kept_apart(buffers: dict[str, RowTileBuffer],
               distinct: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The plan's distinct pairs and those of its scratch buffers: each kernel's out apart
    from what it reads, each full-duplex phase's sent buffer apart from its received one."""
    pairs = list(distinct)
    if "partials" in buffers:  # the partials panel is the kernels' out: apart from lhs too
        pairs.append(("partials", "lhs"))
    if "lhs_slot" in buffers:  # the 2-D layouts' kernels read A from the slot or from home
        pairs.extend((o, "lhs_slot") for o in ("out", "partials") if o in buffers)
    if "received" in buffers:  # the K-split's full-duplex phases: sent and received apart
        pairs.extend([("partials", "received"), ("lhs", "lhs_slot")])
    return pairs

