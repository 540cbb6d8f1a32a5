"""Exchange-row construction for `schedule-exchange`: the phase program builder.

A broadcast phase moves `words` 32-bit words from one sender tile to a set of receivers.
Event 0 is the same instant on every tile after the sync. The sender streams its words on
events 0 .. words-1 in the directions that reach its receivers; a word sent at event t
reaches receiver r at t + L(s, r). Each receiver selects the sender (XPIC) and its incoming
word pointer (PIC) at event 0 with one directionless `sendpicp`, then waits until the last
word has arrived: the phase lasts `words + max_r L(s, r)` events, so it depends on the
latency of the farthest receiver, not on a constant.

Concurrent broadcasts (a grouped `tile.exchange`) may make one tile the sender of one group
and a receiver of another: its row is full duplex (`duplex_instructions`), one transmitting
`sendpicp` that starts its words and sets its incoming source and pointer at event 0, as the
SDK's full-duplex rows do (spec: exchange-isa.md), then the rest of its words and a wait
for the last word it receives.

A pair broadcast (`tile.exchange ... pairs`) sends its words as 64-bit items (sctl bit 2),
one per event, and its receivers select the sender with the pair mux (XPIC selector 1), which
takes an item over both incoming buses of their tile pair: the phase lasts
`words / 2 + max_r L(s, r)` events (docs/internals.md, "Pair broadcast").

Every row is built from its declarative schedule (send intervals, control events), then
encoded, decoded and checked against that schedule (`device.row_checker`) before use: a
disagreement is a compiler bug and is reported as one.

Rows at scale (docs/internals.md, "Exchange rows at scale"): concrete rows with the same
instruction sequence (`structure`) are shared; `varying_fields` lists the (instruction,
field) pairs that differ between them, which `schedule-exchange` carries as `#tile.patch`
arrays, and `instantiate` rebuilds one iteration's concrete row from the shared row and its
patch values (the package writer does). `slot_stride` is the byte distance between the code
slots of consecutive iterations of one exchange op.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import numpy as np
from xdsl.utils.exceptions import PassFailedException

from device import isa
from device.exchange_timeline import (
    XPIC_MUX,
    XPIC_MUX_PAIR,
    ControlEvent,
    SendInterval,
    TimelineError,
    item_words,
    xpic_configuration,
)
from device.row_checker import RowMismatch, RowSchedule, ScheduleError, check_row
from device.target import WORD_BYTES, Target

# Field limits, from the encodings (spec: exchange-isa.md).
SEND_MAX_WORDS = isa.max_count(isa.Send)
SENDPICP_MAX_WORDS = isa.max_count(isa.SendPicP)
SENDOFF_MAX_WORDS = isa.max_count(isa.SendOff)
DELAY_MAX_EVENTS = isa.max_count(isa.Delay)

PIC_ABSOLUTE = 0  # sendpicp pic_selector 0: absolute incoming word address


@dataclass(frozen=True)
class BroadcastPhase:
    """One concrete broadcast: the schedule both rows are built from and checked against."""

    sender: int
    receivers: tuple[int, ...]
    words: int
    source_word: int  # word address of the first word on the sender
    dest_word: int  # word address the first word lands at on every receiver
    total_events: int
    sctl: int  # directions, and the 64-bit item bit for a pair broadcast

    @property
    def items(self) -> int:
        """Events the sender sends on: its words, or its 64-bit items."""
        return self.words // item_words(self.sctl)

    @property
    def xpic_selector(self) -> int:
        return XPIC_MUX_PAIR if item_words(self.sctl) == 2 else XPIC_MUX

    @property
    def xpic_configuration(self) -> int:
        """`sendpicp`'s XPIC field: the mux and the sender."""
        return xpic_configuration(self.xpic_selector, self.sender)

    def sender_schedule(self) -> RowSchedule:
        return RowSchedule(self.items, [SendInterval(0, self.words, self.source_word,
                                                     self.sctl)], [])

    def receiver_schedule(self) -> RowSchedule:
        controls = [ControlEvent(0, "xpic", self.xpic_selector, self.sender),
                    ControlEvent(0, "pic", PIC_ABSOLUTE, self.dest_word)]
        return RowSchedule(self.total_events, [], controls)


