"""What every iteration of a `tile.exchange` does, derived from its placed buffers, maps and
the target's latencies: the broadcast schedule its rows must implement.

`schedule-exchange` (`passes/schedule_exchange.py`) builds the rows from these phases; the
package writer (`tools/package_writer.py`, for `ipu-run`, `--package`, `-t ipu-rows` and
`-t ipu-asm`) re-derives them and checks the rows it is given against them
(`recheck_exchange_rows`): rows read from IR text are untrusted like rows from a package, so
every concrete row (a shared `exchange.row` with its `#tile.patch` values of one iteration)
is encoded, decoded and compared with its schedule by `device.row_checker` before anything
is emitted. A row edited by hand (one `exchange.send` address, a patch value, a delay) is a
diagnostic naming the exchange, the row and the iteration, not a package that computes wrong
numbers without an exchange error.

Rows that this process's `schedule-exchange` built, and checked as it built them, are not
checked twice while the exchange, its buffers' addresses, its loops and its rows are as that
pass left them (`mark_checked`; an in-memory record that no IR text can claim): the
pipeline's own output costs the writer nothing more, IR read from text (or changed by a
later pass) is checked in full.
"""

from __future__ import annotations

import weakref

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from device import isa
from device.exchange_timeline import TimelineError
from device.row_checker import RowMismatch, ScheduleError, check_row
from device.target import WORD_BYTES, latency_table
from ipu_dialects.exchange import RowOp
from ipu_dialects.locations import located
from ipu_dialects.tile import BufferOp, ExchangeOp, enclosing_loops, loop_bounds
from ipu_dialects.tile_iteration import evaluate_map, iteration_vectors, map_dims
from planning.exchange_rows import (
    BroadcastPhase,
    broadcast_events,
    duplex_schedule,
    instantiate,
    schedule_key,
)
from planning.pipeline_config import target_and_tiles


def placed_address(buffer: BufferOp, pass_name: str) -> int:
    address = buffer.address_value
    if address is None:
        raise PassFailedException(located(
            buffer, f"{pass_name}: buffer @{buffer.sym_name.data} has no address (run "
            "place-memory first)"))
    return address


def row_loop_positions(op: ExchangeOp) -> list[int]:
    """The enclosing loops whose index the exchange's source tile or offsets read: its rows
    can differ only between their iterations, so only those get their own rows and slots
    (a repeat's body exchanges do not read the repeat's index: one slot for every layer)."""
    maps = [op.src_tile, op.src_offset, op.dst_offset]
    if op.dst_shift is not None:
        maps.append(op.dst_shift)
    group_dim = len(op.ivs)  # the group index of grouped maps is not a loop
    return sorted(set().union(*(map_dims(m.data) for m in maps)) - {group_dim})


def row_iteration_vectors(op: ExchangeOp, positions: list[int]) -> np.ndarray:
    """Iteration vectors over the loops at `positions`, the others at their lower bound, and
    (for grouped exchanges) the group index last, varying fastest."""
    bounds = loop_bounds(enclosing_loops(op))
    selected = iteration_vectors([bounds[p] for p in positions] + op.group_bounds())
    ivs = np.tile(np.asarray([lb for lb, _ in bounds] + [0] * len(op.group_bounds()),
                             dtype=np.int64), (selected.shape[0], 1))
    ivs[:, positions + [len(bounds)] * len(op.group_bounds())] = selected
    return ivs


