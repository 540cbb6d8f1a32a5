"""Choosing a GEMM plan: every catalog entry built by its layout, validated, costed; the
cheapest valid one wins.

`graph-to-mid` calls `select_gemm_plan`. The layouts are strategies keyed by their dispatch
kind (`LAYOUTS`; the protocol is `planning/gemm_layout.py`): for each enabled catalog entry
(`planning/gemm_problem.py`) its layout cuts the operands (`build_gemm_plan`), the rules every
GEMM plan obeys validate the plan (`check_plan`, beside the protocol), and the layout charges
the cycles the device model charges for its tile work (`estimate_cycles`, computed with the
model's own cycle functions, `device/model/cycles.py`; a test holds them equal to modeled
runs); the cheapest wins (the first in catalog order on ties). When none is valid,
`NoValidPlan` names every candidate's reason, and a candidate that does not fit tile memory
says whether more tiles would help.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from device.target import Target
from ipu_dialects.mid import DispatchKind, Indivisible, OperatorPlanAttr
from planning.gemm_fold import (
    batch_fold,
    folded_problem,
    plan_fold,
    refit_fold,
    refold_plan,
    unfold_plan,
)
from planning.gemm_grid import GridLayout
from planning.gemm_grid3d import Grid3DLayout
from planning.gemm_ksplit import KSplitLayout
from planning.gemm_layout import CycleBreakdown, GemmLayout, OperandCuts, assemble_plan, check_plan
from planning.gemm_memory import DoesNotFit
from planning.gemm_problem import (
    CATALOG,
    GemmCandidate,
    GemmProblem,
    InvalidPlan,
    catalog_entries,
    effective_plan,
)
from planning.gemm_rows import RowsLayout
from planning.plan_reasons import MemoryReason, NoValidPlan
from planning.target_memo import TargetMemo

# The GEMM layouts, in the order diagnostics name them. A new layout is one more strategy
# here, its catalog entries and its lowering (`passes/operators/gemm.py`, `LOWERINGS`).
LAYOUTS: dict[DispatchKind, GemmLayout] = {
    layout.dispatch: layout for layout in (RowsLayout(), GridLayout(), KSplitLayout(), Grid3DLayout())
}


def layout_of(plan: OperatorPlanAttr) -> GemmLayout | None:
    """The strategy of the plan's dispatch kind (None: no GEMM layout has it)."""
    return LAYOUTS.get(plan.dispatch.kind.data)


def replicates_an_operand(name: str) -> bool:
    """Whether the catalog entry stores an operand more than once (the K-split's B): the
    entries a program that runs out of memory falls back without (`ipu-pipeline`)."""
    return any(c.name == name and LAYOUTS[c.dispatch].replicates_an_operand for c in CATALOG)


def build_gemm_plan(
    candidate: GemmCandidate, problem: GemmProblem, tiles: int, indivisible: str, target: Target,
    cuts: OperandCuts | None = None,
) -> OperatorPlanAttr:
    """The complete plan of `candidate` for `problem` (not yet validated), with `cuts`
    (default: its layout's `cuts`)."""
    return assemble_plan(LAYOUTS[candidate.dispatch], candidate, problem, tiles, indivisible,
                         target, cuts)


# A fold whose plan puts rows of two slices on one tile is padded to that plan's rows per tile
# and planned again (the layout may then choose other rows per tile): this many times at most.
# `row_slices` does not make this dead: the K-split of 4 slices of 40 rows on 4 tiles still
# puts two 48-row slices on a tile and folds only once refitted to 96 (`test_gemm_fold`).
FOLD_ATTEMPTS = 3
PlannedAs = tuple[OperatorPlanAttr, GemmProblem, OperatorPlanAttr]


def candidate_plans(
    candidate: GemmCandidate, problem: GemmProblem, tiles: int, indivisible: str, target: Target,
    every_cut: bool = False,
) -> list[PlannedAs]:
    """Each way `candidate` may run the op, as (the op's plan, the problem its layout plans,
    the plan in that problem's terms): a foldable batched GEMM as its fold
    (`planning/gemm_fold.py`) when the batched operands can hold the folded plan, then slice
    by slice; any other GEMM as itself. With the layout's best cut only, or with
    `every_cut` each of its `cut_options` (the best first)."""
    layout = LAYOUTS[candidate.dispatch]

    def cuts_of(planned: GemmProblem) -> list[OperandCuts | None]:
        if not every_cut:
            return [None]
        return list(layout.cut_options(candidate, planned, tiles, target))

    options: list[PlannedAs] = []
    fold = batch_fold(problem, candidate.row_block)
    for _ in range(FOLD_ATTEMPTS):
        if fold is None:
            break
        planned = folded_problem(problem, fold)
        folded = build_gemm_plan(candidate, planned, tiles, indivisible, target)
        batched = unfold_plan(folded, problem, fold)
        if batched is not None:
            options.append((batched, planned, folded))
            for cuts in cuts_of(planned)[1:]:
                other = build_gemm_plan(candidate, planned, tiles, indivisible, target, cuts)
                unfolded = unfold_plan(other, problem, fold)
                if unfolded is not None:
                    options.append((unfolded, planned, other))
            break
        fold = refit_fold(fold, folded, problem.lhs_shape[-2])
    for cuts in cuts_of(problem):
        plan = build_gemm_plan(candidate, problem, tiles, indivisible, target, cuts)
        options.append((plan, problem, plan))
    return options


