"""The row checker (the spec's `ipu_exchange::diagnostic`).

`check_row` decodes a row (or takes its instructions), builds its event timeline and compares
it, event by event, with the declarative schedule the phase builder meant to implement. The
first disagreement raises `RowMismatch`, naming the event, what the row does and what the
schedule expects. `RowMismatch` is an xDSL `DiagnosticException`, so a pass may let it escape
and `--verify-diagnostics` shows it.

Kinds (`RowMismatch.kind`):
`source-address`, `restart-needed` (a continuing `sendoff`/`sendpic` reads the wrong word
where the schedule needs an absolute restart: `send` or a transmitting `sendpicp`),
`direction`, `extra-send`, `missing-send`, `control-early`, `control-late`, `control-value`,
`extra-control`, `missing-control`, `length`.

The schedule itself must be consistent (`validate_schedule`): every send interval and control
inside `[0, total_events)`, send intervals non-empty, with a direction, and disjoint; at most
one control of each kind per event. An inconsistent schedule is a `ScheduleError`, never a
comparison against garbage.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from xdsl.utils.exceptions import DiagnosticException

from device.exchange_timeline import (
    ControlEvent,
    RowTimeline,
    SendInterval,
    event_arrays,
    row_timeline,
)
from device.isa import SCTL_64BIT, SCTL_DIRECTION_MASK, format_instruction, is_integer


class RowMismatch(DiagnosticException):
    def __init__(self, event: int, kind: str, message: str, row: str = "", schedule: str = ""):
        self.event = event
        self.kind = kind
        self.row = row
        self.schedule = schedule
        super().__init__(f"event {event}: {message}")


class ScheduleError(DiagnosticException, ValueError):
    """The declared schedule contradicts itself (it cannot describe any row)."""


@dataclass
class RowSchedule:
    """What a row must do: its length, its send intervals, its incoming controls."""

    total_events: int
    sends: list[SendInterval] = field(default_factory=list)
    controls: list[ControlEvent] = field(default_factory=list)

    def as_timeline(self) -> RowTimeline:
        return RowTimeline(self.total_events, list(self.sends), list(self.controls))


def _describe_send(send: SendInterval) -> str:
    return (f"send interval [{send.start_event}, {send.end_event}) of "
            f"{send.words} word(s) from {send.address:#x} with sctl {send.sctl}")


def _schedule_problems(schedule: RowSchedule):
    """Yield a description of every inconsistency of `schedule`."""
    total = schedule.total_events
    if not is_integer(total) or total < 0:
        yield f"total_events {total!r} is not a non-negative integer"
        return
    for send in schedule.sends:
        values = (send.start_event, send.words, send.address, send.sctl)
        if not all(is_integer(v) for v in values):
            yield f"send interval {send} has a non-integer field"
        elif send.words < 1 or send.start_event < 0 or send.address < 0:
            yield f"{_describe_send(send)} is empty or starts before event 0 / word 0"
        elif send.words % send.width or send.address % send.width:
            yield f"{_describe_send(send)} is not whole, aligned 64-bit items"
        elif send.end_event > total:
            yield f"{_describe_send(send)} ends after the schedule's {total} events"
        elif not _direction(send.sctl):
            yield f"{_describe_send(send)} has no direction (sctl & 3 == 0), so sends nothing"
    ordered = sorted((s for s in schedule.sends if all(is_integer(v) for v in
                      (s.start_event, s.words))), key=lambda s: s.start_event)
    for first, second in zip(ordered, ordered[1:]):
        if second.start_event < first.end_event:
            yield f"{_describe_send(first)} overlaps {_describe_send(second)}"
    seen: dict[tuple[int, str], ControlEvent] = {}
    for control in schedule.controls:
        if control.kind not in ("pic", "xpic"):
            yield f"control {control} has kind {control.kind!r}, not 'pic' or 'xpic'"
        elif not all(is_integer(v) for v in (control.event, control.selector, control.value)):
            yield f"control {control} has a non-integer field"
        elif not 0 <= control.event < total:
            yield (f"{_describe_control(control)} at event {control.event} is outside the "
                   f"schedule's {total} events")
        elif (control.event, control.kind) in seen:
            yield (f"two {control.kind.upper()} controls at event {control.event}: "
                   f"{_describe_control(seen[control.event, control.kind])} and "
                   f"{_describe_control(control)}")
        else:
            seen[control.event, control.kind] = control


def validate_schedule(schedule: RowSchedule) -> None:
    """Raise `ScheduleError` naming the first inconsistency of `schedule`."""
    for problem in _schedule_problems(schedule):
        raise ScheduleError(f"inconsistent row schedule: {problem}")


def _describe_control(control: ControlEvent) -> str:
    value = f"{control.value}" if control.kind == "xpic" else f"{control.value:#x}"
    return f"{control.kind.upper()}={value}" + (
        f" (selector {control.selector})" if control.selector else ""
    )


def _direction(sctl: int) -> int:
    return int(sctl) & SCTL_DIRECTION_MASK


SENT_SCTL_BITS = SCTL_DIRECTION_MASK | SCTL_64BIT  # what a sent word's route and width depend on


def _controls_by_event(controls: list[ControlEvent]) -> dict[int, list[ControlEvent]]:
    by_event: dict[int, list[ControlEvent]] = defaultdict(list)
    for control in controls:
        by_event[control.event].append(control)
    return by_event


def _first_send_difference(row: RowTimeline, schedule: RowSchedule, limit: int) -> int | None:
    row_arrays = event_arrays(row)
    sched_arrays = event_arrays(schedule.as_timeline())
    n = min(limit, row.total_events, schedule.total_events)
    row_src, sched_src = row_arrays.source[:n], sched_arrays.source[:n]
    row_dir = row_arrays.sctl[:n].astype(np.int64) & SENT_SCTL_BITS
    sched_dir = sched_arrays.sctl[:n].astype(np.int64) & SENT_SCTL_BITS
    differs = (row_src != sched_src) | (row_dir != sched_dir)
    hits = np.flatnonzero(differs)
    return int(hits[0]) if hits.size else None


def _send_mismatch(row: RowTimeline, schedule: RowSchedule, event: int) -> RowMismatch:
    row_arrays = event_arrays(row)
    sched_arrays = event_arrays(schedule.as_timeline())
    row_src, sched_src = int(row_arrays.source[event]), int(sched_arrays.source[event])
    row_dir, sched_dir = _direction(row_arrays.sctl[event]), _direction(sched_arrays.sctl[event])
    position = row.instruction_at(event)
    instr_text = format_instruction(row.instructions[position]) if position is not None else "?"
    row_side = f"{instr_text}: " + (
        f"sends word {row_src:#x} in direction {row_dir}" if row_src >= 0 else "sends nothing"
    )
    sched_side = (
        f"word {sched_src:#x} in direction {sched_dir}" if sched_src >= 0 else "nothing sent"
    )
    if row_src < 0:
        return RowMismatch(event, "missing-send",
                           f"row ({instr_text}) sends nothing but the schedule sends word "
                           f"{sched_src:#x} in direction {sched_dir}", row_side, sched_side)
    if sched_src < 0:
        return RowMismatch(event, "extra-send",
                           f"row ({instr_text}) sends word {row_src:#x} in direction {row_dir} "
                           f"but the schedule sends nothing", row_side, sched_side)
    if row_src != sched_src:
        span = row.spans[position] if position is not None else None
        if span is not None and span.continues_stream:
            return RowMismatch(event, "restart-needed",
                               f"row ({instr_text}) continues the outgoing stream at word "
                               f"{row_src:#x} but the schedule sends word {sched_src:#x}: a "
                               f"restart from an absolute address (sendpicp or send) was needed",
                               row_side, sched_side)
        return RowMismatch(event, "source-address",
                           f"row ({instr_text}) sends source word {row_src:#x} but the schedule "
                           f"sends word {sched_src:#x}", row_side, sched_side)
    if row_dir == sched_dir:
        row_bits, sched_bits = (64 if int(a.sctl[event]) & SCTL_64BIT else 32
                                for a in (row_arrays, sched_arrays))
        return RowMismatch(event, "item-width",
                           f"row ({instr_text}) sends word {row_src:#x} as a {row_bits}-bit item "
                           f"but the schedule sends a {sched_bits}-bit item", row_side, sched_side)
    return RowMismatch(event, "direction",
                       f"row ({instr_text}) sends word {row_src:#x} in direction {row_dir} but "
                       f"the schedule sends it in direction {sched_dir}", row_side, sched_side)


def _nearest(controls: list[ControlEvent], want: ControlEvent, same_value: bool) -> ControlEvent | None:
    candidates = [
        c for c in controls
        if c.kind == want.kind and c.selector == want.selector and (c.value == want.value) == same_value
    ]
    return min(candidates, key=lambda c: abs(c.event - want.event), default=None)


def _control_mismatch(
    event: int,
    row_only: list[ControlEvent],
    sched_only: list[ControlEvent],
    row: RowTimeline,
    schedule: RowSchedule,
) -> RowMismatch:
    if row_only:
        have = row_only[0]
        text = _describe_control(have)
        row_side = f"sets {text} at event {event}"
        same_event = [c for c in sched_only if c.kind == have.kind and c.selector == have.selector]
        if same_event:
            want = same_event[0]
            return RowMismatch(event, "control-value",
                               f"row sets {text} but the schedule expects "
                               f"{_describe_control(want)}", row_side,
                               f"{_describe_control(want)} at event {event}")
        moved = _nearest([c for c in schedule.controls if c not in row.controls], have, True)
        if moved is not None:
            kind = "control-late" if moved.event < event else "control-early"
            delta = abs(moved.event - event)
            return RowMismatch(event, kind,
                               f"row sets {text} but the schedule expects it at event "
                               f"{moved.event} ({delta} event{'s' if delta != 1 else ''} "
                               f"{'late' if kind == 'control-late' else 'early'})",
                               row_side, f"{text} at event {moved.event}")
        return RowMismatch(event, "extra-control",
                           f"row sets {text} but the schedule expects no such control",
                           row_side, "no control")
    want = sched_only[0]
    text = _describe_control(want)
    moved = _nearest([c for c in row.controls if c not in schedule.controls], want, True)
    if moved is not None:
        kind = "control-late" if moved.event > event else "control-early"
        delta = abs(moved.event - event)
        return RowMismatch(event, kind,
                           f"schedule expects {text} but the row sets it at event {moved.event} "
                           f"({delta} event{'s' if delta != 1 else ''} "
                           f"{'late' if kind == 'control-late' else 'early'})",
                           f"{text} at event {moved.event}", f"{text} at event {event}")
    return RowMismatch(event, "missing-control",
                       f"schedule expects {text} but the row sets no such control",
                       "no control", f"{text} at event {event}")


def _first_control_difference(row: RowTimeline, schedule: RowSchedule):
    row_by_event = _controls_by_event(row.controls)
    sched_by_event = _controls_by_event(schedule.controls)
    for event in sorted(set(row_by_event) | set(sched_by_event)):
        have, want = list(row_by_event.get(event, [])), list(sched_by_event.get(event, []))
        row_only = [c for c in have if c not in want]
        sched_only = [c for c in want if c not in have]
        if row_only or sched_only:
            return event, row_only, sched_only
    return None


def _length_mismatch(row: RowTimeline, schedule: RowSchedule) -> RowMismatch:
    event = min(row.total_events, schedule.total_events)
    return RowMismatch(event, "length",
                       f"row spans {row.total_events} events but the schedule spans "
                       f"{schedule.total_events}",
                       f"{row.total_events} events", f"{schedule.total_events} events")


def find_mismatch(
    instrs_or_words, schedule: RowSchedule, base_address: int = 0
) -> RowMismatch | None:
    """The first disagreement between a row and its schedule, or None.

    Raises `ScheduleError` when the schedule is inconsistent in itself.
    """
    validate_schedule(schedule)
    row = row_timeline(instrs_or_words, base_address)
    if _same_events(row, schedule):  # the common case, without per-event arrays
        return None
    candidates: list[tuple[int, int, RowMismatch]] = []
    horizon = max(row.total_events, schedule.total_events)
    send_event = _first_send_difference(row, schedule, horizon)
    if send_event is not None:
        candidates.append((send_event, 0, _send_mismatch(row, schedule, send_event)))
    control = _first_control_difference(row, schedule)
    if control is not None:
        event, row_only, sched_only = control
        candidates.append((event, 1, _control_mismatch(event, row_only, sched_only, row, schedule)))
    if row.total_events != schedule.total_events:
        candidates.append((min(row.total_events, schedule.total_events), 2,
                           _length_mismatch(row, schedule)))
    if not candidates:
        return None
    return min(candidates, key=lambda item: (item[0], item[1]))[2]


def _same_events(row: RowTimeline, schedule: RowSchedule) -> bool:
    """Whether the row does exactly what the schedule says: the same length, the same words
    sent at the same events (however the instructions split the stream) and the same
    controls."""
    return (row.total_events == schedule.total_events
            and _stream_runs(row.sends) == _stream_runs(schedule.sends)
            and sorted(row.controls, key=_control_key)
            == sorted(schedule.controls, key=_control_key))


def _control_key(control: ControlEvent) -> tuple:
    return (control.event, control.kind, control.selector, control.value)


def _stream_runs(sends: list[SendInterval]) -> list[tuple[int, int, int, int]]:
    """Send intervals merged where one continues the other (next event, next word, same
    sctl): (start event, words, first word address, sent sctl bits)."""
    runs: list[list[int]] = []
    for send in sorted(sends, key=lambda s: s.start_event):
        bits = send.sctl & SENT_SCTL_BITS
        if runs and runs[-1][3] == bits and runs[-1][0] + runs[-1][1] // send.width == \
                send.start_event and runs[-1][2] + runs[-1][1] == send.address:
            runs[-1][1] += send.words
        else:
            runs.append([send.start_event, send.words, send.address, bits])
    return [(a, b, c, d) for a, b, c, d in runs]


def check_row(instrs_or_words, schedule: RowSchedule, base_address: int = 0) -> None:
    """Raise `RowMismatch` at the first event where the row and its schedule disagree.

    Raw words are decoded as placed at byte address `base_address` (a `DecodeError`, a
    `TimelineError` or a `ScheduleError` escapes as is: all are diagnostics too).
    """
    mismatch = find_mismatch(instrs_or_words, schedule, base_address)
    if mismatch is not None:
        raise mismatch
