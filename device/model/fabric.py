"""The exchange fabric: one synchronized phase, simulated from the rows in tile memory.

Each tile with a row fetches the row's words from ITS OWN memory at the step's
`row_address` (a corrupted image changes behaviour), decodes them (`device.isa.decode`) and
takes their event semantics from `device.exchange_timeline.row_timeline`: this module adds
only the fabric, never a second reading of the instructions.

Fabric rules (DESIGN.md section 5): event 0 is the same instant on every tile. A word sent at
event t by tile s, read from s's memory at the send's word address at event t, is at the input
of every tile r > s (sctl bit 0) and/or r < s (bit 1) at event t + L(s, r). Receiver r keeps
XPIC (the selected source tile, -1 = none at phase start) and PIC (the incoming word address;
undefined at phase start, +1 per stored word); a control takes effect at its event, so it
already governs a word arriving at that event. A word from the source selected at its
arrival is stored at byte address PIC * 4; words from other sources are ignored. The phase
lasts the longest row; a selected word arriving at or after that is lost.

Faults that hardware would survive are reported, not raised: lost words, words with no PIC,
stores or sends outside tile memory, and memory-element contention between a tile's row
fetch, send reads and incoming writes (`device.memory_conflicts`).

Vectorized: per receiver, its XPIC timeline is cut into segments with one selected source;
each segment is intersected with that source's send intervals (shifted by L) to produce only
the accepted words, as NumPy arrays. PIC values come from a searchsorted over the receiver's
PIC events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from device.exchange_timeline import PIC, XPIC, RowTimeline, SendInterval, row_timeline
from device.isa import decode
from device.memory_conflicts import find_conflicts
from device.model.errors import ModelError
from device.model.memory import TileMemory
from device.package import ExchangeStep, Package
from device.target import WORD_BYTES, Target

NO_END = 1 << 62  # the last XPIC selection stays in force past the phase end
DIRECTION_UP, DIRECTION_DOWN = 0b01, 0b10  # sctl bit 0: to higher ids; bit 1: to lower ids


@dataclass
class PhaseOutcome:
    events: int
    errors: list[str] = field(default_factory=list)
    stored_words: int = 0


@dataclass
class Deliveries:
    """Accepted words of one receiver, sorted by arrival event."""

    receiver: int
    arrival: np.ndarray  # int64 event
    source: np.ndarray  # int64 tile
    source_index: np.ndarray  # int64 word index in the source's memory
    send_event: np.ndarray  # int64
    target_index: np.ndarray  # int64 word index in the receiver's memory


# ---- rows --------------------------------------------------------------------------------
def check_row_ids(package: Package, step: ExchangeStep, where: str) -> np.ndarray:
    """One row index (or -1) per tile, each naming a row of the package."""
    row_id = np.asarray(step.row_id).reshape(-1)
    if row_id.size != package.tiles:
        raise ModelError(f"{where}: row_id has {row_id.size} entries for {package.tiles} tiles")
    missing = np.flatnonzero(row_id >= len(package.rows))
    if missing.size:
        tile = int(missing[0])
        raise ModelError(f"{where}: tile {tile} uses row {int(row_id[tile])}, but the package "
                         f"has {len(package.rows)} rows")
    return row_id


def fetch_timelines(memory: TileMemory, package: Package, step: ExchangeStep,
                    where: str) -> dict[int, RowTimeline]:
    row_id = check_row_ids(package, step, where)
    cache: dict[bytes, RowTimeline] = {}
    timelines: dict[int, RowTimeline] = {}
    for tile in np.flatnonzero(row_id >= 0).tolist():
        rid = int(row_id[tile])
        length = len(package.rows[rid])
        words = memory.read_words(tile, step.row_address, length,
                                  f"{where}: fetching tile {tile}'s exchange row")
        key = words.tobytes()
        if key not in cache:
            try:
                cache[key] = row_timeline(decode(words.tolist(), base_address=step.row_address))
            except ValueError as error:  # DecodeError, TimelineError
                raise ModelError(
                    f"{where}: tile {tile}: the exchange row fetched from {step.row_address:#x} "
                    f"({length} words) cannot run: {error}"
                ) from None
        timelines[tile] = cache[key]
    return timelines


def reaches(sctl: int, source: int, receiver: int) -> bool:
    if receiver > source:
        return bool(sctl & DIRECTION_UP)
    return receiver < source and bool(sctl & DIRECTION_DOWN)


def checked_sends(memory: TileMemory, timelines: dict[int, RowTimeline], where: str,
                  errors: list[str]) -> dict[int, list[SendInterval]]:
    """Each tile's send intervals; one reading outside tile memory is reported and dropped."""
    first_word, end_word = memory.base // WORD_BYTES, memory.end // WORD_BYTES
    sends: dict[int, list[SendInterval]] = {}
    for tile, timeline in timelines.items():
        kept = []
        for interval in timeline.sends:
            if first_word <= interval.address and interval.address + interval.words <= end_word:
                kept.append(interval)
                continue
            errors.append(
                f"{where}: tile {tile}: send of {interval.words} words from word address "
                f"{interval.address:#x} (byte {interval.address * WORD_BYTES:#x}) at event "
                f"{interval.start_event} reads outside tile memory; not sent"
            )
        if kept:
            sends[tile] = kept
    return sends


