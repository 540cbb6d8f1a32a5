"""`schedule-exchange`: turn every `tile.exchange` into checked, placed exchange rows.

For each exchange phase and each iteration of its loop nest, the phase program builder
(`passes.exchange_rows`) derives the broadcast schedule from the placed buffers and the
target's latency L(s, r), builds the sender's and the receivers' rows, and checks each row
(encode, decode, timeline, compare with the schedule) before it is used. Identical rows are
built once and shared: the pass adds one `exchange.row` per distinct row at the end of the
module and records, on the `tile.exchange`, which row each iteration's sender and receivers
run (`sender_rows`/`receiver_rows`, -1 where an iteration has no receiver and so no traffic),
and the code-region slot of the phase (`row_address`; iteration n uses
`row_address + n * slot_stride(rows)`).

Rows are placed in the target's code region; the pass also checks, with
`device.memory_conflicts`, that no row's instruction fetch, send read or incoming write
contend for one memory element.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    SymbolRefAttr,
    i32,
    i64,
)
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from device.isa import Instruction
from device.memory_conflicts import find_conflicts, incoming_writes
from device.target import Target, get_target
from ipu_dialects.exchange import RowOp
from ipu_dialects.tile import BufferOp, ExchangeOp, enclosing_loops, loop_bounds
from passes.exchange_rows import (
    BroadcastPhase,
    checked_row,
    plan_broadcast,
    receiver_instructions,
    sender_instructions,
    slot_stride,
)
from passes.tile_iteration import evaluate_map, iteration_vectors


def module_config(module: ModuleOp, pass_name: str) -> tuple[Target, int]:
    config = module.attributes.get("ipu.config")
    if config is None:
        raise PassFailedException(
            f"{pass_name}: the module has no 'ipu.config' (run graph-to-mid first)"
        )
    return get_target(config.target.data), config.tiles.data


def placed_address(buffer: BufferOp, pass_name: str) -> int:
    address = buffer.address_value
    if address is None:
        raise PassFailedException(
            f"{pass_name}: buffer @{buffer.sym_name.data} has no address (run place-memory first)"
        )
    return address


@dataclass
class RowTable:
    """Distinct rows of one exchange op, keyed by what determines their words."""

    prefix: str
    keys: dict[tuple, int]
    instructions: list[list[Instruction]]
    phases: list[BroadcastPhase]
    roles: list[str]

    def intern(self, key: tuple, role: str, phase: BroadcastPhase, build) -> int:
        if key not in self.keys:
            self.keys[key] = len(self.instructions)
            self.instructions.append(build(phase))
            self.phases.append(phase)
            self.roles.append(role)
        return self.keys[key]

    def symbol(self, index: int) -> str:
        return f"{self.prefix}_{self.roles[index][0]}{index}"


def phase_per_iteration(op: ExchangeOp, target: Target, latency: np.ndarray):
    """The concrete broadcast of every iteration of `op`'s loop nest (None: no receiver)."""
    bounds = loop_bounds(enclosing_loops(op))
    ivs = iteration_vectors(bounds)
    src, dst = op.src.owner, op.dst.owner
    assert isinstance(src, BufferOp) and isinstance(dst, BufferOp)
    senders = evaluate_map(op.src_tile.data, ivs)[:, 0]
    sources = placed_address(src, ScheduleExchangePass.name) + evaluate_map(op.src_offset.data, ivs)[:, 0]
    dests = placed_address(dst, ScheduleExchangePass.name) + evaluate_map(op.dst_offset.data, ivs)[:, 0]
    dst_tiles = tuple(int(t) for t in op.dst_tiles.tiles())
    phases: list[BroadcastPhase | None] = []
    for sender, source, dest in zip(senders.tolist(), sources.tolist(), dests.tolist(),
                                    strict=True):
        receivers = tuple(t for t in dst_tiles if t != sender)
        phases.append(
            plan_broadcast(sender, receivers, op.word_count, source, dest, latency)
            if receivers else None
        )
    return phases


