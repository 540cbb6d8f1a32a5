"""The exchange fabric: one synchronized phase, simulated from the rows in tile memory.

Each tile with a row fetches the row's words from ITS OWN memory at the step's
`row_address` (a corrupted image changes behaviour), decodes them (`device.isa.decode`) and
takes their event semantics from `device.exchange_timeline.row_timeline`: this module adds
only the fabric, never a second reading of the instructions.

Fabric rules (docs/internals.md, "What we build"): event 0 is the same instant on every tile. An item sent
at event t by tile s, read from s's memory at the send's word address at event t, is at the
input of every tile r > s (sctl bit 0) and/or r < s (bit 1) at event t + L(s, r). An item is
one 32-bit word, or a 64-bit item (sctl bit 2): two consecutive words, the lower address
first, in one event. Receiver r keeps XPIC (the selected source tile and which mux selects
it, -1 = none at phase start) and PIC (the incoming word address; undefined at phase start,
+1 per stored word); a control takes effect at its event, so it already governs an item
arriving at that event. An item from the source selected at its arrival is stored at word
address PIC; items from other sources are ignored.

- Own mux (XPIC selector 0): takes 32-bit words, each stored at PIC.
- Pair mux (XPIC selector 1): takes 64-bit items, each stored at PIC, PIC + 1 (PIC then
  advances by 2; an odd PIC, not 8-byte aligned, is a fault and the item is dropped). Tiles
  2i and 2i + 1 are a pair and share their two incoming buses: a 64-bit item takes both, so
  at an event where a tile stores an item from s through its pair mux, its partner may store
  only an item from the same s through its own pair mux (the pair receives one broadcast at
  double rate); any other store on the partner then is an incoming-bus conflict (reported).
- A selected item of the other width (a 64-bit item at the own mux, a 32-bit word at the pair
  mux) is a width mismatch: reported and dropped, PIC unchanged.

The phase lasts the longest row (in events); a selected item arriving at or after that is lost.

Faults that hardware would survive are reported, not raised: lost words, words with no PIC,
width mismatches, 64-bit items at an odd PIC, stores or sends outside tile memory,
incoming-bus conflicts of a pair, and memory-element contention between a tile's row fetch,
send reads and incoming writes (`device.memory_conflicts`).

Vectorized across tiles and row groups: tiles whose fetched rows are identical form one
`RowGroup` and share one decoded timeline. Each (group, XPIC selection, send interval of
the selected source) is one entry of a small table, listed in Python; its receivers (the
group's tiles) are expanded and turned into `Runs` (items arriving on consecutive events,
latency L(s, r) per receiver) for every group of the phase in one NumPy pass
(`phase_runs`). Runs are then cut at the receivers' PIC controls into pieces with one
contiguous source and one contiguous target range each, counted in words, against one
table of every group's PIC controls sorted by (group, event) (`cut_at_pic`); the pieces go
to `device.model.fabric_words`, which moves them. No per-word arrays are built unless two
pieces of a phase touch the same memory, where the exact event order is replayed word by
word. The bus-sharing check tests every (pair-mux piece, piece of the partner) couple of
the phase at once, and the contention pre-check the tiles of all groups at once. A phase of
a whole-chip gather (a dozen groups, a few hundred runs) costs about two milliseconds,
mostly fixed NumPy call overhead and decoding its rows, whatever its tile count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from device.exchange_timeline import (
    PIC,
    XPIC,
    XPIC_MUX,
    XPIC_MUX_PAIR,
    RowTimeline,
    SendInterval,
    row_timeline,
)
from device.isa import decode
from device.memory_conflicts import find_conflicts
from device.model.errors import ModelError
from device.model.fabric_words import Pieces, apply_pieces
from device.model.memory import TileMemory
from device.package import ExchangeStep, Package
from device.target import WORD_BYTES, Target, pair_tile

NO_END = 1 << 62  # the last XPIC selection stays in force past the phase end
PIC_KEY = 1 << 40  # (group, event) as one sortable int64: group * PIC_KEY + event
DIRECTION_UP, DIRECTION_DOWN = 0b01, 0b10  # sctl bit 0: to higher ids; bit 1: to lower ids

# Errors of one phase are sorted to the order a receiver-by-receiver reading gives.
SEND_ERROR, LOST, NO_PIC, OUTSIDE, CONTENTION, WIDTH, ODD_PIC, BUS_CONFLICT = range(8)
# per receiver: what it selects, what arrives too late or before a PIC, where it is stored,
# then the pair's buses
RECEIVER_ORDER = (WIDTH, LOST, NO_PIC, ODD_PIC, OUTSIDE, BUS_CONFLICT)


@dataclass
class PhaseOutcome:
    events: int
    errors: list[str] = field(default_factory=list)
    stored_words: int = 0


@dataclass
class RowGroup:
    """Tiles (ascending) whose fetched row words are identical, with their one timeline."""

    timeline: RowTimeline
    tiles: np.ndarray  # int64
    sends: list[SendInterval] = field(default_factory=list)  # those inside tile memory


@dataclass
class PhaseErrors:
    """Messages keyed by (category, tile, source) so that their order does not depend on the
    order in which the vectorized code finds them."""

    keyed: list[tuple[tuple[int, int, int], str]] = field(default_factory=list)

    def add(self, category: int, tile: int, source: int, message: str) -> None:
        self.keyed.append(((category, tile, source), message))

    def in_order(self) -> list[str]:
        def order(item):
            (category, tile, source), _ = item
            # sends first, then per receiver its width-mismatched / lost / no-PIC / odd-PIC /
            # outside words and bus conflicts, then contention
            if category == SEND_ERROR:
                return (0, tile, 0, source)
            if category == CONTENTION:
                return (2, tile, 0, source)
            return (1, tile, RECEIVER_ORDER.index(category), source)

        return [message for _, message in sorted(self.keyed, key=order)]


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


@dataclass
class RunCache:
    """What the phases of one run share: decoded timelines by (row address, words) and the
    package's row lengths."""

    timelines: dict = field(default_factory=dict)
    row_lengths: np.ndarray | None = None

    def lengths(self, package: Package) -> np.ndarray:
        if self.row_lengths is None:
            self.row_lengths = np.array([len(r) for r in package.rows], dtype=np.int64)
        return self.row_lengths