def validation_failure(
    plan: OperatorPlanAttr, problem: GemmProblem, tiles: int, target: Target
) -> InvalidPlan | None:
    try:
        check_plan(plan, problem, tiles, target, layout_of(plan))
    except InvalidPlan as reason:
        return reason
    return None


def validate_gemm_plan(
    plan: OperatorPlanAttr, problem: GemmProblem, tiles: int, target: Target
) -> str | None:
    """None if `plan` can run `problem` on `tiles` tiles, else the reason it cannot."""
    failure = validation_failure(plan, problem, tiles, target)
    return None if failure is None else str(failure)


# ----------------------------------------------------------------------------------------------
# Cost model: the device model's cycles
# ----------------------------------------------------------------------------------------------


def cycle_breakdown(
    plan: OperatorPlanAttr, problem: GemmProblem, tiles: int, target: Target
) -> CycleBreakdown:
    """The cycles the device model charges for the plan's tile work (`mid-to-tile`'s
    lowering of its layout), from the model's own cycle functions (`device.model.cycles`)."""
    layout = layout_of(plan)
    assert layout is not None  # a valid plan
    return layout.cycles(effective_plan(plan), problem.effective(), tiles, target)


def estimate_cycles(
    plan: OperatorPlanAttr, problem: GemmProblem, tiles: int, target: Target
) -> int:
    """Modeled cycles of the plan (`cycle_breakdown`): equal to what the device model
    charges for the package `mid-to-tile` builds from it."""
    return cycle_breakdown(plan, problem, tiles, target).total


# ----------------------------------------------------------------------------------------------
# Selection
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Evaluation:
    candidate: GemmCandidate
    plan: OperatorPlanAttr  # the op's
    reason: str | None  # None: valid
    cycles: int | None  # only for valid plans
    planned: GemmProblem  # what the layout planned: the op's problem, or its fold
    layout_plan: OperatorPlanAttr  # `plan` in `planned`'s terms
    conversions: int = 0  # what bringing the operands into the plan's formats costs (`priced`)

    @property
    def total_cycles(self) -> int:
        """The plan's own cycles and its operands' conversions: what selection compares."""
        assert self.cycles is not None  # valid evaluations are costed
        return self.cycles + self.conversions


# What the operands' conversions into a plan's formats cost, from the program around the op
# (`passes/operators/gemm.py`); with it, selection costs every cut of each layout.
Priced = Callable[[OperatorPlanAttr], int]


def evaluate_candidates(
    problem: GemmProblem,
    tiles: int,
    indivisible: str,
    target: Target,
    catalog: Sequence[GemmCandidate] | None = None,
    priced: Priced | None = None,
    fits: Callable[[Evaluation], bool] | None = None,
    priced_key: Hashable | None = None,
) -> list[Evaluation]:
    """Build, validate and (when valid) cost every catalog entry (default: the default
    catalog, `catalog_entries(None)`), in catalog order (`evaluate_candidate`)."""
    return [evaluate_candidate(candidate, problem, tiles, indivisible, target, priced, fits,
                               priced_key)
            for candidate in (catalog_entries(None) if catalog is None else catalog)]


def evaluate_candidate(candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                       indivisible: str, target: Target, priced: Priced | None = None,
                       fits: Callable[[Evaluation], bool] | None = None,
                       priced_key: Hashable | None = None) -> Evaluation:
    """The cheapest valid way the candidate runs the op (`candidate_plans`, the first on
    ties), of those that `fit` when any does, or when none is valid the first way and why it
    is not. With `priced`, every cut of the layout, each costed with its operands'
    conversions; `priced_key`, when given, names what `priced` depends on (the operands'
    types), and the costed ways are then computed once per key (`costed_options`)."""
    if priced is not None and priced_key is not None:
        options = costed_once(candidate, problem, tiles, indivisible, target, priced,
                              priced_key)
    else:
        options = costed_options(candidate, problem, tiles, indivisible, target, priced)
    if options[0].reason is not None:
        return options[0]
    fitting = [e for e in options if fits(e)] if fits is not None else options
    return min(fitting or options, key=lambda e: e.total_cycles)  # the first of equal costs