def duplex_schedule(send: BroadcastPhase, receive: BroadcastPhase) -> RowSchedule:
    """The row of `send`'s sender, which receives in `receive` during the same phase."""
    return RowSchedule(max(send.items, receive.total_events),
                       send.sender_schedule().sends, receive.receiver_schedule().controls)


def directions_to(sender: int, receivers: tuple[int, ...]) -> int:
    """sctl direction bits reaching every receiver: 1 = higher ids, 2 = lower ids."""
    sctl = 0
    if any(r > sender for r in receivers):
        sctl |= 1
    if any(r < sender for r in receivers):
        sctl |= 2
    return sctl


def broadcast_events(words: int, pairs: bool) -> int:
    """Events a broadcast of `words` 32-bit words streams on: one per word, or one per 64-bit
    item of a pair broadcast. `plan_broadcast` and the plans' cost functions count with it."""
    return words // item_words(isa.SCTL_64BIT) if pairs else words


def plan_broadcast(sender: int, receivers: tuple[int, ...], words: int, source_byte: int,
                   dest_byte: int, latency: np.ndarray, pairs: bool = False) -> BroadcastPhase:
    """The broadcast of `words` words; with `pairs`, as 64-bit items to pair muxes."""
    arrival = max((int(latency[sender, r]) for r in receivers), default=0)
    width = isa.SCTL_64BIT if pairs else 0
    return BroadcastPhase(sender, receivers, words, source_byte // WORD_BYTES, dest_byte // WORD_BYTES,
                          broadcast_events(words, pairs) + arrival,
                          directions_to(sender, receivers) | width)


def sender_instructions(phase: BroadcastPhase) -> list[isa.Instruction]:
    """`send` for the first items at the absolute address, `sendoff` continuing the stream."""
    return list(sender_row(phase.items, phase.source_word, phase.sctl))


@functools.lru_cache(maxsize=1 << 14)
def sender_row(items: int, source_word: int, sctl: int) -> tuple[isa.Instruction, ...]:
    """`sender_instructions` from the fields it reads (once: iterations repeat them)."""
    first = min(items, SEND_MAX_WORDS)
    instrs: list[isa.Instruction] = [isa.Send(first - 1, source_word, sctl)]
    remaining = items - first
    while remaining > 0:
        chunk = min(remaining, SENDOFF_MAX_WORDS)
        instrs.append(isa.SendOff(chunk - 1, 0, sctl))
        remaining -= chunk
    return tuple(instrs)


def duplex_instructions(send: BroadcastPhase, receive: BroadcastPhase) -> list[isa.Instruction]:
    """A transmitting `sendpicp` (first items, the incoming source and pointer at event 0),
    `sendoff` for the rest of the items, then a wait until the last incoming item (the length
    of `duplex_schedule(send, receive)`)."""
    return list(duplex_row(send.items, send.source_word, send.sctl, receive.xpic_configuration,
                           receive.dest_word, max(send.items, receive.total_events)))


@functools.lru_cache(maxsize=1 << 14)
def duplex_row(items: int, source_word: int, sctl: int, xpic: int, dest_word: int,
               total_events: int) -> tuple[isa.Instruction, ...]:
    """`duplex_instructions` from the fields it reads."""
    first = min(items, SENDPICP_MAX_WORDS)
    instrs: list[isa.Instruction] = [
        isa.SendPicP(first - 1, source_word, sctl, PIC_ABSOLUTE, xpic, dest_word)
    ]
    remaining = items - first
    while remaining > 0:
        chunk = min(remaining, SENDOFF_MAX_WORDS)
        instrs.append(isa.SendOff(chunk - 1, 0, sctl))
        remaining -= chunk
    return tuple(instrs + wait(total_events - items))