def _check_fetch_ranges(memory: TileMemory, package: Package, step: ExchangeStep,
                        row_id: np.ndarray, where: str, cache: RunCache) -> None:
    active = np.flatnonzero(row_id >= 0)
    lengths = cache.lengths(package)[row_id[active]]
    bad = (step.row_address < memory.base) | (
        step.row_address + lengths * WORD_BYTES > memory.end)
    if np.any(bad):
        tile = int(active[np.argmax(bad)])
        memory.read_words(tile, step.row_address, int(lengths[np.argmax(bad)]),
                          f"{where}: fetching tile {tile}'s exchange row")


def fetch_groups(memory: TileMemory, package: Package, step: ExchangeStep, where: str,
                 cache: RunCache | None = None) -> list[RowGroup]:
    """The row groups of a phase, each tile's row fetched from its own memory."""
    row_id = check_row_ids(package, step, where)
    cache = RunCache() if cache is None else cache
    _check_fetch_ranges(memory, package, step, row_id, where, cache)
    first = memory.word_index(step.row_address)
    by_words: dict[bytes, list[np.ndarray]] = {}
    active = np.flatnonzero(row_id >= 0)
    order = active[np.argsort(row_id[active], kind="stable")]  # by row, tiles ascending
    sorted_ids = row_id[order]
    starts = np.flatnonzero(np.diff(sorted_ids, prepend=-1))  # the first tile of each row
    bounds = np.r_[starts, order.size].tolist()
    for k, rid in enumerate(sorted_ids[starts].tolist()):
        tiles = order[bounds[k]:bounds[k + 1]]
        row = np.asarray(package.rows[rid], dtype=np.uint32)
        fetched = memory.all_words[tiles, first:first + row.size]
        intact = (fetched == row).all(axis=1)
        by_words.setdefault(row.tobytes(), []).append(tiles[intact])
        for index in np.flatnonzero(~intact).tolist():  # a corrupted image: its own row
            by_words.setdefault(fetched[index].tobytes(), []).append(tiles[index:index + 1])
    groups, failures = [], []
    for key, parts in by_words.items():
        tiles = np.sort(np.concatenate(parts)).astype(np.int64)
        if tiles.size == 0:
            continue
        try:
            timeline = cached_timeline(cache.timelines, key, step.row_address)
        except ValueError as error:  # DecodeError, TimelineError
            failures.append((int(tiles[0]), len(key) // WORD_BYTES, error))
            continue
        groups.append(RowGroup(timeline, tiles))
    if failures:
        tile, length, cause = min(failures, key=lambda f: f[0])
        raise ModelError(
            f"{where}: tile {tile}: the exchange row fetched from {step.row_address:#x} "
            f"({length} words) cannot run: {cause}"
        )
    return sorted(groups, key=lambda g: int(g.tiles[0]))


def cached_timeline(cache: dict, words: bytes, row_address: int) -> RowTimeline:
    key = (row_address, words)
    if key not in cache:
        decoded = decode(np.frombuffer(words, dtype=np.uint32).tolist(),
                         base_address=row_address)
        cache[key] = row_timeline(decoded)
    return cache[key]


def check_sends(memory: TileMemory, groups: list[RowGroup], where: str,
                errors: PhaseErrors) -> None:
    """Keep each group's send intervals inside tile memory; one reading outside it is
    reported (per tile) and dropped."""
    first_word, end_word = memory.base // WORD_BYTES, memory.end // WORD_BYTES
    for group in groups:
        for interval in group.timeline.sends:
            if first_word <= interval.address and interval.address + interval.words <= end_word:
                group.sends.append(interval)
                continue
            for tile in group.tiles.tolist():
                errors.add(SEND_ERROR, tile, 0, (
                    f"{where}: tile {tile}: send of {interval.words} words from word address "
                    f"{interval.address:#x} (byte {interval.address * WORD_BYTES:#x}) at event "
                    f"{interval.start_event} reads outside tile memory; not sent"))


# ---- receivers ---------------------------------------------------------------------------
def xpic_segments(timeline: RowTimeline) -> list[tuple[int, int, int, int]]:
    """(from_event, to_event, selected source, XPIC selector) for each XPIC selection of the
    row: selector 0 (`XPIC_MUX`) the own mux, 1 (`XPIC_MUX_PAIR`) the pair mux."""
    selections = [(c.event, c.value, c.selector) for c in timeline.controls if c.kind == XPIC]
    segments = []
    for k, (event, source, selector) in enumerate(selections):
        stop = selections[k + 1][0] if k + 1 < len(selections) else NO_END
        if stop > event:  # two selections at one event: the later one wins
            segments.append((event, stop, source, selector))
    return segments


@dataclass
class Runs:
    """Items arriving at `receiver` on events first .. first + count - 1 from `source`, read
    from its word addresses `address` .., `width` words each (one entry per run, all int64
    arrays); `mux` is the receiver's XPIC selector for them."""

    group: np.ndarray  # index of the receiver's row group
    receiver: np.ndarray
    source: np.ndarray
    first: np.ndarray
    count: np.ndarray  # events (items)
    address: np.ndarray  # source word address of the first word
    delay: np.ndarray  # L(source, receiver)
    width: np.ndarray  # words per item: 1 or 2 (64-bit items)
    mux: np.ndarray  # XPIC selector in force: XPIC_MUX or XPIC_MUX_PAIR

    FIELDS = ("group", "receiver", "source", "first", "count", "address", "delay", "width",
              "mux")

    @classmethod
    def concatenate(cls, parts: list[Runs]) -> Runs:
        if not parts:
            return cls(*(np.zeros(0, np.int64) for _ in cls.FIELDS))
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.FIELDS))

    def select(self, mask: np.ndarray) -> Runs:
        return Runs(*(getattr(self, f)[mask] for f in self.FIELDS))


