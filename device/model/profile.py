"""A cycle profile of one run: the modeled cycles of each step, summed per piece of work.

Every package step carries the provenance of the work it does (graph op, value, reason, and
the loop iteration in brackets). The profile groups steps by what they do, with the
iteration dropped, so a GEMM's hundred rhs broadcasts are one line. It is what
`profiling = cycles` in the pipeline configuration asks `ipu-run` to print.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from device.package import ExchangeStep, KernelStep, Package, executed_count

_ITERATION = re.compile(r"\s*\[[^\]]*\]\s*$")


@dataclass(frozen=True)
class ProfileLine:
    kind: str  # "exchange" (sync + exchange events) or the kernel symbol
    work: str  # the provenance without its iteration
    steps: int
    cycles: int


def step_kind(step: ExchangeStep | KernelStep) -> str:
    return "exchange" if isinstance(step, ExchangeStep) else step.symbol


def cycle_profile(package: Package, cycles_by_step: list[int]) -> list[ProfileLine]:
    """Lines by descending cycles; their cycles add up to the run's total."""
    executed = executed_count(package.steps)
    if len(cycles_by_step) != executed:
        raise ValueError(
            f"{len(cycles_by_step)} step cycle counts for a package of {executed} steps"
        )
    totals: dict[tuple[str, str], list[int]] = {}
    for step, cycles in zip(package.executed(), cycles_by_step, strict=True):
        key = (step_kind(step), _ITERATION.sub("", step.provenance))
        entry = totals.setdefault(key, [0, 0])
        entry[0] += 1
        entry[1] += cycles
    lines = [ProfileLine(kind, work, steps, cycles) for (kind, work), (steps, cycles) in totals.items()]
    return sorted(lines, key=lambda line: (-line.cycles, line.kind, line.work))


def format_profile(lines: list[ProfileLine]) -> str:
    total = sum(line.cycles for line in lines) or 1
    rows = [f"{'cycles':>12} {'share':>6} {'steps':>6}  {'kind':<20} work"]
    for line in lines:
        rows.append(
            f"{line.cycles:>12} {100 * line.cycles / total:>5.1f}% {line.steps:>6}  "
            f"{line.kind:<20} {line.work}"
        )
    return "\n".join(rows)