# `costed_options` of a candidate, problem and priced operands: graph-to-mid selects a GEMM
# again when it lowers a function twice (`lower_spread_if_no_costlier`) and looks ahead
COSTED: TargetMemo[list[Evaluation]] = TargetMemo(1024)


def costed_once(candidate: GemmCandidate, problem: GemmProblem, tiles: int, indivisible: str,
                target: Target, priced: Priced, priced_key: Hashable) -> list[Evaluation]:
    """`costed_options`, computed once per `priced_key` (what `priced` depends on)."""
    return COSTED.get((candidate, problem, tiles, indivisible, priced_key), target,
                      lambda: costed_options(candidate, problem, tiles, indivisible, target,
                                             priced))


def costed_options(candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                   indivisible: str, target: Target,
                   priced: Priced | None = None) -> list[Evaluation]:
    """Each valid way the candidate runs the op, costed (with `priced`, every cut), or when
    none is valid the first way and why it is not."""
    every_cut = priced is not None
    options = UNPRICED.get((candidate, problem, tiles, indivisible, every_cut), target,
                           lambda: unpriced_options(candidate, problem, tiles, indivisible,
                                                    target, every_cut))
    if priced is None or options[0].reason is not None:
        return options
    return [dataclasses.replace(e, conversions=priced(e.plan)) for e in options]


# `unpriced_options` by candidate, problem, tiles, indivisible, target and every_cut: the
# selection of a GEMM and the look-ahead of its producers (`LookAhead.gemm_extra_cycles`)
# cost the same cuts
UNPRICED: TargetMemo[list[Evaluation]] = TargetMemo(1024)


def unpriced_options(candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                     indivisible: str, target: Target, every_cut: bool) -> list[Evaluation]:
    """`costed_options` before its operands' conversions are priced (each 0)."""
    options = candidate_plans(candidate, problem, tiles, indivisible, target,
                              every_cut=every_cut)
    failures = [validation_failure(layout_plan, planned, tiles, target)
                for _, planned, layout_plan in options]
    costs = [estimate_cycles(layout_plan, planned, tiles, target) if failure is None else None
             for (_, planned, layout_plan), failure in zip(options, failures, strict=True)]
    valid = [i for i, cost in enumerate(costs) if cost is not None]
    if valid:
        return [Evaluation(candidate, options[i][0], None, costs[i], options[i][1],
                           options[i][2]) for i in valid]
    plan, planned, layout_plan = options[0]
    reason = str(failures[0])
    if isinstance(failures[0], DoesNotFit):
        hint, fewest = _tile_count_hint(candidate, problem, tiles, indivisible, target)
        reason = MemoryReason(f"{reason}; {hint}", fewest, no_tile_count=fewest is None)
    return [Evaluation(candidate, plan, reason, None, planned, layout_plan)]


def _tile_count_hint(
    candidate: GemmCandidate, problem: GemmProblem, tiles: int, indivisible: str, target: Target
) -> tuple[str, int | None]:
    """Whether more tiles would let a candidate that does not fit tile memory fit, and the
    fewest that do (None: no tile count helps): every shard shrinks (or stays) as tiles are
    added, so the fewest tiles that fit are found by bisection."""

    def fits(count: int) -> bool:
        return any(validation_failure(plan, planned, count, target) is None for _, planned, plan
                   in candidate_plans(candidate, problem, count, indivisible, target))

    if tiles >= target.tiles or not fits(target.tiles):
        _, planned, plan = candidate_plans(candidate, problem, target.tiles, indivisible,
                                           target)[0]
        out = plan.operand_plan("out").format
        return LAYOUTS[candidate.dispatch].no_tile_count_helps(planned, out, target), None
    failing, fitting = tiles, target.tiles
    while fitting - failing > 1:
        middle = (failing + fitting) // 2
        failing, fitting = (failing, middle) if fits(middle) else (middle, fitting)
    return f"it fits on {fitting} tiles", fitting


def select_gemm_plan(
    problem: GemmProblem,
    tiles: int,
    indivisible: str = Indivisible.PAD,
    target: Target | None = None,
    catalog: Sequence[GemmCandidate] | None = None,
    fits: Callable[[Evaluation], bool] | None = None,
    priced: Priced | None = None,
    priced_key: Hashable | None = None,
) -> Evaluation:
    """The cheapest valid candidate (first in catalog order on ties); NoValidPlan if none.
    `fits(evaluation)`: whether the plan fits beside the other live values of the program
    (`passes/operators/resident.py`); the cheapest of the valid plans that fit is chosen, or
    the cheapest valid plan when none does (the pipeline's memory fallbacks then answer).
    `priced(plan)`: what converting the operands into the plan's formats costs; with it every
    cut of each layout is costed, and the cheapest with its conversions wins (`priced_key`:
    `evaluate_candidate`'s)."""
    from device.target import IPU21

    target = target or IPU21
    evaluations = evaluate_candidates(problem, tiles, indivisible, target, catalog, priced,
                                      fits, priced_key)
    valid = [e for e in evaluations if e.reason is None]
    if not valid:
        raise NoValidPlan(evaluations)
    if fits is not None:
        valid = [e for e in valid if fits(e)] or valid
    return min(valid, key=lambda e: e.total_cycles)  # min keeps the first of equal costs