def phase_runs(groups: list[RowGroup], sender_of: dict[int, RowGroup], latency: np.ndarray,
               tiles: int) -> Runs:
    """The runs every receiver of every group selects, for all of them at once (of either
    item width: `drop_mismatched` keeps those its mux takes). One entry per (group, XPIC
    selection, send interval of the selected source) is listed in Python; its receivers
    (the group's tiles but the source) are then expanded and cut in NumPy together."""
    pairs, members = [], []
    for index, group in enumerate(groups):
        for start, stop, source, selector in xpic_segments(group.timeline):
            if not 0 <= source < tiles or source not in sender_of:
                continue
            for interval in sender_of[source].sends:
                pairs.append((index, start, stop, source, selector, interval.start_event,
                              interval.events, interval.width, interval.address,
                              interval.sctl))
                members.append(group.tiles)
    if not pairs:
        return Runs.concatenate([])
    table = np.array(pairs, dtype=np.int64)
    sizes = np.array([m.size for m in members], dtype=np.int64)
    receiver = np.concatenate(members)
    (group, start, stop, source, selector, start_event, events, width, address,
     sctl) = table[np.repeat(np.arange(len(pairs)), sizes)].T
    delay = latency[source, receiver].astype(np.int64)
    reaches = (((sctl & DIRECTION_UP) != 0) & (receiver > source)) | (
        ((sctl & DIRECTION_DOWN) != 0) & (receiver < source))
    first = np.maximum(start_event + delay, start)
    last = np.minimum(start_event + delay + events, stop)
    keep = reaches & (first < last)  # a source never reaches itself
    first, delay = first[keep], delay[keep]
    return Runs(group[keep], receiver[keep], source[keep], first, last[keep] - first,
                (first - delay - start_event[keep]) * width[keep] + address[keep], delay,
                width[keep], selector[keep])