def check_memory_elements(op: ExchangeOp, phase: BroadcastPhase, sender_words,
                          receiver_words, slot: int, target: Target, latency: np.ndarray) -> None:
    """Fetch, send reads and incoming writes of one iteration must not share an element.

    The receiver side is checked for the nearest receiver, whose words arrive earliest and
    so closest to the row's own instruction fetches.
    """
    first = int(latency[phase.sender, list(phase.receivers)].min())
    arrivals = np.zeros(phase.total_events, dtype=bool)
    arrivals[first: first + phase.words] = True
    writes = incoming_writes(phase.receiver_schedule().controls, arrivals, phase.total_events)
    for role, words, incoming in (("sender", sender_words, None),
                                  ("receiver", receiver_words, writes)):
        conflicts = find_conflicts(slot, [int(w) for w in words], incoming, target)
        if conflicts:
            c = conflicts[0]
            kinds = ", ".join(f"{a.kind} at {a.address:#x}" for a in c.accesses)
            raise PassFailedException(
                f"schedule-exchange: {op.name} ({op.provenance.reason.data}): the {role} row "
                f"at {slot:#x} contends for memory element {c.element} at event {c.event} "
                f"({kinds}); place exchanged buffers outside the code region's elements"
            )


def schedule_op(op: ExchangeOp, index: int, target: Target, tiles: int,
                code: CodeRegion) -> list[RowOp]:
    latency = target.latency_matrix(tiles)
    phases = phase_per_iteration(op, target, latency)
    table = RowTable(f"x{index}", {}, [], [], [])
    sender_rows, receiver_rows = [], []
    for phase in phases:
        if phase is None:
            sender_rows.append(-1)
            receiver_rows.append(-1)
            continue
        sender_rows.append(table.intern(
            ("send", phase.source_word, phase.words, phase.sctl), "send", phase,
            sender_instructions))
        receiver_rows.append(table.intern(
            ("receive", phase.sender, phase.dest_word, phase.total_events), "receive", phase,
            receiver_instructions))
    if not table.instructions:
        return []
    what = f"{op.name} ({op.provenance.op.data} {op.provenance.value.data})"
    words = [checked_row(instrs, table.phases[i].sender_schedule() if table.roles[i] == "send"
                         else table.phases[i].receiver_schedule(), code.start,
                         f"{what}, row {table.symbol(i)}")
             for i, instrs in enumerate(table.instructions)]
    stride = slot_stride([len(w) for w in words])
    base = code.allocate(len(phases) * stride, what)
    for n, phase in enumerate(phases):
        if phase is not None:
            check_memory_elements(op, phase, words[sender_rows[n]], words[receiver_rows[n]],
                                  base + n * stride, target, latency)
    op.properties["rows"] = ArrayAttr(
        [SymbolRefAttr(table.symbol(i)) for i in range(len(table.instructions))])
    op.properties["sender_rows"] = DenseArrayBase.from_list(i32, sender_rows)
    op.properties["receiver_rows"] = DenseArrayBase.from_list(i32, receiver_rows)
    op.properties["row_address"] = IntegerAttr(base, i64)
    provenance = f"{op.provenance.op.data} {op.provenance.value.data}: {op.provenance.reason.data}"
    return [RowOp(table.symbol(i), instrs, provenance=provenance)
            for i, instrs in enumerate(table.instructions)]


@dataclass
class CodeRegion:
    """Bump allocator over the target's code region (rows only, 8-byte aligned slots)."""

    start: int
    end: int

    def allocate(self, nbytes: int, what: str) -> int:
        address = self.start
        if address + nbytes > self.end:
            raise PassFailedException(
                f"schedule-exchange: the exchange rows of {what} need {nbytes} bytes at "
                f"{address:#x}, but the code region ends at {self.end:#x}"
            )
        self.start += nbytes
        return address


@dataclass(frozen=True)
class ScheduleExchangePass(ModulePass):
    name = "schedule-exchange"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target, tiles = module_config(op, self.name)
        code = CodeRegion(*target.code_region)
        exchanges = [o for o in op.walk() if isinstance(o, ExchangeOp)]
        rows: list[RowOp] = []
        for index, exchange in enumerate(exchanges):
            if exchange.rows is not None:
                raise PassFailedException(
                    f"{self.name}: {exchange.name} is already scheduled (it has rows)"
                )
            rows.extend(schedule_op(exchange, index, target, tiles, code))
        op.body.block.add_ops(rows)
