"""`schedule-exchange`: turn every `tile.exchange` into checked, placed exchange rows.

For each exchange phase and each iteration of its loop nest, the phase program builder
(`planning.exchange_rows`) derives the broadcast schedule from the placed buffers and the
target's latency L(s, r) and builds the sender's and the receivers' rows. Every distinct
concrete row is encoded, decoded and checked against its schedule (`device.row_checker`)
before it is used; a disagreement is reported as a compiler bug.

The IR keeps the size of the program, not of the chip or of the loop nest (docs/internals.md,
"What we build"): rows with the same instruction structure are one shared `exchange.row`
(normally one sender row and one receiver row per exchange op), and what differs between iterations
(source address, source tile, directions, delays) is carried on the `tile.exchange` as
`#tile.patch` arrays with one value per iteration, all in one `#tile.schedule` (the op's
`schedule`). Only the enclosing loops whose index the exchange's maps read (`row_loops`,
when that is not all of them) have iterations here: an exchange in a repeat's body that
does not read the repeat's index has one row set and one slot for every iteration of the
repeat, so depth costs neither IR nor tile memory.
`sender_rows`/`receiver_rows` say which shared row each such iteration's sender and
receivers run (-1 where an iteration has no receiver and so no traffic); `row_address` is
the slot of iteration 0 and iteration n uses `row_address + n * slot_stride(rows)`, so tile
images hold every iteration's row. Slots fill the code region, then standard memory left
free by the buffers (`RowMemory`). A grouped exchange (`groups G shift MAP`) has G
broadcasts per iteration, each built and checked like one; its selections and patches have
one entry per (iteration, group), and the groups of an iteration share its slot: they run on
different tiles.

The pass also checks, with `device.memory_conflicts`, that no row's instruction fetch, send
read or incoming write contend for one memory element.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from device.isa import Instruction
from device.memory_conflicts import find_conflicts, incoming_writes
from device.target import WORD_BYTES, Target, latency_table, pair_tile
from ipu_dialects.exchange import RowOp
from ipu_dialects.locations import located
from ipu_dialects.tile import BufferOp, ExchangeOp, ExchangeScheduleAttr, RowPatchAttr
from planning.exchange_phases import (
    duplex_partners,
    mark_checked,
    phase_per_iteration,
    row_loop_positions,
)
from planning.exchange_rows import (
    BroadcastPhase,
    checked_row,
    duplex_instructions,
    duplex_schedule,
    forget_checked_rows,
    free_row_ranges,
    receiver_instructions,
    sender_instructions,
    slot_stride,
    structure,
    take_row_range,
    varying_fields,
)
from planning.pipeline_config import target_and_tiles
from planning.program_size import check_expansion


@dataclass
class RowTemplate:
    """One shared row of an exchange op: its instruction structure and, per iteration that
    runs it, the concrete instructions (from which the patches are derived)."""

    symbol: str
    role: str
    variants: dict[int, list[Instruction]] = field(default_factory=dict)

    @property
    def instructions(self) -> list[Instruction]:
        return self.variants[min(self.variants)]

    def patches(self, iterations: int) -> list[RowPatchAttr]:
        result = []
        for index, name in varying_fields(list(self.variants.values())):
            default = getattr(self.instructions[index], name)
            values = [getattr(self.variants[n][index], name) if n in self.variants else default
                      for n in range(iterations)]
            result.append(RowPatchAttr(self.symbol, index, name, values))
        return result


@dataclass
class TemplateTable:
    """The shared rows of one exchange op, keyed by role and instruction structure."""

    prefix: str
    templates: list[RowTemplate] = field(default_factory=list)
    keys: dict[tuple, int] = field(default_factory=dict)

    def add(self, role: str, iteration: int, instrs: list[Instruction]) -> int:
        key = (role, structure(instrs))
        if key not in self.keys:
            suffix = "" if not any(t.role == role for t in self.templates) else str(len(self.templates))
            self.keys[key] = len(self.templates)
            self.templates.append(RowTemplate(f"{self.prefix}_{role}{suffix}", role))
        self.templates[self.keys[key]].variants[iteration] = instrs
        return self.keys[key]


def check_memory_elements(op: ExchangeOp, phase: BroadcastPhase, sender_words,
                          receiver_words, slot: int, target: Target, latency: np.ndarray,
                          receiving: BroadcastPhase | None = None) -> None:
    """Fetch, send reads and incoming writes of one iteration must not share an element.

    The receiver side is checked for the nearest receiver, whose words arrive earliest and
    so closest to the row's own instruction fetches; a full-duplex sender (`receiving`: the
    phase it receives in) for its own incoming words, which can also meet its send reads.
    A slot whose memory elements hold neither the sent nor the written words cannot contend
    (nor, on a duplex row, reads and writes in different elements): those tests cost a few
    set operations, the event-by-event check runs only where it could find something.
    """
    slot_bytes = WORD_BYTES * max(len(sender_words), len(receiver_words))
    data_bytes = WORD_BYTES * phase.words
    data = (target.elements_of_range(WORD_BYTES * phase.source_word, data_bytes)
            | target.elements_of_range(WORD_BYTES * phase.dest_word, data_bytes))
    reads_meet_writes = False  # a duplex row's send reads and incoming writes
    if receiving is not None:
        written = target.elements_of_range(WORD_BYTES * receiving.dest_word,
                                           WORD_BYTES * receiving.words)
        reads_meet_writes = bool(written & target.elements_of_range(
            WORD_BYTES * phase.source_word, data_bytes))
        data |= written
    if not (reads_meet_writes or target.elements_of_range(slot, slot_bytes) & data):
        return
    nearest = int(latency[phase.sender, list(phase.receivers)].min())
    sender_incoming = (None if receiving is None else
                       arriving_writes(receiving, int(latency[receiving.sender, phase.sender])))
    for role, words, incoming in (("sender", sender_words, sender_incoming),
                                  ("receiver", receiver_words, arriving_writes(phase, nearest))):
        conflicts = find_conflicts(slot, [int(w) for w in words], incoming, target)
        if conflicts:
            c = conflicts[0]
            kinds = ", ".join(f"{a.kind} at {a.address:#x}" for a in c.accesses)
            raise PassFailedException(located(
                op,
                f"schedule-exchange: {op.name} ({op.provenance.reason.data}): the {role} row "
                f"at {slot:#x} contends for memory element {c.element} at event {c.event} "
                f"({kinds}); place exchanged buffers outside the code region's elements"
            ))


def arriving_writes(phase: BroadcastPhase, first: int) -> np.ndarray:
    """The byte address each event of `phase` writes on a receiver whose first word arrives
    at event `first`."""
    arrivals = np.zeros(phase.total_events, dtype=bool)
    arrivals[first: first + phase.items] = True
    return incoming_writes(phase.receiver_schedule().controls, arrivals, phase.total_events,
                           phase.words // phase.items)


class RowsDoNotFit(PassFailedException):
    """The exchange rows have no room left (`ipu-pipeline` then places the buffers again,
    keeping the rest of the code region's memory element for rows)."""


@dataclass
class RowMemory:
    """Where row slots go, bump-allocated in op order: the target's code region first; when it
    is full, standard memory that no buffer occupies on any tile, outside every memory element
    an exchange sends from or receives into (so no row's fetch can contend with an exchange's
    reads or writes). Code lives in non-interleaved memory ([C] ipu21-facts): the interleaved
    region is never used."""

    code_region: tuple[int, int]
    ranges: list[list[int]]  # [next free, end) of each range, in allocation order

    @classmethod
    def for_module(cls, module: ModuleOp, target: Target) -> RowMemory:
        buffers = [b for b in module.walk() if isinstance(b, BufferOp)]
        taken = sorted(
            (b.address_value, b.address_value + b.byte_size + b.tail_bytes)
            for b in buffers if b.address_value is not None
        )
        exchanged = {v.owner for op in module.walk() if isinstance(op, ExchangeOp)
                     for v in (op.source, op.destination)}
        busy = frozenset().union(*(
            target.elements_of_range(b.address_value, b.byte_size + b.tail_bytes)
            for b in exchanged if isinstance(b, BufferOp) and b.address_value is not None
        ))
        ranges = free_row_ranges(taken, busy, target)
        return cls(target.code_region, ranges)

    def allocate(self, nbytes: int, what: str, op: Operation) -> int:
        address = take_row_range(self.ranges, nbytes)
        if address is not None:
            return address
        left = sorted((end - start for start, end in self.ranges), reverse=True)
        raise RowsDoNotFit(located(
            op,
            f"schedule-exchange: the exchange rows of {what} need {nbytes} bytes, but neither "
            f"the code region [{self.code_region[0]:#x}, {self.code_region[1]:#x}) nor the "
            "standard memory that buffers and exchanged buffers' memory elements leave free "
            f"has that much left (largest free range: {left[0] if left else 0} bytes)"
        ))


Rows = tuple[list[Instruction], list[Instruction]]  # (sender row, receiver row)


def check_pair_buses(op: ExchangeOp, phases: list[BroadcastPhase | None]) -> None:
    """A pair broadcast's receiver takes its items over both incoming buses of its tile pair
    (2i, 2i + 1): its pair tile may receive in the same phase only the same broadcast."""
    if op.pairs is None:
        return
    groups = op.group_count
    for first in range(0, len(phases), groups):
        group_of = {r: g for g, p in enumerate(phases[first:first + groups]) if p is not None
                    for r in p.receivers}
        for tile, group in sorted(group_of.items()):
            other = group_of.get(pair_tile(tile), group)
            if other != group:
                raise PassFailedException(located(
                    op,
                    f"schedule-exchange: {op.name} ({op.provenance.reason.data}): pair "
                    f"broadcast in iteration {first // groups}: tile {tile} receives group "
                    f"{group} on both incoming buses of its pair, but its pair tile "
                    f"{pair_tile(tile)} receives group {other} in the same phase; a pair broadcast "
                    f"needs pairs (2i, 2i + 1) that receive the same group or only one tile "
                    f"of the pair receiving"))


def concrete_rows(phase: BroadcastPhase | None, receiving: BroadcastPhase | None) -> Rows | None:
    if phase is None:
        return None
    sender = (sender_instructions(phase) if receiving is None
              else duplex_instructions(phase, receiving))
    return sender, receiver_instructions(phase)


def check_distinct_rows(phases: list[BroadcastPhase | None], rows: list[Rows | None],
                        partners: list[BroadcastPhase | None], what: str,
                        base_address: int) -> dict[tuple, np.ndarray]:
    """Encode, decode and check every distinct concrete row once; words by row."""
    checked: dict[tuple, np.ndarray] = {}
    for phase, pair, receiving in zip(phases, rows, partners, strict=True):
        if phase is None or pair is None:
            continue
        sender, receiver = tuple(pair[0]), tuple(pair[1])
        if sender not in checked:
            schedule = (phase.sender_schedule() if receiving is None
                        else duplex_schedule(phase, receiving))
            checked[sender] = checked_row(pair[0], schedule, base_address, what)
        if receiver not in checked:
            checked[receiver] = checked_row(pair[1], phase.receiver_schedule(), base_address,
                                            what)
    return checked


def schedule_op(op: ExchangeOp, index: int, target: Target, latency: np.ndarray,
                code: RowMemory) -> list[RowOp]:
    positions = row_loop_positions(op)
    phases = phase_per_iteration(op, latency, positions, ScheduleExchangePass.name)
    check_pair_buses(op, phases)
    partners = duplex_partners(op, phases)
    rows = [concrete_rows(phase, receiving) for phase, receiving in zip(phases, partners,
                                                                         strict=True)]
    what = f"{op.name} ({op.provenance.op.data} {op.provenance.value.data})"
    words = check_distinct_rows(phases, rows, partners, what, code.code_region[0])
    if not words:
        return []
    table = TemplateTable(f"x{index}")
    sender_rows, receiver_rows = [], []
    for n, (pair, receiving) in enumerate(zip(rows, partners, strict=True)):
        role = "send" if receiving is None else "duplex"
        sender_rows.append(-1 if pair is None else table.add(role, n, pair[0]))
        receiver_rows.append(-1 if pair is None else table.add("receive", n, pair[1]))
    stride = slot_stride([t.instructions for t in table.templates])
    groups = op.group_count  # the groups of one iteration run in one phase: one slot
    base = code.allocate(len(phases) // groups * stride, what, op)
    for n, (phase, pair, receiving) in enumerate(zip(phases, rows, partners, strict=True)):
        if phase is not None and pair is not None:
            check_memory_elements(op, phase, words[tuple(pair[0])], words[tuple(pair[1])],
                                  base + n // groups * stride, target, latency, receiving)
    templates = table.templates
    src, dst = op.source.owner, op.destination.owner
    assert isinstance(src, BufferOp) and isinstance(dst, BufferOp)  # the verifier's rule
    assert src.address_value is not None and dst.address_value is not None  # phases need them
    op.properties["schedule"] = ExchangeScheduleAttr(
        [t.symbol for t in templates], sender_rows, receiver_rows, base,
        patches=[p for t in templates for p in t.patches(len(phases))],
        row_loops=positions if len(positions) < len(op.ivs) else None,
        placed=(src.address_value, dst.address_value))
    provenance = f"{op.provenance.op.data} {op.provenance.value.data}: {op.provenance.reason.data}"
    row_ops = [RowOp(t.symbol, t.instructions, provenance=provenance) for t in templates]
    for row in row_ops:  # a row and its instructions point at the user's source line of the graph op(s) it serves
        for row_op in row.walk():
            row_op.location = op.location
    mark_checked(op, row_ops, (target.name, latency.shape[0]))  # the package writer need not recheck them
    return row_ops


@dataclass(frozen=True)
class ScheduleExchangePass(ModulePass):
    name = "schedule-exchange"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target, tiles = target_and_tiles(op, self.name)
        check_expansion(op, self.name)  # rows are built per iteration of their row loops
        forget_checked_rows()  # the rows of an earlier module: no longer needed
        code = RowMemory.for_module(op, target)
        latency = latency_table(target, tiles)
        exchanges = [o for o in op.walk() if isinstance(o, ExchangeOp)]
        rows: list[RowOp] = []
        for index, exchange in enumerate(exchanges):
            if exchange.schedule is not None:
                raise PassFailedException(located(
                    exchange,
                    f"{self.name}: {exchange.name} is already scheduled (it has a schedule)"
                ))
            rows.extend(schedule_op(exchange, index, target, latency, code))
        op.body.block.add_ops(rows)