def drop_mismatched(runs: Runs, where: str, errors: PhaseErrors) -> Runs:
    """Report and drop the items of the other width than the selecting mux takes: 64-bit
    items at the own mux, 32-bit words at the pair mux (PIC does not move for them)."""
    wide_at_own = (runs.width == 2) & (runs.mux == XPIC_MUX)
    narrow_at_pair = (runs.width == 1) & (runs.mux == XPIC_MUX_PAIR)
    for bad, what, reached, need in (
            (wide_at_own, "64-bit item(s)", f"its own mux (XPIC selector {XPIC_MUX})",
             f"64-bit items need the pair mux (XPIC selector {XPIC_MUX_PAIR})"),
            (narrow_at_pair, "32-bit word(s)", f"its pair mux (XPIC selector {XPIC_MUX_PAIR})",
             f"32-bit words need the own mux (XPIC selector {XPIC_MUX})")):
        if bad.any():
            first, count = runs.first[bad], runs.count[bad]
            _report_words(errors, WIDTH, runs.receiver[bad], runs.source[bad], first,
                          first + count - 1, count, lambda r, s, n, a, b, what=what,
                          reached=reached, need=need: (
                              f"{where}: tile {r}: {n} {what} from tile {s} arriving at events "
                              f"{a}..{b} reached {reached}: {need}; dropped"))
    return runs.select(~(wide_at_own | narrow_at_pair))


def _report_words(errors: PhaseErrors, category: int, receiver: np.ndarray,
                  source: np.ndarray, first: np.ndarray, last: np.ndarray, count: np.ndarray,
                  message) -> None:
    """One message per (receiver, source) over word ranges [first, last] of `count` words."""
    if receiver.size == 0:
        return
    pairs, inverse = np.unique(np.stack([receiver, source], axis=1), axis=0,
                               return_inverse=True)
    inverse = inverse.reshape(-1)
    totals = np.bincount(inverse, weights=count, minlength=len(pairs)).astype(np.int64)
    lows = np.full(len(pairs), NO_END, np.int64)
    highs = np.full(len(pairs), -1, np.int64)
    np.minimum.at(lows, inverse, first)
    np.maximum.at(highs, inverse, last)
    for (r, s), n, a, b in zip(pairs.tolist(), totals.tolist(), lows.tolist(), highs.tolist(),
                               strict=True):
        errors.add(category, r, s, message(r, s, n, a, b))


