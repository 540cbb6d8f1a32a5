"""Row semantics: the exchange-event timeline of one decoded row.

Rules (spec `exchange-isa.md`, "Event time"; docs/internals.md, "What we build", for the model
choices):

- Every instruction spans `events` consecutive exchange events (`events_m1 + 1` or
  `words_m1 + 1`); event 0 is the first event after the phase's sync.
- `delaypic` / `delayxpic` apply their control at the *terminal* event of their interval;
  `sendpic` / `sendpicp` apply theirs at the *first* event of their interval.
- Outgoing stream. The row keeps a cursor: the source word address of the next word the
  stream would read, and the stream's `sctl`.
  - `send` starts the stream at its absolute word address.
  - `sendoff` continues it: its first word is `cursor + delta`, where the cursor is the word
    just after the last word the stream sent (delta 0 continues contiguously). Its own
    `sctl` becomes the stream's.
  - `sendpic` continues it contiguously (first word = cursor) with the stream's `sctl`.
  - a transmitting `sendpicp` restarts the stream from its absolute address.
  - a `sendpicp` with direction 0 sends nothing and leaves the stream untouched: the spec
    calls its address immaterial, so it cannot define the stream.
  - `send`, `sendoff` and `sendpic` with direction 0 still advance the cursor (the spec:
    they advance the outgoing event stream without putting a packet on a route).
  A `sendoff` or `sendpic` before any stream was started is an error.
- Items are 32-bit words, or 64-bit items (two consecutive words, the lower address first)
  when the stream's `sctl` sets bit 2: an instruction's count then counts items, one per
  event, and the cursor advances two words per event. A 64-bit stream must start at an even
  word address (8-byte aligned items); an odd one is an error. (The spec names the bit;
  what receives 64-bit items is our model choice, docs/internals.md "Pair broadcast".)
- Controls (model choices, docs/internals.md "What we build"): XPIC selector 0 sets the
  source tile id of the tile's own incoming mux; XPIC selector 1 (the pair mux,
  `$INCOMING_MUXPAIR`) sets the source tile id of the pair mux, which takes 64-bit items
  over both incoming buses of the tile pair (2i, 2i + 1) (docs/internals.md "Pair
  broadcast"); PIC selector 0 (`delaypic` selector 0, `sendpic` selector 2, `sendpicp`
  pic_selector 0) sets the absolute incoming word address. `sendpic` selectors 0/1 are XPIC
  selectors 0/1 and 2/3 are PIC selectors 0/1. `sendpicp`'s 14-bit XPIC configuration is
  `selector << 13 | value`, the same layout as `delayxpic`'s selector and value fields.
  Other selectors are rejected until we define them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.utils.exceptions import DiagnosticException

from device.isa import (
    SCTL_64BIT,
    SCTL_DIRECTION_MASK,
    DelayPic,
    DelayXpic,
    Instruction,
    Send,
    SendOff,
    SendPic,
    SendPicP,
    decode,
    format_instruction,
)

XPIC = "xpic"
PIC = "pic"
XPIC_MUX, XPIC_MUX_PAIR = 0, 1  # XPIC selectors: own mux (32-bit words), pair mux (64-bit items)
XPIC_VALUE_BITS = 13  # sendpicp's 14-bit XPIC configuration: selector << 13 | value
SUPPORTED_SELECTORS = {XPIC: (XPIC_MUX, XPIC_MUX_PAIR), PIC: (0,)}


class TimelineError(DiagnosticException, ValueError):
    """A row whose event semantics are undefined (no stream, an odd 64-bit stream address,
    unknown selector)."""


@dataclass(frozen=True, slots=True)
class SendInterval:
    """`words` 32-bit words leave on events `start_event ..`, read from word addresses
    `address ..`: one word per event, or one 64-bit item (two words) per event when `sctl`
    sets the 64-bit bit."""

    start_event: int
    words: int
    address: int  # source word address of the first word of the interval
    sctl: int

    @property
    def width(self) -> int:
        """Words per event: 2 for 64-bit items."""
        return item_words(self.sctl)

    @property
    def events(self) -> int:
        return self.words // self.width

    @property
    def end_event(self) -> int:
        return self.start_event + self.events

    @property
    def direction(self) -> int:
        return self.sctl & SCTL_DIRECTION_MASK


@dataclass(frozen=True, slots=True)
class ControlEvent:
    event: int
    kind: str  # "pic" | "xpic"
    selector: int  # selector within its kind (0 = source tile id / absolute word address)
    value: int


@dataclass(frozen=True, slots=True)
class InstructionSpan:
    """Where one instruction sits in the row: word index and event interval [start, end)."""

    index: int  # word index in the row
    start_event: int
    events: int
    continues_stream: bool  # True for sendoff/sendpic: its words follow the stream's cursor

    @property
    def end_event(self) -> int:
        return self.start_event + self.events


@dataclass(frozen=True)
class EventArrays:
    """Per-event view of a row for a simulator (length `total_events`)."""

    source: np.ndarray  # int64: source word address sent at this event, -1 if none
    sctl: np.ndarray  # int8: sctl of the word sent at this event (0 if none)


@dataclass
class RowTimeline:
    total_events: int
    sends: list[SendInterval] = field(default_factory=list)
    controls: list[ControlEvent] = field(default_factory=list)
    spans: list[InstructionSpan] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)

    def event_arrays(self) -> EventArrays:
        return event_arrays(self)

    def instruction_at(self, event: int) -> int | None:
        """Index (in `instructions`) of the instruction whose interval holds `event`."""
        for position, span in enumerate(self.spans):
            if span.start_event <= event < span.end_event:
                return position
        return None


def item_words(sctl: int) -> int:
    return 2 if sctl & SCTL_64BIT else 1


def event_arrays(timeline: RowTimeline) -> EventArrays:
    """Per event, the word address of the item sent (its first word for 64-bit items)."""
    source = np.full(timeline.total_events, -1, dtype=np.int64)
    sctl = np.zeros(timeline.total_events, dtype=np.int8)
    for interval in timeline.sends:
        stop = interval.end_event
        source[interval.start_event : stop] = np.arange(
            interval.address, interval.address + interval.words, interval.width, dtype=np.int64
        )
        sctl[interval.start_event : stop] = interval.sctl
    return EventArrays(source, sctl)


def xpic_configuration(selector: int, value: int) -> int:
    """`sendpicp`'s XPIC field for an XPIC selector and its value (the source tile)."""
    return selector << XPIC_VALUE_BITS | value


