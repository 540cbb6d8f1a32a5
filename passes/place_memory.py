"""`place-memory`: give every `tile.buffer` an SRAM address (the same on every tile of its set).

The placement rules (code region, exchanged buffers outside the code's memory elements,
interleaved and standard regions, access tails, partners in distinct elements, no overlap on
a shared tile) are those of `planning/memory_allocator.py`, which graph-to-mid's plan check
uses too. This pass adds what it knows from the IR:
- PACE operands (`amp_*` element orders) are aligned to `Target.pace_alignment`, every buffer
  to its own declared alignment (the larger of the two wins);
- exchanged buffers are those an op's effects say the exchange reads or writes (the sources
  and destinations of `tile.exchange`s; `schedule-exchange` checks the contention they avoid
  with `device.memory_conflicts`);
- partners are the buffers an op accesses in the same cycles (`concurrent_buffers`): the
  `out` and `left` operands of every kernel that has both (the AMP GEMMs, from the ABI
  registry `device/kernels.py`) and the pairs a kernel's ABI declares
  (`KernelAbi.distinct_pairs`: the blocked attention kernels' two AMP products), and the
  source and destination of a grouped exchange in
  which some tile sends for one group while it receives for another (its send reads and
  incoming writes run in the same events).

What an op reads and writes, and which buffers it accesses together, the pass asks the op
(`BufferEffectsInterface` of `ipu_dialects/tile.py`), not its class.

Placement is first fit, interleaved buffers first, in program order, or when that leaves some
buffer no contiguous range, longest-lived first (the failure of the program order is the one
reported); buffers whose lifetimes (`lifetimes`) do not overlap may share memory. The tile count and target come from
`ipu.config`; hand-written tile IR without it is placed for the default target.

When a tile cannot hold its buffers the pass fails the way Poplar does, naming the tile, the
bytes needed and available, and the buffers with their sizes; the message starts with the
source position of the buffer that did not fit (a capacity overflow: the largest buffer live
at the tile's peak), i.e. of the graph op whose value it stores.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import MemoryEffectKind
from xdsl.utils.exceptions import PassFailedException

from device.kernels import UnknownKernelError
from device.layouts import AMP_ORDERS
from device.target import Target, get_target
from ipu_dialects.locations import located
from ipu_dialects.mid import CONFIG_ATTR_NAME, PipelineConfigAttr
from ipu_dialects.shared_attrs import configured_tile_count
from ipu_dialects.tile import EXCHANGE_FABRIC, BufferEffectsInterface, BufferOp, ExchangeOp
from ipu_dialects.tile_checks import describe
from planning.memory_allocator import FirstFit, Request, code_elements_end
from planning.pipeline_config import configured_target

T = TypeVar("T")


class OutOfTileMemory(PassFailedException):
    """A tile's buffers need more memory than it has ("Out of memory on tile N: ..."): the
    diagnostic a pipeline may answer by choosing plans that store less (`ipu-pipeline`).
    `overflow` is by how many bytes the fullest tile overflows, where that is known (buffers
    live together that exceed the tile; not a range that fragmentation left too small);
    `shortfall` is at least how many bytes the tile must hold fewer: the overflow, or the
    size of the buffer that found no free range."""

    def __init__(self, message: str, overflow: int | None = None, shortfall: int | None = None):
        super().__init__(message)
        self.overflow = overflow
        self.shortfall = overflow if shortfall is None else shortfall


def module_target(module: ModuleOp) -> Target:
    """The configured target; hand-written tile IR without `ipu.config` gets the default."""
    config = module.attributes.get(CONFIG_ATTR_NAME)
    if isinstance(config, PipelineConfigAttr):
        return configured_target(config, PlaceMemoryPass.name)
    return get_target()


def lifetimes(function: func.FuncOp) -> dict[BufferOp, tuple[int, int]]:
    """For each buffer, the first and last position (index of an op in a pre-order walk of the
    function) at which it is live. Inputs are live from the start (the host writes them before
    the program runs) and outputs to the end (the host reads them after it); every other buffer
    from its first use to its last, where a use inside a loop counts for the whole loop — the
    innermost loop holding all the buffer's uses excepted when the first of those uses writes
    the buffer and does not read it (its declared effects, `effects_of`): that buffer is
    rewritten before it is read in every iteration (a temporary of a repeat's body), so it is
    live only between its uses within the iteration."""
    positions: dict[Operation, int] = {}
    for op in function.body.walk():
        positions[op] = len(positions)
    last = {op: positions[op] + sum(1 for _ in op.walk()) - 1 for op in positions if op.regions}
    users: dict[BufferOp, list[Operation]] = {}
    for op in positions:
        for operand in op.operands:
            if isinstance(operand.owner, BufferOp):
                users.setdefault(operand.owner, []).append(op)
    end = len(positions)
    spans = {}
    for buffer in (op for op in function.body.block.ops if isinstance(op, BufferOp)):
        start, stop = live_span(buffer, users.get(buffer, []), positions, last)
        if buffer.kind.data == "input":
            start = 0
        if buffer.kind.data == "output":
            stop = end
        spans[buffer] = (start, stop)
    return spans


def enclosing_ops(op: Operation, function: func.FuncOp) -> list[Operation]:
    """The ops from the function's top level down to `op` itself."""
    chain = [op]
    while (parent := chain[-1].parent_op()) is not None and parent is not function:
        chain.append(parent)
    return chain[::-1]


def live_span(buffer: BufferOp, users: list[Operation], positions: dict[Operation, int],
              last: dict[Operation, int]) -> tuple[int, int]:
    """Where `buffer` is live, from its uses alone (see `lifetimes`)."""
    if not users:
        return 0, 0
    function = buffer.parent_op()
    assert isinstance(function, func.FuncOp)
    chains = [enclosing_ops(op, function) for op in users]
    depth = 0  # the ops of the chains agree down to `depth`: they share those loops
    while all(len(c) > depth + 1 and c[depth] is chains[0][depth] for c in chains):
        depth += 1
    first = min(users, key=positions.__getitem__)
    if depth and not (writes(first, buffer) and not reads(first, buffer)):
        depth = 0  # it may carry a value from one iteration to the next: live for the loop
    at_depth = [c[depth] for c in chains]
    start = min(positions[op] for op in at_depth)
    stop = max(last.get(op, positions[op]) for op in at_depth)
    return start, stop


def writes(op: Operation, buffer: BufferOp) -> bool:
    return MemoryEffectKind.WRITE in effects_of(op, buffer.buffer)


def reads(op: Operation, buffer: BufferOp) -> bool:
    return MemoryEffectKind.READ in effects_of(op, buffer.buffer)


def effects_of(op: Operation, buffer: SSAValue) -> set[MemoryEffectKind]:
    """What `op` declares it does to `buffer` (`BufferEffectsInterface`); an op that declares
    nothing may read and write it."""
    if not isinstance(op, BufferEffectsInterface):
        return {MemoryEffectKind.READ, MemoryEffectKind.WRITE}
    return {e.kind for e in declared(op, op.buffer_effects) if e.value is buffer}


def declared(op: Operation, query: Callable[[], Collection[T]]) -> Collection[T]:
    """`query()` of `op`'s interface; a kernel the ABI registry does not know is an error."""
    try:
        return query()
    except UnknownKernelError as error:
        raise PassFailedException(f"place-memory: {describe(op)}: {error}") from None


@dataclass
class FunctionPlacement:
    """Places the buffers of one function: buffers whose lifetimes do not overlap may share
    memory (`lifetimes`)."""

    function: func.FuncOp
    target: Target
    tile_count: int
    exchanged: set[BufferOp] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.spans = lifetimes(self.function)
        self.allocator: FirstFit[BufferOp] = FirstFit(self.target, self.coexist)

    def coexist(self, a: BufferOp, b: BufferOp) -> bool:
        """Two buffers that must not overlap: they share a tile while both are live."""
        (a0, a1), (b0, b1) = self.spans.get(a, (0, 0)), self.spans.get(b, (0, 0))
        return a0 <= b1 and b0 <= a1 and self.share_a_tile(a, b)

    # -- facts about buffers -------------------------------------------------------------
    def alignment(self, buffer: BufferOp) -> int:
        pace = self.target.pace_alignment if buffer.order.data in AMP_ORDERS else 1
        return max(pace, buffer.alignment_bytes)

    @staticmethod
    def extent(buffer: BufferOp) -> int:
        return buffer.byte_size + buffer.tail_bytes

    @staticmethod
    def share_a_tile(a: BufferOp, b: BufferOp) -> bool:
        if a.tiles.is_range and b.tiles.is_range:
            return max(a.tiles.start.data, b.tiles.start.data) < min(a.tiles.stop.data, b.tiles.stop.data)
        return bool(set(a.tiles.tiles()) & set(b.tiles.tiles()))

    def distinct_pairs(self) -> dict[BufferOp, set[BufferOp]]:
        """Buffers that must not share a memory element: each kernel's `out` and `left`, and
        the source and destination of an exchange whose tiles send and receive at once."""
        partners: dict[BufferOp, set[BufferOp]] = {}

        def pair(a: object, b: object) -> None:
            assert isinstance(a, BufferOp) and isinstance(b, BufferOp)
            partners.setdefault(a, set()).add(b)
            partners.setdefault(b, set()).add(a)

        for op in self.function.walk():
            if isinstance(op, BufferEffectsInterface):
                for a, b in declared(op, op.concurrent_buffers):
                    pair(a.owner, b.owner)
        return partners

    # -- capacity diagnostics ------------------------------------------------------------
    def live_bytes(self, buffers: Sequence[BufferOp]) -> np.ndarray:
        """Bytes live on each tile at each position: [positions, tiles]."""
        positions = max((stop for _, stop in self.spans.values()), default=0) + 1
        sizes = [self.extent(buffer) for buffer in buffers]
        # a shard shape from IR may claim 2**63 elements (the verifier leaves a buffer too big
        # for its tiles to this pass): exact Python integers then, not an int64 overflow
        exact = sum(sizes) >= 2**62
        needed = np.zeros((positions + 1, self.tile_count + 1), dtype=object if exact else np.int64)
        for buffer, size in zip(buffers, sizes, strict=True):
            start, stop = self.spans.get(buffer, (0, positions - 1))
            tiles = ([(buffer.tiles.start.data, buffer.tiles.stop.data)] if buffer.tiles.is_range
                     else [(t, t + 1) for t in buffer.tiles.tiles()])
            for lo, hi in tiles:
                needed[start, lo] += size
                needed[start, hi] -= size
                needed[stop + 1, lo] -= size
                needed[stop + 1, hi] += size
        return np.cumsum(np.cumsum(needed, axis=0), axis=1)[:positions, : self.tile_count]

    def bytes_per_tile(self, buffers: Sequence[BufferOp]) -> tuple[np.ndarray, np.ndarray]:
        """(peak live bytes per tile, the position of each tile's peak)."""
        live = self.live_bytes(buffers)
        return live.max(axis=0), live.argmax(axis=0)

    def buffer_list(self, buffers: Sequence[BufferOp], tile: int,
                    position: int | None = None) -> str:
        """The buffers on `tile` (live at `position`, when given) with their sizes."""
        parts = []
        for buffer in buffers:
            start, stop = self.spans.get(buffer, (0, 0))
            if position is not None and not start <= position <= stop:
                continue
            if tile in buffer.tiles:
                tail = f" + tail {buffer.tail_bytes}" if buffer.tail_bytes else ""
                parts.append(f"{buffer.sym_name.data} {buffer.byte_size}{tail}")
        return ", ".join(parts)

    def largest_buffer(self, buffers: Sequence[BufferOp], tile: int, position: int) -> BufferOp:
        """The largest buffer on `tile` live at `position` (where an overflow points)."""
        live = [b for b in buffers if tile in b.tiles  # no span: live throughout (live_bytes)
                and self.spans.get(b, (0, position))[0] <= position <= self.spans.get(b, (0, position))[1]]
        return max(live or buffers, key=self.extent)

    def check_capacity(self, buffers: Sequence[BufferOp]) -> None:
        target = self.target
        code = target.code_region_bytes
        needed, when = self.bytes_per_tile(buffers)
        needed = needed + code
        worst = int(np.argmax(needed))
        if needed[worst] > target.sram_bytes:
            over = int(np.count_nonzero(needed > target.sram_bytes))
            others = f"; {over - 1} other tile(s) overflow too" if over > 1 else ""
            raise OutOfTileMemory(located(
                self.largest_buffer(buffers, worst, int(when[worst])),
                f"Out of memory on tile {worst}: {int(needed[worst])} bytes needed, tiles only "
                f"have {target.sram_bytes} bytes (code region {code}, buffers live together: "
                f"{self.buffer_list(buffers, worst, int(when[worst]))}){others}"
            ), overflow=int(needed[worst]) - target.sram_bytes)
        interleaved = [b for b in buffers if b.interleaved]
        region = target.memory_end - target.interleaved_start
        needed, when = self.bytes_per_tile(interleaved)
        worst = int(np.argmax(needed)) if len(needed) else 0
        if len(needed) and needed[worst] > region:
            raise PassFailedException(located(
                self.largest_buffer(interleaved, worst, int(when[worst])),
                f"Out of interleaved memory on tile {worst}: interleaved buffers need "
                f"{int(needed[worst])} bytes, the interleaved region has {region} bytes "
                f"(buffers live together: {self.buffer_list(interleaved, worst, int(when[worst]))})"
            ))

    # -- placement -----------------------------------------------------------------------
    def exchanged_buffers(self) -> set[BufferOp]:
        """The buffers the exchange reads or writes (sources and destinations of phases)."""
        ends: set[BufferOp] = set()
        for op in self.function.walk():
            if isinstance(op, BufferEffectsInterface):
                ends.update(e.value.owner for e in declared(op, op.buffer_effects)
                            if e.resource == EXCHANGE_FABRIC and isinstance(e.value, SSAValue)
                            and isinstance(e.value.owner, BufferOp))
        return ends

    def request(self, buffer: BufferOp) -> Request:
        return Request(buffer.byte_size, buffer.tail_bytes, self.alignment(buffer),
                       buffer.interleaved, buffer in self.exchanged)

    def place(self) -> None:
        buffers = [op for op in self.function.walk() if isinstance(op, BufferOp)]
        if not buffers:
            return
        self.tile_count = max(self.tile_count, max(b.tiles.stop.data for b in buffers))
        self.check_capacity(buffers)
        partners = self.distinct_pairs()
        self.exchanged = self.exchanged_buffers()
        # Interleaved buffers first: they have only one region to go to. In program order,
        # else (when that leaves no contiguous range for some buffer) the longest-lived first,
        # so that buffers live throughout do not land between the holes temporaries leave.
        interleaved = [b for b in buffers if b.interleaved]
        standard = [b for b in buffers if not b.interleaved]
        first_failure = None
        for ordered in (interleaved + standard,
                        self.longest_lived_first(interleaved) + self.longest_lived_first(standard)):
            allocator = FirstFit(self.target, self.coexist)
            failed = next((b for b in ordered if allocator.place(
                b, self.request(b), partners.get(b, set())) is None), None)
            if failed is None:
                for placement in allocator.placed:
                    placement.key.set_address(placement.address)
                return
            first_failure = first_failure or (allocator, failed)
        assert first_failure is not None
        self.allocator, failed = first_failure  # the diagnostic of the program-order attempt
        self.fail(failed, partners.get(failed, set()), buffers)

    def longest_lived_first(self, buffers: list[BufferOp]) -> list[BufferOp]:
        return sorted(buffers, key=lambda b: self.spans[b][0] - self.spans[b][1])

    def fail(self, buffer: BufferOp, partners: set[BufferOp], buffers: Sequence[BufferOp]) -> None:
        name = buffer.sym_name.data
        tile = buffer.tiles.tiles()[0]
        placed = self.allocator.placed
        if partners and self.allocator.find_address(buffer, self.request(buffer)) is not None:
            placed_partners = ", ".join(
                f"@{p.key.sym_name.data} at {p.address:#x} ({p.extent} bytes, elements "
                f"{sorted(self.target.elements_of_range(p.address, p.extent))})"
                for p in placed
                if p.key in partners
            )
            # a shortage too (the free ranges left share elements with its partners): a
            # pipeline may answer it as any other (`OutOfTileMemory.shortfall`)
            raise OutOfTileMemory(located(
                buffer,
                f"place-memory: cannot keep @{name} ({self.extent(buffer)} bytes) in a memory "
                f"element apart from {placed_partners} on tile {tile}: no free range of its "
                "memory class avoids those elements"
            ), shortfall=self.extent(buffer))
        raise OutOfTileMemory(located(
            buffer,
            f"Out of memory on tile {tile}: no free {buffer.memory.data} range of "
            f"{self.extent(buffer)} bytes (aligned to {self.alignment(buffer)}) left for @{name} "
            f"after placing {', '.join('@' + p.key.sym_name.data for p in placed) or 'nothing'} "
            f"(buffers: {self.buffer_list(buffers, tile)})"
        ), shortfall=self.extent(buffer))


@dataclass(frozen=True)
class PlaceMemoryPass(ModulePass):
    """Assign an SRAM `address` to every `tile.buffer` (see the module docstring).
    `row-elements=N`: keep the memory elements the code region touches and the N - 1 after
    them free of buffers, as room for the exchange rows (`schedule-exchange` puts rows in
    memory no buffer occupies on any tile and no exchanged buffer's element touches); 0,
    the default: only the code region."""

    name = "place-memory"
    row_elements: int = 0

    def row_target(self, target: Target) -> Target:
        """`target` with its code region grown over the elements kept for rows."""
        if self.row_elements < 0:
            raise PassFailedException(f"{self.name}: row-elements={self.row_elements}: expected "
                                      "a count of memory elements >= 0")
        if self.row_elements == 0:
            return target
        end = code_elements_end(target) + (self.row_elements - 1) * target.element_bytes
        if end > target.interleaved_start:
            raise PassFailedException(
                f"{self.name}: row-elements={self.row_elements} reaches past the standard "
                f"region (it ends at {target.interleaved_start:#x})")
        return replace(target, code_region_bytes=end - target.memory_base)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for exchange in op.walk():
            if isinstance(exchange, ExchangeOp) and exchange.schedule is not None:
                raise PassFailedException(
                    f"{self.name}: the module is scheduled already ({exchange.name} "
                    f"'{exchange.provenance.reason.data}' has rows, which hold buffer addresses); "
                    "place buffers before schedule-exchange"
                )
        target = self.row_target(module_target(op))
        tiles = configured_tile_count(op) or 0
        for function in op.walk():  # a declaration has no body, so no buffers to place
            if isinstance(function, func.FuncOp) and not function.is_declaration:
                FunctionPlacement(function, target, tiles).place()