def drop_lost(runs: Runs, phase_end: int, where: str, errors: PhaseErrors) -> Runs:
    """Report (in words) and cut the items arriving at or after the phase end."""
    lost = runs.first + runs.count > phase_end
    if lost.any():
        lost_from = np.maximum(runs.first[lost], phase_end)
        last = runs.first[lost] + runs.count[lost] - 1
        _report_words(errors, LOST, runs.receiver[lost], runs.source[lost], lost_from, last,
                      (last - lost_from + 1) * runs.width[lost], lambda r, s, n, a, b: (
                          f"{where}: tile {r}: {n} word(s) from tile {s} arriving at events "
                          f"{a}..{b}, at or after the phase end (event {phase_end}), were lost"))
        runs.count = np.minimum(runs.count, np.maximum(phase_end - runs.first, 0))
    return runs.select(runs.count > 0)


def pic_table(timeline: RowTimeline) -> tuple[np.ndarray, np.ndarray]:
    pics = [c for c in timeline.controls if c.kind == PIC]
    return (np.array([c.event for c in pics], np.int64),
            np.array([c.value for c in pics], np.int64))


def cut_at_pic(runs: Runs, groups: list[RowGroup], where: str,
               errors: PhaseErrors) -> Pieces:
    """Cut each run where the receiver's PIC is set, so that a piece stores to consecutive
    words (runs count events, pieces words); words before any PIC of the phase are reported
    and dropped. The PIC controls of all groups form one table sorted by (group, event), so
    the runs of every group are cut together."""
    tables = [pic_table(group.timeline) for group in groups]
    counts = np.array([events.size for events, _ in tables], dtype=np.int64)
    group_first = np.cumsum(counts) - counts  # index of each group's first PIC control
    if counts.sum():
        pic_events = np.concatenate([events for events, _ in tables])
        pic_values = np.concatenate([values for _, values in tables])
    else:
        pic_events = pic_values = np.zeros(0, np.int64)
    pic_group = np.repeat(np.arange(len(groups), dtype=np.int64), counts)
    pieces = _cut_runs(runs, pic_group, pic_events, pic_values, group_first, counts, where,
                       errors)
    return pieces.sorted_by_arrival().with_targets()


def _cut_runs(runs: Runs, pic_group: np.ndarray, pic_events: np.ndarray,
              pic_values: np.ndarray, group_first: np.ndarray, counts: np.ndarray, where: str,
              errors: PhaseErrors) -> Pieces:
    # The PIC in force at an event: the last PIC control of the run's group at or before it.
    # Keys (group, event) as one int64: events stay far below 2**40.
    keys = pic_group * PIC_KEY + pic_events
    base = runs.group * PIC_KEY

    def in_force(events: np.ndarray) -> np.ndarray:
        found = np.searchsorted(keys, base + events, side="right") - 1
        return np.where((found >= 0) & (pic_group[np.maximum(found, 0)] == runs.group),
                        found, -1)

    low, high = in_force(runs.first), in_force(runs.first + runs.count - 1)
    no_pic = low < 0
    if no_pic.any():
        # words before the first PIC: from the run's start to the group's first PIC event
        grouped = runs.group[no_pic]
        has_pic = counts[grouped] > 0
        first_pic = np.full(grouped.size, NO_END, np.int64)
        first_pic[has_pic] = pic_events[group_first[grouped[has_pic]]]
        stop = np.minimum(runs.first[no_pic] + runs.count[no_pic], first_pic)
        _report_words(errors, NO_PIC, runs.receiver[no_pic], runs.source[no_pic],
                      runs.first[no_pic], stop - 1,
                      (stop - runs.first[no_pic]) * runs.width[no_pic],
                      lambda r, s, n, a, b: (
                          f"{where}: tile {r}: {n} word(s) from tile {s} arriving at events "
                          f"{a}..{b} found no PIC set in this phase; dropped"))
    low = np.where(no_pic, group_first[runs.group], low)
    keep = high >= 0
    runs, low, high = runs.select(keep), low[keep], high[keep]
    pieces_per_run = high - low + 1
    run_of_piece = np.repeat(np.arange(runs.receiver.size), pieces_per_run)
    starts = np.cumsum(pieces_per_run) - pieces_per_run
    pic = low[run_of_piece] + np.arange(run_of_piece.size) - starts[run_of_piece]
    run_start, run_stop = runs.first[run_of_piece], runs.first[run_of_piece] + runs.count[
        run_of_piece]
    begin = np.maximum(run_start, pic_events[pic])
    # the next PIC control of the same group ends the piece (none after a group's last)
    last_of_group = pic + 1 >= (group_first + counts)[runs.group[run_of_piece]]
    following = np.where(last_of_group, NO_END,
                         np.append(pic_events, NO_END)[np.minimum(pic + 1, pic_events.size)])
    end = np.minimum(run_stop, following)
    keep = end > begin  # several PIC controls at one event: the last one holds
    run_of_piece, pic, begin, end = (x[keep] for x in (run_of_piece, pic, begin, end))
    width = runs.width[run_of_piece]
    return Pieces(
        receiver=runs.receiver[run_of_piece], source=runs.source[run_of_piece],
        arrival=begin, count=(end - begin) * width,
        source_word=runs.address[run_of_piece] + (begin - runs.first[run_of_piece]) * width,
        delay=runs.delay[run_of_piece], pic_value=pic_values[pic],
        pic=pic - group_first[runs.group[run_of_piece]], width=width,
    )