def wait(events: int) -> list[isa.Instruction]:
    """`delay`s for `events` events (none for 0)."""
    instrs: list[isa.Instruction] = []
    while events > 0:
        chunk = min(events, DELAY_MAX_EVENTS)
        instrs.append(isa.Delay(chunk - 1))
        events -= chunk
    return instrs


def receiver_instructions(phase: BroadcastPhase) -> list[isa.Instruction]:
    """Select source and pointer at event 0 (directionless `sendpicp`), then wait."""
    return list(receiver_row(phase.xpic_configuration, phase.dest_word, phase.total_events))


@functools.lru_cache(maxsize=1 << 14)
def receiver_row(xpic: int, dest_word: int, total_events: int) -> tuple[isa.Instruction, ...]:
    """`receiver_instructions` from the fields it reads."""
    return (isa.SendPicP(0, 0, 0, PIC_ABSOLUTE, xpic, dest_word), *wait(total_events - 1))


def checked_row(instrs: list[isa.Instruction], schedule: RowSchedule, base_address: int,
                what: str) -> np.ndarray:
    """Encode, decode and check a row against its schedule; return its words (read-only).

    Every failure here means the scheduler built a row (or a schedule) it should not have:
    the input was valid, so the diagnostic says it is a compiler bug. A row checked against
    the same schedule at the same address earlier in this process is not checked again (the
    check is a pure function of the three); its words are remembered for the package writer
    (`checked_words`).
    """
    key = (tuple(instrs), schedule_key(schedule), base_address)
    words = CHECKED_ROWS.get(key)
    if words is not None:
        return words
    try:
        encoded = isa.encode(instrs, base_address)
        decoded = isa.decode(encoded, base_address)
        check_row(decoded, schedule)
    except (isa.EncodeError, isa.DecodeError, TimelineError, ScheduleError,
            RowMismatch) as error:
        raise PassFailedException(internal_error(what, base_address, error)) from error
    words = np.asarray(encoded, dtype=np.uint32)
    words.setflags(write=False)
    remember(CHECKED_ROWS, key, words)
    if decoded == list(instrs):  # the checker's timeline is then the timeline of `instrs`
        remember(ENCODED_ROWS, (key[0], base_address), tuple(encoded))
    return words


def schedule_key(schedule: RowSchedule) -> tuple:
    return (schedule.total_events, tuple(schedule.sends), tuple(schedule.controls))


# Rows checked in this process since the last `forget_checked_rows` (each schedule-exchange
# run starts with it): (instructions, schedule, address) -> words, and (instructions,
# address) -> words for rows whose decoded instructions are the instructions themselves (so
# they have a well-defined timeline). Bounded: emptied when full.
CHECKED_ROWS: dict[tuple, np.ndarray] = {}
ENCODED_ROWS: dict[tuple, tuple[int, ...]] = {}
REMEMBERED_ROWS = 1 << 16


def remember(table: dict, key: tuple, value) -> None:
    if len(table) >= REMEMBERED_ROWS:
        table.clear()
    table[key] = value


def forget_checked_rows() -> None:
    """Empty what `checked_row` remembers (memory for one module's rows at a time)."""
    CHECKED_ROWS.clear()
    ENCODED_ROWS.clear()


def checked_words(instrs: list[isa.Instruction] | tuple[isa.Instruction, ...],
                  base_address: int) -> tuple[int, ...] | None:
    """`isa.encode(instrs, base_address)` of a row `checked_row` checked in this process (its
    timeline is well defined), or None."""
    return ENCODED_ROWS.get((tuple(instrs), base_address))


def internal_error(what: str, base_address: int, error: Exception) -> str:
    text = (f"schedule-exchange: internal compiler error (a bug in ipu-stack's exchange "
            f"scheduler, not in the input): the row for {what} at {base_address:#x} does not "
            f"match its schedule: {error}")
    if isinstance(error, RowMismatch):
        text += f" [row: {error.row}; schedule: {error.schedule}]"
    return text