def phase_per_iteration(op: ExchangeOp, latency: np.ndarray, positions: list[int],
                        pass_name: str) -> list[BroadcastPhase | None]:
    """The concrete broadcast of every iteration of the loops at `positions` and, for grouped
    exchanges, of every group of it (group fastest; None: no receiver). `pass_name` words a
    missing placement."""
    ivs = row_iteration_vectors(op, positions)
    loop_ivs = ivs[:, :len(op.ivs)]
    src, dst = op.src.owner, op.dst.owner
    assert isinstance(src, BufferOp) and isinstance(dst, BufferOp)
    senders = evaluate_map(op.src_tile.data, ivs)[:, 0]
    shifts = (np.zeros(len(ivs), dtype=np.int64) if op.dst_shift is None
              else evaluate_map(op.dst_shift.data, ivs)[:, 0])
    def offsets(offset) -> np.ndarray:  # a grouped exchange's offset may read the group
        return evaluate_map(offset, ivs if op.offset_reads_group(offset) else loop_ivs)[:, 0]

    sources = placed_address(src, pass_name) + offsets(op.src_offset.data)
    dests = placed_address(dst, pass_name) + offsets(op.dst_offset.data)
    dst_tiles = op.dst_tiles.as_array()
    pairs = op.pairs is not None
    width = isa.SCTL_64BIT if pairs else 0
    events = broadcast_events(op.word_count, pairs)
    phases: list[BroadcastPhase | None] = []
    receiver_sets: dict[tuple[int, int | None], tuple[int, ...]] = {}  # (shift, sender) -> receivers
    step = max(1, (1 << 22) // max(1, dst_tiles.size))  # iterations per NumPy pass
    for first in range(0, len(senders), step):
        chunk = slice(first, first + step)
        # what `plan_broadcast` computes receiver by receiver, for the whole chunk at once:
        # the receivers (a group's sender among its destinations receives nothing), the
        # latency of the farthest, and the directions that reach them
        tiles = dst_tiles[None, :] + shifts[chunk, None]
        chunk_senders = senders[chunk]
        receiving = tiles != chunk_senders[:, None]
        arrival = np.where(receiving, latency[chunk_senders[:, None], tiles], 0).max(
            axis=1, initial=0)
        higher = (receiving & (tiles > chunk_senders[:, None])).any(axis=1)
        lower = (receiving & (tiles < chunk_senders[:, None])).any(axis=1)
        for row, (sender, shift, source, dest, last, up, down, count) in enumerate(zip(
                chunk_senders.tolist(), shifts[chunk].tolist(), sources[chunk].tolist(),
                dests[chunk].tolist(), arrival.tolist(), higher.tolist(), lower.tolist(),
                receiving.sum(axis=1).tolist(), strict=True)):
            if not count:
                phases.append(None)
                continue
            key = (shift, sender if count < dst_tiles.size else None)
            receivers = receiver_sets.get(key)
            if receivers is None:
                receivers = tuple(tiles[row][receiving[row]].tolist())
                receiver_sets[key] = receivers
            phases.append(BroadcastPhase(
                sender, receivers, op.word_count, source // WORD_BYTES, dest // WORD_BYTES,
                events + last, (1 if up else 0) | (2 if down else 0) | width))
    return phases


def duplex_partners(op: ExchangeOp, phases: list[BroadcastPhase | None]) -> list[BroadcastPhase | None]:
    """Per (iteration, group): the phase its sender receives in during the same iteration,
    when it is a receiver of another group (its row is then full duplex), else None."""
    groups = op.group_count
    partners: list[BroadcastPhase | None] = [None] * len(phases)
    for first in range(0, len(phases), groups):
        iteration = phases[first:first + groups]
        receiving = {r: p for p in iteration if p is not None for r in p.receivers}
        for g, phase in enumerate(iteration):
            if phase is not None:
                partners[first + g] = receiving.get(phase.sender)
    return partners




# ---- re-checking the rows of scheduled IR ------------------------------------------------------


def recheck_exchange_rows(module: ModuleOp, who: str = "package") -> None:
    """Check every scheduled `tile.exchange`'s rows against the schedule its placed buffers
    and maps give (see the module docstring); a `PassFailedException` located at the exchange
    for the first row that does not match."""
    exchanges = [op for op in module.walk()
                 if isinstance(op, ExchangeOp) and op.schedule is not None]
    if not exchanges:
        return
    target, tiles = target_and_tiles(module, who)
    latency = latency_table(target, tiles)
    templates = {op.sym_name.data: op for op in module.ops if isinstance(op, RowOp)}
    for op in exchanges:
        if CHECKED.get(op) == fingerprint(op, templates, (target.name, tiles)):
            continue
        recheck_exchange(op, templates, latency, target.code_region[0], who)


# exchange -> its fingerprint when schedule-exchange built and checked its rows
CHECKED: weakref.WeakKeyDictionary[ExchangeOp, tuple] = weakref.WeakKeyDictionary()


def fingerprint(op: ExchangeOp, templates: dict[str, RowOp], config: tuple[str, int]) -> tuple:
    """All that an exchange's rows are derived from and consist of."""
    src, dst = op.src.owner, op.dst.owner
    addresses = tuple(b.address_value if isinstance(b, BufferOp) else None for b in (src, dst))
    symbols = op.schedule.row_symbols if op.schedule is not None else []
    rows = tuple(tuple(templates[s].instructions()) if s in templates else None for s in symbols)
    return (config, tuple(sorted(op.properties.items())), addresses,
            tuple(loop_bounds(enclosing_loops(op))), rows)


def mark_checked(op: ExchangeOp, rows: list[RowOp], config: tuple[str, int]) -> None:
    """Record that `op`'s rows (`rows`) were built from its schedule and checked."""
    CHECKED[op] = fingerprint(op, {r.sym_name.data: r for r in rows}, config)


def recheck_exchange(op: ExchangeOp, templates: dict[str, RowOp], latency: np.ndarray,
                     base_address: int, who: str) -> None:
    def fail(problem: str) -> PassFailedException:
        return PassFailedException(located(
            op, f"{who}: {op.name} ({op.provenance.op.data} {op.provenance.value.data}): "
                f"{problem}; the exchange rows are not the ones its schedule needs (edited "
                "by hand? schedule-exchange builds them)"))

    built = op.schedule
    assert built is not None
    symbols = built.row_symbols
    if missing := [s for s in symbols if s not in templates]:
        raise fail(f"no exchange.row @{missing[0]}")
    rows = {s: templates[s].instructions() for s in symbols}
    phases = phase_per_iteration(op, latency, built.loop_positions(len(op.ivs)), who)
    partners = duplex_partners(op, phases)
    # the schedule's own rules: both selections and every patch have one entry per
    # (iteration, group), and every patch patches one of its rows
    sender_rows, receiver_rows = built.senders, built.receivers
    if built.entry_count != len(phases):
        raise fail(f"sender_rows and receiver_rows have {built.entry_count} entries for "
                   f"{len(phases)} (iteration, group)s")
    patches = built.patches_by_row()
    checked: set[tuple] = set()
    for n, (phase, receiving) in enumerate(zip(phases, partners, strict=True)):
        sender, receiver = int(sender_rows[n]), int(receiver_rows[n])
        if phase is None:
            if sender >= 0 or receiver >= 0:
                raise fail(f"(iteration, group) {n} has no receiver, but rows to run")
            continue
        if not (0 <= sender < len(symbols) and 0 <= receiver < len(symbols)):
            raise fail(f"(iteration, group) {n} sends to {len(phase.receivers)} tile(s) but "
                       f"its row indices ({sender}, {receiver}) are not rows of the exchange")
        sender_schedule = (phase.sender_schedule() if receiving is None
                           else duplex_schedule(phase, receiving))
        for index, schedule in ((sender, sender_schedule), (receiver, phase.receiver_schedule())):
            symbol = symbols[index]
            patched = [(i, name, int(v[n])) for i, name, v in patches[symbol]]
            try:
                instrs = instantiate(rows[symbol], patched)
            except (TypeError, ValueError) as error:  # a patch of a field the row lacks
                raise fail(f"row @{symbol} in (iteration, group) {n}: {error}") from None
            key = (tuple(instrs), schedule_key(schedule))
            if key in checked:
                continue
            try:
                check_row(isa.decode(isa.encode(instrs, base_address), base_address), schedule)
            except (isa.EncodeError, isa.DecodeError, TimelineError, ScheduleError,
                    RowMismatch) as error:
                raise fail(f"row @{symbol} in (iteration, group) {n}: {error}") from None
            checked.add(key)