def drop_odd_pic(pieces: Pieces, where: str, errors: PhaseErrors) -> Pieces:
    """Report (per receiver and source) and drop the 64-bit items whose PIC word address is
    odd: they are 8-byte aligned. The pointer still advances past them."""
    odd = (pieces.width == 2) & (pieces.targets % 2 == 1)
    if not odd.any():
        return pieces
    firsts: dict[tuple[int, int], list[int]] = {}  # (receiver, source) -> items, events, word
    for k in np.flatnonzero(odd).tolist():
        key = (int(pieces.receiver[k]), int(pieces.source[k]))
        items, arrival = int(pieces.events[k]), int(pieces.arrival[k])
        if key not in firsts:  # pieces are in arrival order per receiver
            firsts[key] = [0, arrival, arrival, int(pieces.targets[k])]
        entry = firsts[key]
        entry[0] += items
        entry[2] = max(entry[2], arrival + items - 1)
    for (receiver, source), (items, low, high, word) in firsts.items():
        errors.add(ODD_PIC, receiver, source, (
            f"{where}: tile {receiver}: {items} 64-bit item(s) from tile {source} arriving at "
            f"events {low}..{high} meet an odd PIC through the pair mux, first word address "
            f"{word:#x} (byte {word * WORD_BYTES:#x}): 64-bit items are 8-byte aligned; "
            f"dropped"))
    return pieces._take(np.flatnonzero(~odd))