def slot_stride(rows: list[list[isa.Instruction]]) -> int:
    """Bytes between the row slots of consecutive iterations of one exchange phase.

    Every iteration gets its own slot, so tile images hold all rows at once; the stride is
    the longest row, 8-byte aligned because a `sendpicp` must start on an 8-byte boundary.
    """
    longest = max((sum(i.words for i in row) for row in rows), default=0) * WORD_BYTES
    return -(-longest // isa.SENDPICP_ALIGNMENT) * isa.SENDPICP_ALIGNMENT


# ---- shared rows with per-iteration immediates ------------------------------------------
Patch = tuple[int, str]  # (instruction index, field name)


def structure(instrs: list[isa.Instruction]) -> tuple[str, ...]:
    """Rows with the same instruction sequence can share one row and differ by patches."""
    return tuple(type(i).__name__ for i in instrs)


def varying_fields(variants: list[list[isa.Instruction]]) -> list[Patch]:
    """Fields whose value differs between rows of one structure, in instruction order."""
    first = variants[0]
    patches = []
    for index, instr in enumerate(first):
        for f in fields(instr):
            if any(getattr(v[index], f.name) != getattr(instr, f.name) for v in variants[1:]):
                patches.append((index, f.name))
    return patches


def instantiate(template: list[isa.Instruction],
                values: list[tuple[int, str, int]]) -> list[isa.Instruction]:
    """The concrete row of one iteration: the template with its patched fields replaced."""
    instrs = list(template)
    for index, name, value in values:
        instrs[index] = with_field(instrs[index], name, value)
    return instrs


def with_field(instr: isa.Instruction, name: str, value: int) -> isa.Instruction:
    """`instr` with one field replaced (a new instruction: they are frozen)."""
    names = field_names(type(instr))
    if name not in names:  # not a field: the constructor's own TypeError, as before
        changed = {f.name: getattr(instr, f.name) for f in fields(instr)}
        changed[name] = value
        return type(instr)(**changed)
    return type(instr)(*(value if n == name else getattr(instr, n) for n in names))


def field_names(cls: type) -> tuple[str, ...]:
    """The fields of an instruction class, in constructor order."""
    if cls not in FIELD_NAMES:
        FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return FIELD_NAMES[cls]


FIELD_NAMES: dict[type, tuple[str, ...]] = {}


# ---- where row slots go --------------------------------------------------------------------
def free_row_ranges(taken: list[tuple[int, int]], busy: frozenset[int],
                    target: Target) -> list[list[int]]:
    """[start, end) ranges row slots may use, in allocation order: the code region, then the
    standard memory that no buffer occupies (`taken`: sorted [start, end) of the placed
    buffers), outside every memory element in `busy` (those an exchange sends from or
    receives into: no row's fetch may contend with them). Code lives in non-interleaved
    memory ([C] ipu21-facts): the interleaved region is never used."""
    ranges = [list(target.code_region)]
    cursor = target.code_region[1]
    last = target.row_memory[1]  # past every buffer: the free memory after the last one
    for start, end in [*taken, (last, last)]:
        for element in target.memory_elements:
            lo, hi = max(cursor, element.start), min(start, element.end)
            if lo < hi and not element.interleaved and element.index not in busy:
                if len(ranges) > 1 and ranges[-1][1] == lo:  # the next element: one range
                    ranges[-1][1] = hi
                else:
                    ranges.append([lo, hi])
        cursor = max(cursor, end)
    return ranges


def take_row_range(ranges: list[list[int]], nbytes: int) -> int | None:
    """Bump-allocate `nbytes` of row slots (8-byte aligned for `sendpicp`) from the first
    range with room; None when none has."""
    for free in ranges:
        address = -(-free[0] // isa.SENDPICP_ALIGNMENT) * isa.SENDPICP_ALIGNMENT
        if address + nbytes <= free[1]:
            free[0] = address + nbytes
            return address
    return None