# ---- receivers ---------------------------------------------------------------------------
def xpic_segments(timeline: RowTimeline) -> list[tuple[int, int, int]]:
    """(from_event, to_event, selected source) for each XPIC selection of the row."""
    selections = [(c.event, c.value) for c in timeline.controls if c.kind == XPIC]
    segments = []
    for k, (event, source) in enumerate(selections):
        stop = selections[k + 1][0] if k + 1 < len(selections) else NO_END
        if stop > event:  # two selections at one event: the later one wins
            segments.append((event, stop, source))
    return segments


def selected_arrivals(receiver: int, timeline: RowTimeline, sends: dict[int, list[SendInterval]],
                      latency: np.ndarray, tiles: int):
    """(arrival event, source tile, source word address) of every word the receiver accepts,
    sorted by arrival, including those arriving after the phase end."""
    events, sources, addresses = [], [], []
    for start, stop, source in xpic_segments(timeline):
        if not 0 <= source < tiles or source == receiver:
            continue
        delay = int(latency[source, receiver])
        for interval in sends.get(source, ()):
            if not reaches(interval.sctl, source, receiver):
                continue
            first = max(interval.start_event + delay, start)
            last = min(interval.start_event + delay + interval.words, stop)
            if first >= last:
                continue
            arrival = np.arange(first, last, dtype=np.int64)
            events.append(arrival)
            sources.append(np.full(arrival.size, source, dtype=np.int64))
            addresses.append(arrival - delay - interval.start_event + interval.address)
    if not events:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    arrival, source, address = (np.concatenate(a) for a in (events, sources, addresses))
    order = np.argsort(arrival, kind="stable")
    return arrival[order], source[order], address[order]


def _report_runs(errors: list[str], mask: np.ndarray, arrival: np.ndarray, source: np.ndarray,
                 message) -> None:
    """One message per source for the words selected by `mask`."""
    for tile in np.unique(source[mask]).tolist():
        events = arrival[mask & (source == tile)]
        errors.append(message(tile, events.size, int(events[0]), int(events[-1])))


