"""Why no candidate plan of an op is valid, as one diagnostic: a lead sentence, then each
candidate's reason (candidates failing for the same reason named together, in catalog order).

A reason is a plain string; one that says a plan's buffers do not fit tile memory is a
`MemoryReason`, which may also know the fewest tiles on which the plan would fit. The lead
says what does not fit and the smallest tile count that helps (issue 26, "diagnostics that
help"), so that a user need not read every candidate's detail to know what to change.

`NoValidPlan` is the exception of every selector (the operators' `cheapest`, the GEMM
layouts' `select_gemm_plan`) when no candidate is valid, with that diagnostic as its message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ipu_dialects.mid import OperatorPlanAttr

NO_PLAN = "no valid operator plan"


class Judged(Protocol):
    """A candidate plan as a selector judged it: an operator's `Candidate`, a GEMM
    layout's `Evaluation`."""

    @property
    def plan(self) -> OperatorPlanAttr: ...

    @property
    def reason(self) -> str | None: ...  # None: valid


class NoValidPlan(Exception):
    """Every candidate of an op is invalid; the message names each one's reason (by the
    candidate name its plan carries)."""

    def __init__(self, candidates: Sequence[Judged]):
        self.candidates = tuple(candidates)
        super().__init__(no_plan_message([(c.plan.candidate.data, c.reason)
                                          for c in self.candidates]))


class MemoryReason(str):
    """A reason saying that a plan's buffers do not fit tile memory. `fewest_tiles`: the
    fewest tiles on which the plan would fit, when that was searched for; `no_tile_count`:
    searched, and no tile count of the target helps."""

    fewest_tiles: int | None
    no_tile_count: bool

    def __new__(cls, text: str, fewest_tiles: int | None = None,
                no_tile_count: bool = False) -> MemoryReason:
        reason = super().__new__(cls, text)
        reason.fewest_tiles = fewest_tiles
        reason.no_tile_count = no_tile_count
        return reason


def no_plan_message(reasons: Sequence[tuple[str, str | None]]) -> str:
    """The diagnostic for candidates (name, reason) none of which is valid."""
    grouped: dict[str, list[str]] = {}
    for name, reason in reasons:
        grouped.setdefault(reason or "", []).append(name)
    detail = "; ".join(f"{', '.join(names)}: {reason}" for reason, names in grouped.items())
    if not detail:
        return f"{NO_PLAN}: the operator catalog is empty"
    lead = memory_lead(reasons)
    return f"{NO_PLAN}: {detail}" if lead is None else f"{NO_PLAN}: {lead}. Per candidate: {detail}"


def memory_lead(reasons: Sequence[tuple[str, str | None]]) -> str | None:
    """The lead sentence when some candidate was refused for want of tile memory (None: no
    memory reason, and the reasons are the message)."""
    memory = [(name, r) for name, r in reasons if isinstance(r, MemoryReason)]
    if not memory:
        return None
    others = len(reasons) - len(memory)
    which = ("no candidate" if not others
             else f"none of the {len(memory)} candidate(s) that could run it")
    lead = f"{which} fits in tile memory"
    helped = [(r.fewest_tiles, name) for name, r in memory if r.fewest_tiles is not None]
    if helped:
        fewest, name = min(helped, key=lambda pair: pair[0])  # the first in catalog order
        return f"{lead}; the fewest tiles that help: {fewest} ({name})"
    if all(r.no_tile_count for _, r in memory):
        return f"{lead}, on any tile count"
    return lead