def split_xpic_configuration(configuration: int) -> tuple[int, int]:
    """(selector, value) of `sendpicp`'s XPIC field."""
    return configuration >> XPIC_VALUE_BITS, configuration & ((1 << XPIC_VALUE_BITS) - 1)


def _control(instr: Instruction, event: int, kind: str, selector: int, value: int) -> ControlEvent:
    if selector not in SUPPORTED_SELECTORS[kind]:
        raise TimelineError(
            f"{format_instruction(instr)}: {kind.upper()} selector {selector} is not supported "
            f"(only {kind.upper()} selector 0 is defined: "
            f"{'source tile id' if kind == XPIC else 'absolute incoming word address'})"
        )
    return ControlEvent(event, kind, selector, value)


def _controls_of(instr: Instruction, start: int) -> list[ControlEvent]:
    terminal = start + instr.events - 1
    match instr:
        case DelayPic(_, selector, value):
            return [_control(instr, terminal, PIC, selector, value)]
        case DelayXpic(_, selector, value):
            return [_control(instr, terminal, XPIC, selector, value)]
        case SendPic(_, selector, value):
            kind = XPIC if selector < 2 else PIC
            return [_control(instr, start, kind, selector & 1, value)]
        case SendPicP(_, _, _, pic_selector, xpic, pic):
            return [
                _control(instr, start, XPIC, *split_xpic_configuration(xpic)),
                _control(instr, start, PIC, pic_selector, pic),
            ]
    return []


def _check_item_alignment(instr: Instruction, first_word: int, sctl: int) -> None:
    if sctl & SCTL_64BIT and sctl & SCTL_DIRECTION_MASK and first_word % 2:
        raise TimelineError(
            f"{format_instruction(instr)}: a 64-bit stream (sctl {sctl}) reads word address "
            f"{first_word:#x}, which is odd: 64-bit items are 8-byte aligned"
        )


def row_timeline(instrs_or_words, base_address: int = 0) -> RowTimeline:
    """The events of a row: its send intervals and incoming-control events.

    Raw words are decoded as placed at byte address `base_address`.
    """
    instrs = as_instructions(instrs_or_words, base_address)
    timeline = RowTimeline(0, instructions=list(instrs))
    event = 0
    word_index = 0
    cursor: int | None = None  # next source word address of the outgoing stream
    stream_sctl = 0
    for instr in instrs:
        continues = False
        first_word: int | None = None
        match instr:
            case Send(_, address, sctl):
                first_word, stream_sctl = address, sctl
            case SendOff(_, delta, sctl):
                if cursor is None:
                    raise TimelineError(
                        f"{format_instruction(instr)} at event {event}: sendoff continues the "
                        f"outgoing stream but no send has started one"
                    )
                first_word, stream_sctl, continues = cursor + delta, sctl, True
            case SendPic():
                if cursor is None:
                    raise TimelineError(
                        f"{format_instruction(instr)} at event {event}: sendpic continues the "
                        f"outgoing stream but no send has started one"
                    )
                first_word, continues = cursor, True
            case SendPicP(_, address, sctl):
                if sctl & SCTL_DIRECTION_MASK:
                    first_word, stream_sctl = address, sctl
        if first_word is not None:
            _check_item_alignment(instr, first_word, stream_sctl)
            words = instr.events * item_words(stream_sctl)
            cursor = first_word + words
            if stream_sctl & SCTL_DIRECTION_MASK:
                timeline.sends.append(SendInterval(event, words, first_word, stream_sctl))
        timeline.controls.extend(_controls_of(instr, event))
        timeline.spans.append(InstructionSpan(word_index, event, instr.events, continues))
        event += instr.events
        word_index += instr.words
    timeline.total_events = event
    return timeline


def as_instructions(instrs_or_words, base_address: int = 0) -> list[Instruction]:
    """Accept decoded instructions or raw words (decoded at byte address `base_address`)."""
    items = list(instrs_or_words)
    if items and all(isinstance(item, (int, np.integer)) for item in items):
        return decode(items, base_address)
    return items


def instruction_intervals(instrs) -> list[tuple[int, int]]:
    """[start, end) event interval of each instruction; needs no stream semantics."""
    intervals = []
    event = 0
    for instr in instrs:
        intervals.append((event, event + instr.events))
        event += instr.events
    return intervals