def receiver_deliveries(receiver: int, timeline: RowTimeline,
                        sends: dict[int, list[SendInterval]], latency: np.ndarray,
                        phase_end: int, memory: TileMemory, where: str,
                        errors: list[str]) -> Deliveries | None:
    arrival, source, address = selected_arrivals(receiver, timeline, sends, latency,
                                                 memory.tiles)
    if arrival.size == 0:
        return None
    lost = arrival >= phase_end
    _report_runs(errors, lost, arrival, source, lambda s, n, a, b: (
        f"{where}: tile {receiver}: {n} word(s) from tile {s} arriving at events {a}..{b}, "
        f"at or after the phase end (event {phase_end}), were lost"))
    pic_events = np.array([c.event for c in timeline.controls if c.kind == PIC], np.int64)
    pic_values = np.array([c.value for c in timeline.controls if c.kind == PIC], np.int64)
    # The PIC in force at each arrival: the last PIC control at or before it.
    pic_index = np.searchsorted(pic_events, arrival, side="right") - 1
    no_pic = ~lost & (pic_index < 0)
    _report_runs(errors, no_pic, arrival, source, lambda s, n, a, b: (
        f"{where}: tile {receiver}: {n} word(s) from tile {s} arriving at events {a}..{b} "
        f"found no PIC set in this phase; dropped"))
    keep = ~lost & ~no_pic
    arrival, source, address, pic_index = (x[keep] for x in (arrival, source, address,
                                                             pic_index))
    # PIC auto-increments per stored word: rank of the word since its PIC control.
    position = np.arange(arrival.size)
    since_set = position - np.searchsorted(pic_index, pic_index, side="left")
    target_word = pic_values[pic_index] + since_set
    inside = (target_word * WORD_BYTES >= memory.base) & (
        (target_word + 1) * WORD_BYTES <= memory.end)
    if not inside.all():
        bad = np.flatnonzero(~inside)
        first = int(bad[0])
        errors.append(
            f"{where}: tile {receiver}: {bad.size} incoming word(s) stored outside tile memory, "
            f"first from tile {int(source[first])} at event {int(arrival[first])} to PIC word "
            f"address {int(target_word[first]):#x} (byte {int(target_word[first]) * WORD_BYTES:#x}); "
            f"dropped"
        )
    arrival, source, address, target_word = (x[inside] for x in (arrival, source, address,
                                                                 target_word))
    first_word = memory.base // WORD_BYTES
    return Deliveries(
        receiver, arrival, source, address - first_word,
        arrival - latency[source, receiver], target_word - first_word,
    )


# ---- moving the words --------------------------------------------------------------------
def _groups(tiles: np.ndarray):
    """(tile, positions) for each distinct tile in `tiles`, via one stable sort."""
    order = np.argsort(tiles, kind="stable")
    sorted_tiles = tiles[order]
    starts = np.flatnonzero(np.r_[True, sorted_tiles[1:] != sorted_tiles[:-1]])
    ends = np.r_[starts[1:], sorted_tiles.size]
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        yield int(sorted_tiles[start]), order[start:end]


def _gather_by_source(memory: TileMemory, source: np.ndarray, index: np.ndarray) -> np.ndarray:
    values = np.empty(source.size, dtype=np.uint32)
    for tile, positions in _groups(source):
        values[positions] = memory.gather_words(tile, index[positions])
    return values


def _scatter_by_receiver(memory: TileMemory, receiver: np.ndarray, index: np.ndarray,
                         values: np.ndarray) -> None:
    for tile, positions in _groups(receiver):
        memory.scatter_words(tile, index[positions], values[positions])


def apply_deliveries(memory: TileMemory, deliveries: list[Deliveries]) -> int:
    if not deliveries:
        return 0
    receiver = np.concatenate([np.full(d.arrival.size, d.receiver, np.int64) for d in deliveries])
    arrival, source, source_index, send_event, target_index = (
        np.concatenate([getattr(d, name) for d in deliveries])
        for name in ("arrival", "source", "source_index", "send_event", "target_index")
    )
    words = memory.words_per_tile
    read_keys = source * words + source_index
    write_keys = receiver * words + target_index
    # Only a tile that both sends and receives can read what this phase writes.
    both = np.intersect1d(np.unique(source), np.unique(receiver))
    if both.size and np.isin(read_keys, write_keys).any():
        _apply_in_event_order(memory, receiver, arrival, source, source_index, send_event,
                              target_index)
        return int(arrival.size)
    # No word is read from a location this phase writes: every read sees the memory as it
    # was at the phase start. Several stores to one location: the latest arrival wins.
    values = _gather_by_source(memory, source, source_index)
    order = np.lexsort((arrival, write_keys))  # by location, then arrival
    last_of_location = np.r_[write_keys[order][1:] != write_keys[order][:-1], True]
    final = order[last_of_location]
    _scatter_by_receiver(memory, receiver[final], target_index[final], values[final])
    return int(arrival.size)


