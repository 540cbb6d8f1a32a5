"""Choosing a GEMM plan: the cost model and selection among the valid candidates.

`graph-to-mid` calls `select_gemm_plan`: every catalog entry is built and validated
(`planning/gemm_plans.py`); each valid one is costed by `estimate_cycles`, the cycles the
device model charges for the plan's tile work, computed with the model's own cycle functions
(`device/model/cycles.py`; a test holds them equal to modeled runs); the cheapest wins (the first in catalog
order on ties). When none is valid, `NoValidPlan` names every candidate's reason, and a
candidate that does not fit tile memory says whether more tiles would help.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from device.layouts import AMP_BLOCK, block_bytes
from device.model import cycles as device_cycles
from device.target import WORD_BYTES, Target, latency_table
from ipu_dialects.mid import DispatchKind, Indivisible, OperatorPlanAttr
from planning.exchange_rows import broadcast_events
from planning.gemm_grid import grid_cycles, grid_of
from planning.gemm_ksplit import ksplit_cycles, ksplit_of
from planning.gemm_plans import (
    GRID,
    KSPLIT,
    LAYOUT_NAME,
    DoesNotFit,
    GemmCandidate,
    GemmProblem,
    build_gemm_plan,
    catalog_entries,
    effective_plan,
    has_f32_partials_panel,
    row_tile_buffers,
    validation_failure,
)
from planning.shard_geometry import ShardGeometry

# ----------------------------------------------------------------------------------------------
# Cost model: the device model's cycles
# ----------------------------------------------------------------------------------------------




@dataclass(frozen=True)
class CycleBreakdown:
    """A plan's modeled cycles by kind of step (what `run_package` charges, summed)."""

    exchange: int  # syncs + exchange events of the rhs broadcasts
    copies: int  # home tiles copying their own block into their slot
    amp: int  # the GEMM kernel calls
    rounding: int  # convert_shard of the f32 partials panels (FP32 partials of FP16 inputs);
    # for the K-split, the reduction: the partials' exchange and the add that rounds

    @property
    def total(self) -> int:
        return self.exchange + self.copies + self.amp + self.rounding