def ranked_gemm_cuts(
    problem: GemmProblem,
    tiles: int,
    indivisible: str,
    target: Target,
    catalog: Sequence[GemmCandidate],
    fits: Callable[[Evaluation], bool],
    priced: Priced,
    priced_key: Hashable | None,
) -> list[Evaluation]:
    """Every valid cut of every candidate, costed with its operands' conversions, cheapest
    first: those that fit, or all when none does. The first is `select_gemm_plan`'s choice
    (catalog order, then cut order, on ties); the rest are what a look at the result's
    consumers may prefer. `priced_key` as `evaluate_candidate`'s (None: priced afresh).
    NoValidPlan if no cut is valid."""
    options: list[Evaluation] = []
    evaluations = []
    for candidate in catalog:
        costed = (costed_once(candidate, problem, tiles, indivisible, target, priced, priced_key)
                  if priced_key is not None
                  else costed_options(candidate, problem, tiles, indivisible, target, priced))
        evaluations.append(costed[0])
        options += [e for e in costed if e.reason is None]
    if not options:
        raise NoValidPlan(evaluations)
    fitting = [e for e in options if fits(e)]
    return sorted(fitting or options, key=lambda e: e.total_cycles)  # stable: the first on ties


def _cycles_of(evaluation: Evaluation) -> int:
    assert evaluation.cycles is not None  # valid evaluations are costed
    return evaluation.cycles


# ----------------------------------------------------------------------------------------------
# Explain: what the selector considered
# ----------------------------------------------------------------------------------------------


def row_tile_memory(evaluation: Evaluation, target: Target) -> int:
    """Bytes of tile memory a tile of the plan holds (buffers with their tails and alignment
    padding, as the memory check counts them)."""
    return layout_tile_memory(evaluation.layout_plan, evaluation.planned, target)


def plan_tile_memory(plan: OperatorPlanAttr, problem: GemmProblem, target: Target) -> int:
    """`row_tile_memory` of a chosen plan, from the plan alone: a folded plan is refolded
    into the one GEMM its layout planned (`plan_fold`)."""
    fold = plan_fold(plan, problem)
    if fold is None:
        return layout_tile_memory(plan, problem, target)
    return layout_tile_memory(refold_plan(plan, fold), folded_problem(problem, fold), target)


def layout_tile_memory(layout_plan: OperatorPlanAttr, planned: GemmProblem,
                       target: Target) -> int:
    layout = layout_of(layout_plan)
    assert layout is not None  # a selected plan's kind
    buffers = layout.buffers(effective_plan(layout_plan), planned.effective(), target)
    return sum(b.extent for b in buffers.values())


def explain_gemm(problem: GemmProblem, tiles: int, indivisible: str = Indivisible.PAD,
                 target: Target | None = None,
                 catalog: Sequence[GemmCandidate] | None = None) -> list[str]:
    """One line per candidate, in catalog order: the chosen one marked `*`, its estimated
    cycles (exchange + copies + AMP + rounding = total), the memory of one of its tiles,
    or the reason it was rejected."""
    from device.target import IPU21

    target = target or IPU21
    evaluations = evaluate_candidates(problem, tiles, indivisible, target, catalog)
    valid = [e for e in evaluations if e.reason is None]
    chosen = min(valid, key=_cycles_of) if valid else None
    lines = []
    for e in evaluations:
        mark = "*" if e is chosen else " "
        if e.reason is not None:
            lines.append(f"{mark} {e.candidate.name:<22} rejected: {e.reason}")
            continue
        layout = LAYOUTS[e.candidate.dispatch]
        parts = cycle_breakdown(e.layout_plan, e.planned, tiles, target)
        lines.append(
            f"{mark} {e.candidate.name:<22} {parts.total:>12,} cycles (exchange {parts.exchange:,}"
            f", copies {parts.copies:,}, amp {parts.amp:,}, {layout.last_step} "
            f"{parts.rounding:,}); {row_tile_memory(e, target):,} bytes per "
            f"{layout.name} tile{folded_note(e, problem)}"
        )
    return lines


def folded_note(evaluation: Evaluation, problem: GemmProblem) -> str:
    """How `--explain` says a plan runs the batch slices as one GEMM."""
    if evaluation.planned is problem:
        return ""
    rows, k = evaluation.planned.lhs_shape
    return (f"; batch folded: {problem.batch} slices as one [{rows}, {k}] x "
            f"[{k}, {problem.n}] GEMM")
