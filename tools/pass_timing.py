"""Wall time of each pass of a pipeline, with the stages of a pipeline pass (`ipu-pipeline`)
timed one by one under it.

`PassTimer.pipeline(passes)` flattens pipeline passes into their stages (a pass with a
`stage_passes()` method) and returns an xDSL `PassPipeline` whose callback times each stage
and verifies the module after it, as `ipu-pipeline` itself does (the verification counts
in the pass's time). `spans` then holds one `PassSpan` per pass run (`grouped()` adds one
per pipeline pass covering its stages); `report()` is the MLIR-style `--time-passes` table,
and `ipu-run` puts the spans in its JSON and trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline


@dataclass(frozen=True)
class PassSpan:
    name: str  # the pass name, e.g. "graph-to-mid"
    parent: str | None  # the pipeline pass it ran inside, e.g. "ipu-pipeline"
    start: float  # seconds since the timer was made
    seconds: float
    run: int = 0  # position of the top-level pass it belongs to in its pipeline


def flatten(passes: Sequence[ModulePass]) -> list[tuple[ModulePass, str | None, int]]:
    """Each pass with the pipeline pass it belongs to (None at top level) and that pipeline
    pass's position."""
    flat: list[tuple[ModulePass, str | None, int]] = []
    for run, module_pass in enumerate(passes):
        stages = getattr(module_pass, "stage_passes", None)
        if callable(stages):
            flat.extend((stage, module_pass.name, run) for stage in stages())
        else:
            flat.append((module_pass, None, run))
    return flat


@dataclass
class PassTimer:
    verify: bool = True
    between: Callable[[ModulePass, ModuleOp], None] | None = None  # e.g. print the IR
    spans: list[PassSpan] = field(default_factory=list)
    origin: float = field(default_factory=time.perf_counter)
    _parents: dict[int, tuple[str | None, int]] = field(default_factory=dict)
    _started: float = 0.0

    def pipeline(self, passes: Sequence[ModulePass]) -> PassPipeline:
        flat = flatten(passes)
        self._parents = {id(p): (parent, run) for p, parent, run in flat}
        return PassPipeline(tuple(p for p, _, _ in flat), self.callback)

    def adopt(self, stages: Sequence[ModulePass], parent: str) -> None:
        """Time `stages`, run by the caller through `callback`, as stages of the pipeline pass
        `parent` (a pipeline that runs some stages again, such as `ipu-pipeline`'s fallbacks)."""
        self._parents.update({id(stage): (parent, 0) for stage in stages})

    def callback(self, previous: ModulePass | None, module: ModuleOp,
                 upcoming: ModulePass | None) -> None:
        if previous is not None and self.verify:  # a broken stage is caught where it broke
            module.verify()
        if previous is not None:  # a pass's time includes verifying what it produced
            parent, run = self._parents.get(id(previous), (None, 0))
            self.add(previous.name, parent, self._started, time.perf_counter(), run)
        if previous is not None and upcoming is not None and self.between is not None:
            self.between(previous, module)
        self._started = time.perf_counter()

    def add(self, name: str, parent: str | None, started: float, ended: float,
            run: int = 0) -> None:
        self.spans.append(PassSpan(name, parent, started - self.origin, ended - started, run))

    def grouped(self) -> list[PassSpan]:
        """The spans with one span per pipeline pass run before its stages (a run of
        consecutive stages with the same parent), in order."""
        shown: list[PassSpan] = []
        index = 0
        while index < len(self.spans):
            span = self.spans[index]
            if span.parent is None:
                shown.append(span)
                index += 1
                continue
            end = index
            while end < len(self.spans) and (self.spans[end].parent, self.spans[end].run) == (
                    span.parent, span.run):
                end += 1
            stages = self.spans[index:end]
            last = stages[-1]
            shown.append(PassSpan(span.parent, None, span.start,
                                  last.start + last.seconds - span.start))
            shown.extend(stages)
            index = end
        return shown

    def time(self, name: str, work: Callable[[], object]) -> object:
        """Run `work` as a top-level span named `name` (e.g. building the package)."""
        started = time.perf_counter()
        try:
            return work()
        finally:
            self.add(name, None, started, time.perf_counter())

    def per_pass(self) -> dict[str, float]:
        """Seconds by pass name, top-level spans and stages alike ("ipu-pipeline/mid-to-tile")."""
        totals: dict[str, float] = {}
        for span in self.grouped():
            key = f"{span.parent}/{span.name}" if span.parent else span.name
            totals[key] = totals.get(key, 0.0) + span.seconds
        return totals

    def report(self) -> str:
        """MLIR's `--mlir-timing` layout: total, then each pass, stages indented under their
        pipeline."""
        spans = self.grouped()
        total = sum(s.seconds for s in spans if s.parent is None)
        rule = "===" + "-" * 73 + "==="
        lines = [rule, "ipu-opt: execution time report".center(len(rule)).rstrip(), rule,
                 f"  Total Execution Time: {total:.4f} seconds", "",
                 "  ----Wall Time----  ----Name----"]
        for span in spans:
            share = 100 * span.seconds / total if total else 0.0
            indent = "    " if span.parent else "  "
            lines.append(f"  {span.seconds:8.4f} ({share:5.1f}%){indent}{span.name}")
        lines.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(lines)