def cycle_breakdown(
    plan: OperatorPlanAttr, problem: GemmProblem, tiles: int, target: Target
) -> CycleBreakdown:
    """The cycles the device model charges for the plan's tile work (`mid-to-tile`'s
    gemm_blocks lowering), from the model's own cycle functions (`device.model.cycles`):
    per batch and (k, j) block, the broadcast of block (k, j) from its home tile to the other
    output-row tiles, a pair broadcast (a sync plus `words / 2 + max L(home, receiver)`
    events: 64-bit items; no step without a receiver), the home tile's copy into its slot
    when it is an output-row tile, and one GEMM call on every row tile; per column block,
    the rounding of the f32 partials panel."""
    plan, problem = effective_plan(plan), problem.effective()
    precision = problem.precision
    formats = {o: plan.operand_plan(o).format for o in ("lhs", "rhs", "out")}
    lhs = ShardGeometry.from_format(problem.lhs_shape, formats["lhs"])
    rhs = ShardGeometry.from_format(problem.rhs_shape, formats["rhs"])
    out = ShardGeometry.from_format(problem.out_shape, formats["out"])
    if plan.dispatch.kind.data == DispatchKind.GEMM_KSPLIT:
        ksplit = ksplit_cycles(ksplit_of(out, lhs, rhs), precision, out.precision, target,
                               latency_table(target, tiles))
        return CycleBreakdown(ksplit.exchange, 0, ksplit.amp, ksplit.reduction)
    if plan.dispatch.kind.data == DispatchKind.GEMM_GRID:
        grid = grid_cycles(grid_of(out, lhs, rhs), problem.k, precision, out.precision,
                           has_f32_partials_panel(plan), target, latency_table(target, tiles))
        return CycleBreakdown(grid.exchange, 0, grid.amp, grid.rounding)
    row_tiles, rows = out.tiles_used, out.chunk[-2]
    n_k, n_j = lhs.padded_shape[-1] // AMP_BLOCK, out.padded_shape[-1] // AMP_BLOCK
    homes = rhs.block_home_tiles((rhs.rank - 2, rhs.rank - 1))[:n_k, :n_j].reshape(-1)
    items = broadcast_events(block_bytes(precision) // WORD_BYTES, pairs=True)
    latency = latency_table(target, tiles)[:, :row_tiles].copy()
    # a home tile that is a row tile does not receive its own broadcast
    inside = homes < row_tiles
    latency_to_others = latency[homes]
    latency_to_others[np.flatnonzero(inside), homes[inside]] = -1
    farthest = latency_to_others.max(axis=1)
    with_receivers = farthest >= 0
    exchange = int(np.sum(target.sync_cycles + items + farthest[with_receivers]))
    copies = int(np.count_nonzero(inside)) * device_cycles.copy_cycles(
        block_bytes(precision), target)
    amp = homes.size * device_cycles.gemm_cycles(rows, precision, target)
    rounding = 0
    if has_f32_partials_panel(plan):
        out_panel, partials_panel = (
            ShardGeometry((row_tiles * rows, AMP_BLOCK), (rows, AMP_BLOCK), (row_tiles, 1),
                          (True, True), 1, row_tiles, p, "amp_output")
            for p in (out.precision, "f32")
        )
        rounding = n_j * device_cycles.convert_shard_cycles(out_panel, partials_panel, 0, target)
    batch = problem.batch
    return CycleBreakdown(batch * exchange, batch * copies, batch * amp, batch * rounding)


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
    plan: OperatorPlanAttr
    reason: str | None  # None: valid
    cycles: int | None  # only for valid plans


def evaluate_candidates(
    problem: GemmProblem,
    tiles: int,
    indivisible: str,
    target: Target,
    catalog: Sequence[GemmCandidate] | None = None,
) -> list[Evaluation]:
    """Build, validate and (when valid) cost every catalog entry (default: the default
    catalog, `catalog_entries(None)`), in catalog order."""
    results: list[Evaluation] = []
    for candidate in catalog_entries(None) if catalog is None else catalog:
        plan = build_gemm_plan(candidate, problem, tiles, indivisible, target)
        failure = validation_failure(plan, problem, tiles, target)
        reason = None if failure is None else str(failure)
        if isinstance(failure, DoesNotFit):
            reason = f"{reason}; {_tile_count_hint(candidate, problem, tiles, indivisible, target)}"
        cycles = estimate_cycles(plan, problem, tiles, target) if reason is None else None
        results.append(Evaluation(candidate, plan, reason, cycles))
    return results


def _tile_count_hint(
    candidate: GemmCandidate, problem: GemmProblem, tiles: int, indivisible: str, target: Target
) -> str:
    """Whether more tiles would let a candidate that does not fit tile memory fit: every shard
    shrinks (or stays) as tiles are added, so the fewest tiles that fit are found by bisection."""

    def plan_on(count: int) -> OperatorPlanAttr:
        return build_gemm_plan(candidate, problem, count, indivisible, target)

    def fits(count: int) -> bool:
        return validation_failure(plan_on(count), problem, count, target) is None

    if (tiles >= target.tiles or not fits(target.tiles)) and candidate.layout in (GRID, KSPLIT):
        out = plan_on(target.tiles).operand_plan("out").format
        rows, cols = out.partitions[-2:]
        name = LAYOUT_NAME[candidate.layout]
        return (
            f"no tile count helps: the {name} plan cuts the output into at most {rows} x {cols} "
            f"blocks of 16 rows by 64 columns here, and on all {target.tiles} tiles a {name} "
            "tile still does not fit"
        )
    if tiles >= target.tiles or not fits(target.tiles):
        out = plan_on(target.tiles).operand_plan("out").format
        rows = ShardGeometry.from_format(problem.out_shape, out).chunk[-2]
        batches = (
            f" in each of the {problem.batch} batch slices (batch axes are not partitioned)"
            if problem.batch > 1 else ""
        )
        return (
            "no tile count helps: the retained plan partitions output rows only, and on all "
            f"{target.tiles} tiles an output-row tile still holds {rows} rows{batches} (with "
            f"all {problem.n} output columns and all {problem.k} of K)"
        )
    failing, fitting = tiles, target.tiles
    while fitting - failing > 1:
        middle = (failing + fitting) // 2
        failing, fitting = (failing, middle) if fits(middle) else (middle, fitting)
    return f"it fits on {fitting} tiles"


class NoValidPlan(Exception):
    def __init__(self, evaluations: Sequence[Evaluation]):
        self.evaluations = tuple(evaluations)
        # candidates failing for the same reason are named together, in catalog order
        grouped: dict[str, list[str]] = {}
        for e in evaluations:
            grouped.setdefault(e.reason or "", []).append(e.candidate.name)
        reasons = "; ".join(f"{', '.join(names)}: {reason}" for reason, names in grouped.items())
        super().__init__(f"no valid operator plan: {reasons or 'the operator catalog is empty'}")


def select_gemm_plan(
    problem: GemmProblem,
    tiles: int,
    indivisible: str = Indivisible.PAD,
    target: Target | None = None,
    catalog: Sequence[GemmCandidate] | None = None,
) -> Evaluation:
    """The cheapest valid candidate (first in catalog order on ties); NoValidPlan if none."""
    from device.target import IPU21

    target = target or IPU21
    evaluations = evaluate_candidates(problem, tiles, indivisible, target, catalog)
    valid = [e for e in evaluations if e.reason is None]
    if not valid:
        raise NoValidPlan(evaluations)
    return min(valid, key=_cycles_of)  # min keeps the first of equal costs


def _cycles_of(evaluation: Evaluation) -> int:
    assert evaluation.cycles is not None  # valid evaluations are costed
    return evaluation.cycles


# ----------------------------------------------------------------------------------------------
# Explain: what the selector considered
# ----------------------------------------------------------------------------------------------


def row_tile_memory(evaluation: Evaluation, problem: GemmProblem, target: Target) -> int:
    """Bytes of tile memory an output-row tile holds for the plan (buffers with their tails
    and alignment padding, as the memory check counts them)."""
    buffers = row_tile_buffers(effective_plan(evaluation.plan), problem.effective(), target)
    return sum(b.extent for b in buffers.values())


def explain_gemm(problem: GemmProblem, tiles: int, indivisible: str = Indivisible.PAD,
                 target: Target | None = None,
                 catalog: Sequence[GemmCandidate] | None = None) -> list[str]:
    """One line per candidate, in catalog order: the chosen one marked `*`, its estimated
    cycles (exchange + copies + AMP + rounding = total), the memory of an output-row tile,
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
        parts = cycle_breakdown(e.plan, problem, tiles, target)
        # the K-split's last step sums the layers' partials (an exchange and an add) and
        # rounds there; the other plans' is the rounding of their f32 partials
        last = "reduction" if e.candidate.layout == KSPLIT else "rounding"
        lines.append(
            f"{mark} {e.candidate.name:<22} {parts.total:>12,} cycles (exchange {parts.exchange:,}"
            f", copies {parts.copies:,}, amp {parts.amp:,}, {last} {parts.rounding:,}); "
            f"{row_tile_memory(e, problem, target):,} bytes per "
            f"{LAYOUT_NAME[e.candidate.layout]} tile"
        )
    return lines