def _apply_in_event_order(memory, receiver, arrival, source, source_index, send_event,
                          target_index) -> None:
    """Exact order when a phase reads words it also writes: at each event, sends read memory
    first, then arrivals store (L >= 1, so a word is always read before it is stored)."""
    values = np.zeros(arrival.size, dtype=np.uint32)
    by_send = np.argsort(send_event, kind="stable")
    by_arrival = np.argsort(arrival, kind="stable")
    sorted_send, sorted_arrival = send_event[by_send], arrival[by_arrival]
    for event in np.unique(np.concatenate([send_event, arrival])).tolist():
        lo, hi = np.searchsorted(sorted_send, [event, event + 1])
        if hi > lo:
            reads = by_send[lo:hi]
            values[reads] = _gather_by_source(memory, source[reads], source_index[reads])
        lo, hi = np.searchsorted(sorted_arrival, [event, event + 1])
        if hi > lo:
            writes = by_arrival[lo:hi]
            _scatter_by_receiver(memory, receiver[writes], target_index[writes], values[writes])


# ---- the phase ---------------------------------------------------------------------------
def run_exchange_phase(memory: TileMemory, package: Package, step: ExchangeStep, where: str,
                       target: Target, latency: np.ndarray | None = None) -> PhaseOutcome:
    """Run one phase; `latency` is `target.latency_matrix(package.tiles)`, passed in so that
    a run computes it once."""
    if latency is None:
        latency = target.latency_matrix(package.tiles)
    timelines = fetch_timelines(memory, package, step, where)
    outcome = PhaseOutcome(max((t.total_events for t in timelines.values()), default=0))
    sends = checked_sends(memory, timelines, where, outcome.errors)
    deliveries = []
    for receiver, timeline in timelines.items():
        found = receiver_deliveries(receiver, timeline, sends, latency, outcome.events, memory,
                                    where, outcome.errors)
        if found is not None and found.arrival.size:
            deliveries.append(found)
    report_contention(step, timelines, sends, deliveries, memory, target, where,
                      outcome.errors)
    outcome.stored_words = apply_deliveries(memory, deliveries)
    return outcome


# ---- memory-element contention -----------------------------------------------------------
def touched_elements(target: Target, ranges: list[tuple[int, int]]) -> frozenset[int]:
    elements: frozenset[int] = frozenset()
    for address, nbytes in ranges:
        elements |= target.elements_of_range(address, nbytes)
    return elements


def report_contention(step: ExchangeStep, timelines: dict[int, RowTimeline],
                      sends: dict[int, list[SendInterval]], deliveries: list[Deliveries],
                      memory: TileMemory, target: Target, where: str,
                      errors: list[str]) -> None:
    """Instruction fetch, send reads and incoming writes of one tile in one element in the
    same event contend (spec: exchange-isa.md); the placement should have kept them apart.
    Checked exactly (`device.memory_conflicts`) only on tiles where two of the three kinds
    touch a common element at all, so a well-placed program costs a few set tests."""
    stores = {d.receiver: d for d in deliveries}
    for tile, timeline in timelines.items():
        row_bytes = WORD_BYTES * sum(instr.words for instr in timeline.instructions)
        code = target.elements_of_range(step.row_address, row_bytes)
        read = touched_elements(
            target, [(i.address * WORD_BYTES, i.words * WORD_BYTES) for i in sends.get(tile, ())])
        written: frozenset[int] = frozenset()
        if tile in stores:
            words = stores[tile].target_index
            written = touched_elements(target, [(memory.base + int(words.min()) * WORD_BYTES,
                                                 int(words.max() - words.min() + 1) * WORD_BYTES)])
        if not (code & (read | written) or read & written):
            continue
        incoming = {} if tile not in stores else {
            int(a): memory.base + int(w) * WORD_BYTES
            for a, w in zip(stores[tile].arrival, stores[tile].target_index, strict=True)}
        conflicts = find_conflicts(step.row_address, timeline.instructions, incoming, target,
                                   timeline)
        if conflicts:
            errors.append(f"{where}: tile {tile}: memory-element contention: {conflicts[0]}"
                          + (f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""))
