"""Placement-dependent SRAM memory-element conflicts of one exchange row.

Spec (`exchange-isa.md`): "Instruction fetch, a SEND's SRAM read, and an incoming exchange
write can contend for the same SRAM element". Per exchange event a tile can do three
accesses; two of different kinds in the same element in the same event are a conflict.

Access model (our choice, documented here and used by placement and the model alike):
- fetch: an instruction's words are fetched at the *first* event of its interval; a
  `sendpicp` fetches both of its words (8 bytes) then. Later events of a long instruction
  fetch nothing.
- send read: at every event a word leaves, the stream reads that word (4 bytes at
  `4 * source word address`) in that same event.
- incoming write: the caller gives the byte address written at each event (from the row's
  PIC/XPIC controls and the words that arrive; `incoming_writes` below computes it).
Elements come from the target (`Target.elements_of_range`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from device.exchange_timeline import PIC, ControlEvent, RowTimeline, as_instructions, row_timeline
from device.target import IPU21, WORD_BYTES, Target

FETCH = "fetch"
SEND_READ = "send-read"
WRITE = "write"


@dataclass(frozen=True, slots=True)
class Access:
    kind: str  # "fetch" | "send-read" | "write"
    address: int  # absolute byte address
    nbytes: int


@dataclass(frozen=True, slots=True)
class Conflict:
    event: int
    element: int  # index in `Target.memory_elements`
    accesses: tuple[Access, ...]

    def __str__(self) -> str:
        parts = ", ".join(f"{a.kind} at {a.address:#x}" for a in self.accesses)
        return f"event {self.event}: element {self.element} is hit by {parts}"


def fetch_accesses(row_address: int, timeline: RowTimeline) -> dict[int, list[Access]]:
    accesses: dict[int, list[Access]] = defaultdict(list)
    for instr, span in zip(timeline.instructions, timeline.spans):
        address = row_address + WORD_BYTES * span.index
        accesses[span.start_event].append(Access(FETCH, address, WORD_BYTES * instr.words))
    return accesses


def send_read_accesses(timeline: RowTimeline, events: Iterable[int] | None = None) -> dict[int, list[Access]]:
    """Send reads per event; with `events`, only at those events (long streams stay cheap)."""
    wanted = None if events is None else set(events)
    accesses: dict[int, list[Access]] = defaultdict(list)
    for interval in timeline.sends:
        span = range(interval.start_event, interval.end_event)
        width = interval.width
        for event in span if wanted is None else sorted(wanted.intersection(span)):
            address = WORD_BYTES * (interval.address + width * (event - interval.start_event))
            accesses[event].append(Access(SEND_READ, address, WORD_BYTES * width))
    return accesses


def send_events(timeline: RowTimeline) -> np.ndarray:
    spans = [np.arange(i.start_event, i.end_event) for i in timeline.sends]
    return np.concatenate(spans) if spans else np.zeros(0, dtype=np.int64)


def write_accesses(incoming: Mapping[int, int] | Sequence[int] | np.ndarray | None) -> dict[int, list[Access]]:
    """Incoming writes given per event (byte address, negative = none) or as {event: address}."""
    accesses: dict[int, list[Access]] = defaultdict(list)
    if incoming is None:
        return accesses
    items: Iterable = incoming.items() if isinstance(incoming, Mapping) else enumerate(incoming)
    for event, address in items:
        if int(address) >= 0:
            accesses[int(event)].append(Access(WRITE, int(address), WORD_BYTES))
    return accesses


def find_conflicts(
    row_address: int,
    instrs_or_words,
    incoming: Mapping[int, int] | Sequence[int] | np.ndarray | None = None,
    target: Target = IPU21,
    timeline: RowTimeline | None = None,
) -> list[Conflict]:
    """Events where accesses of different kinds hit one memory element, in event order."""
    if timeline is None:
        timeline = row_timeline(as_instructions(instrs_or_words, row_address))
    fetches, writes = fetch_accesses(row_address, timeline), write_accesses(incoming)
    # Only events with accesses of two kinds can conflict; find them before expanding the
    # (possibly thousands of) send reads into per-event accesses.
    kinds_per_event = np.concatenate([np.fromiter(fetches, dtype=np.int64),
                                      np.unique(send_events(timeline)),
                                      np.fromiter(writes, dtype=np.int64)])
    events, counts = np.unique(kinds_per_event, return_counts=True)
    candidates = events[counts > 1].tolist()
    per_event: dict[int, list[Access]] = defaultdict(list)
    for source in (fetches, send_read_accesses(timeline, candidates), writes):
        for event, accesses in source.items():
            per_event[event].extend(accesses)
    conflicts = []
    for event in candidates:
        by_element: dict[int, list[Access]] = defaultdict(list)
        for access in per_event[event]:
            for element in target.elements_of_range(access.address, access.nbytes):
                by_element[element].append(access)
        for element in sorted(by_element):
            accesses = by_element[element]
            if len({a.kind for a in accesses}) > 1:
                conflicts.append(Conflict(event, element, tuple(accesses)))
    return conflicts


def incoming_writes(controls: list[ControlEvent], arrivals, total_events: int,
                    width: int = 1) -> np.ndarray:
    """Byte address written at each event (the first word's), -1 where nothing is stored.

    `arrivals[t]` is true when an item (`width` words: 2 for the 64-bit items of the pair
    mux) from the XPIC-selected source reaches the tile at event `t`. A PIC control at event
    `t` takes effect for an item arriving at `t`; the pointer auto-increments by one word
    per stored word. An aligned 64-bit item lies in one memory element, like its first word.
    """
    writes = np.full(total_events, -1, dtype=np.int64)
    pic_at = {c.event: c.value for c in controls if c.kind == PIC}
    pointer: int | None = None
    for event in range(total_events):
        if event in pic_at:
            pointer = pic_at[event]
        if event < len(arrivals) and arrivals[event]:
            if pointer is None:
                raise ValueError(f"event {event}: a word arrives before any PIC set the pointer")
            writes[event] = WORD_BYTES * pointer
            pointer += width
    return writes