def drop_outside(pieces: Pieces, memory: TileMemory, where: str, errors: PhaseErrors) -> Pieces:
    """Report (per receiver, at its first such word in arrival order) and drop the words
    whose PIC address is outside tile memory."""
    first_word, end_word = memory.base // WORD_BYTES, memory.end // WORD_BYTES
    width = pieces.width  # whole items only (aligned items never straddle the ends)
    low = np.clip(-((pieces.targets - first_word) // width) * width, 0, pieces.count)
    inside_end = np.clip((end_word - pieces.targets) // width * width, low, pieces.count)
    outside = low + pieces.count - inside_end
    if outside.any():
        bad = np.flatnonzero(outside > 0)
        first_bad = np.where(low[bad] > 0, 0, inside_end[bad])  # offset of its first bad word
        totals: dict[int, int] = {}
        firsts: dict[int, tuple[int, int, int]] = {}
        for k, offset in zip(bad.tolist(), first_bad.tolist(), strict=True):
            receiver = int(pieces.receiver[k])
            totals[receiver] = totals.get(receiver, 0) + int(outside[k])
            if receiver not in firsts:  # pieces are in arrival order per receiver
                firsts[receiver] = (int(pieces.source[k]),
                                    int(pieces.arrival[k]) + offset // int(width[k]),
                                    int(pieces.targets[k]) + offset)
        for receiver, (source, event, word) in firsts.items():
            errors.add(OUTSIDE, receiver, 0, (
                f"{where}: tile {receiver}: {totals[receiver]} incoming word(s) stored outside "
                f"tile memory, first from tile {source} at event {event} to PIC word "
                f"address {word:#x} (byte {word * WORD_BYTES:#x}); dropped"))
    return pieces.trimmed(low, inside_end)


def report_bus_conflicts(pieces: Pieces, tiles: int, where: str, errors: PhaseErrors) -> None:
    """Tiles 2i and 2i + 1 share their two incoming buses. At an event where a tile stores a
    64-bit item from s through its pair mux (both buses), its partner may store only an item
    from the same s through its own pair mux; report (once per tile, at the first such event)
    any other store of the partner then. Nothing is dropped. Every (pair-mux piece, piece of
    the partner) couple of the phase is tested at once."""
    pair = np.flatnonzero(pieces.width == 2)
    if pair.size == 0:
        return
    partner = pair_tile(pieces.receiver[pair])
    pair, partner = pair[partner < tiles], partner[partner < tiles]
    order = np.argsort(pieces.receiver, kind="stable")  # piece indices by receiver
    by_receiver = pieces.receiver[order]
    low = np.searchsorted(by_receiver, partner, side="left")
    counts = np.searchsorted(by_receiver, partner, side="right") - low
    if not counts.any():
        return  # the partners' buses are free
    mine = np.repeat(pair, counts)
    theirs = order[np.repeat(low, counts) + np.arange(counts.sum())
                   - np.repeat(np.cumsum(counts) - counts, counts)]
    start, stop = pieces.arrival, pieces.arrival + pieces.events
    begin = np.maximum(start[mine], start[theirs])
    end = np.minimum(stop[mine], stop[theirs])
    shared = (pieces.width[theirs] == 2) & (pieces.source[theirs] == pieces.source[mine])
    bad = (begin < end) & ~shared
    if not bad.any():
        return
    mine, theirs, begin, end = mine[bad], theirs[bad], begin[bad], end[bad]
    tile = pieces.receiver[mine]
    # per tile: the first clash by event, then by its piece, then by the partner's piece
    first = np.lexsort((theirs, mine, begin, tile))
    leads = first[np.r_[True, tile[first][1:] != tile[first][:-1]]]
    clashes = np.bincount(np.searchsorted(tile[leads], tile), weights=end - begin,
                          minlength=leads.size).astype(np.int64)
    for k, total in zip(leads.tolist(), clashes.tolist(), strict=True):
        me, other = int(tile[k]), int(theirs[k])
        what = "64-bit items" if pieces.width[other] == 2 else "32-bit words"
        errors.add(BUS_CONFLICT, me, pair_tile(me), (
            f"{where}: tile {me}: incoming-bus conflict with its pair tile {pair_tile(me)} at "
            f"event {int(begin[k])}: tile {me} takes 64-bit items from tile "
            f"{int(pieces.source[mine[k]])} on both buses while tile {pair_tile(me)} stores "
            f"{what} from tile {int(pieces.source[other])} ({total} event(s) in conflict)"))


# ---- the phase ---------------------------------------------------------------------------
def run_exchange_phase(memory: TileMemory, package: Package, step: ExchangeStep, where: str,
                       target: Target, latency: np.ndarray | None = None,
                       cache: RunCache | None = None) -> PhaseOutcome:
    """Run one phase; `latency` is `target.latency_matrix(package.tiles)` and `cache` the
    run's `RunCache`, both passed in so that a run computes them once."""
    if latency is None:
        latency = target.latency_matrix(package.tiles)
    groups = fetch_groups(memory, package, step, where, cache)
    outcome = PhaseOutcome(max((g.timeline.total_events for g in groups), default=0))
    errors = PhaseErrors()
    check_sends(memory, groups, where, errors)
    sender_of = {int(t): g for g in groups if g.sends for t in g.tiles.tolist()}
    runs = phase_runs(groups, sender_of, latency, memory.tiles)
    runs = drop_lost(drop_mismatched(runs, where, errors), outcome.events, where, errors)
    pieces = cut_at_pic(runs, groups, where, errors)
    pieces = drop_outside(drop_odd_pic(pieces, where, errors), memory, where, errors)
    report_bus_conflicts(pieces, memory.tiles, where, errors)
    report_contention(step, groups, pieces, memory, target, where, errors)
    outcome.errors = errors.in_order()
    outcome.stored_words = apply_pieces(memory, pieces)
    return outcome


# ---- memory-element contention -----------------------------------------------------------
_ELEMENT_STARTS: dict[int, tuple[Target, np.ndarray]] = {}


def element_starts(target: Target) -> np.ndarray:
    """The first byte address of each of `target.memory_elements` (computed once per
    target object)."""
    entry = _ELEMENT_STARTS.get(id(target))
    if entry is None or entry[0] is not target:
        entry = (target, np.array([e.start for e in target.memory_elements], dtype=np.int64))
        _ELEMENT_STARTS[id(target)] = entry
    return entry[1]


def element_index(target: Target, addresses: np.ndarray) -> np.ndarray:
    """Index in `target.memory_elements` of the element holding each byte address."""
    return np.searchsorted(element_starts(target), addresses, side="right") - 1


def touched_elements(target: Target, ranges: list[tuple[int, int]]) -> frozenset[int]:
    elements: frozenset[int] = frozenset()
    for address, nbytes in ranges:
        elements |= target.elements_of_range(address, nbytes)
    return elements


def report_contention(step: ExchangeStep, groups: list[RowGroup], pieces: Pieces,
                      memory: TileMemory, target: Target, where: str,
                      errors: PhaseErrors) -> None:
    """Instruction fetch, send reads and incoming writes of one tile in one element in the
    same event contend (spec: exchange-isa.md); the placement should have kept them apart.
    Checked exactly (`device.memory_conflicts`) only on tiles where two of the three kinds
    touch a common element at all, so a well-placed program costs a few array tests: per
    group, the elements its row's code and send reads touch (a few Python sets), then for
    the tiles of all groups at once whether the span of words written to them meets one."""
    if not groups:
        return
    written_low, written_high = pieces.written_words_per_tile(memory.tiles,
                                                                   memory.base // WORD_BYTES)
    count = len(target.memory_elements)
    marked = np.zeros((len(groups), count + 1), dtype=np.int64)  # marked[g, e + 1]
    everywhere = np.zeros(len(groups), dtype=bool)  # code and reads share an element
    for index, group in enumerate(groups):
        timeline = group.timeline
        row_bytes = WORD_BYTES * sum(instr.words for instr in timeline.instructions)
        code = target.elements_of_range(step.row_address, row_bytes)
        read = touched_elements(
            target, [(i.address * WORD_BYTES, i.words * WORD_BYTES) for i in group.sends])
        everywhere[index] = bool(code & read)
        marked[index, 1:][sorted(code | read)] = 1
    seen = np.cumsum(marked, axis=1)  # seen[g, e + 1]: marked elements among 0..e
    tiles = np.concatenate([group.tiles for group in groups])
    of_group = np.repeat(np.arange(len(groups)), [group.tiles.size for group in groups])
    low, high = written_low[tiles], written_high[tiles]
    writes = low <= high
    first = element_index(target, memory.base + np.where(writes, low, 0) * WORD_BYTES)
    last = element_index(target, memory.base + np.where(writes, high, 0) * WORD_BYTES)
    suspect = everywhere[of_group] | (
        writes & (seen[of_group, last + 1] - seen[of_group, first] > 0))
    for k in np.flatnonzero(suspect).tolist():
        tile, timeline = int(tiles[k]), groups[int(of_group[k])].timeline
        incoming = pieces.incoming_writes(tile)
        conflicts = find_conflicts(step.row_address, timeline.instructions, incoming,
                                   target, timeline)
        if conflicts:
            errors.add(CONTENTION, tile, 0,
                       f"{where}: tile {tile}: memory-element contention: {conflicts[0]}"
                       + (f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1
                          else ""))
