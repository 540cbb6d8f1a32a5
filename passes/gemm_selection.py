"""Choosing a GEMM plan: the toy cost model and selection among the valid candidates.

`graph-to-mid` calls `select_gemm_plan`: every catalog entry is built and validated
(`passes/gemm_plans.py`); each valid one is costed by `estimate_cycles`, a model of the
retained plan's phases from the target's rates; the cheapest wins (the first in catalog
order on ties). When none is valid, `NoValidPlan` names every candidate's reason, and a
candidate that does not fit tile memory says whether more tiles would help.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from device.layouts import AMP_BLOCK, block_bytes
from device.target import Target
from ipu_dialects.mid import Indivisible, OperatorPlanAttr
from passes.gemm_plans import (
    CATALOG,
    DoesNotFit,
    GemmCandidate,
    GemmProblem,
    build_gemm_plan,
    effective_plan,
    validation_failure,
)
from passes.shard_geometry import ShardGeometry, ceil_div

# ----------------------------------------------------------------------------------------------
# Toy cost model
# ----------------------------------------------------------------------------------------------


_LATENCY_CACHE: dict[tuple[int, int], np.ndarray] = {}


def _latency(target: Target, tiles: int) -> np.ndarray:
    # Target holds a dict, so it is not hashable: key the cache by identity.
    key = (id(target), tiles)
    if key not in _LATENCY_CACHE:
        _LATENCY_CACHE.clear()  # one pipeline uses one target and tile count
        _LATENCY_CACHE[key] = target.latency_matrix(tiles)
    return _LATENCY_CACHE[key]


def estimate_cycles(
    plan: OperatorPlanAttr, problem: GemmProblem, tiles: int, target: Target
) -> int:
    """Modeled cycles of the plan: per (batch, k, j) phase a sync, the broadcast of one
    64x64 right block at `exchange_word_bytes` per cycle plus the farthest receiver's
    latency, the home tile's local copy when it is also a row tile, and one AMP kernel call
    on a row shard (AMP MAC rate from the target)."""
    plan, problem = effective_plan(plan), problem.effective()
    precision = problem.precision
    lhs_fmt, rhs_fmt = plan.operand_plan("lhs").format, plan.operand_plan("rhs").format
    lhs = ShardGeometry.from_format(problem.lhs_shape, lhs_fmt)
    rhs = ShardGeometry.from_format(problem.rhs_shape, rhs_fmt)
    row_tiles = lhs.partitions[-2]
    rows = lhs.chunk[-2]
    k_padded = lhs.padded_shape[-1]
    # one phase per real (k, j) block: the rhs padding beyond K and N has no phase
    n_k, n_j = k_padded // AMP_BLOCK, ceil_div(problem.n, AMP_BLOCK)
    homes = rhs.block_home_tiles((rhs.rank - 2, rhs.rank - 1))[:n_k, :n_j]
    latency = _latency(target, tiles)
    farthest = latency[homes.reshape(-1)][:, :row_tiles].max(axis=1)
    block_words = block_bytes(precision) // target.exchange_word_bytes
    copies = int(np.count_nonzero(homes.reshape(-1) < row_tiles))
    kernel = target.amp_cycles(rows * AMP_BLOCK * AMP_BLOCK, precision)
    per_batch = (
        homes.size * (target.sync_cycles + block_words + kernel)
        + int(farthest.sum())
        + copies * target.vector_cycles(block_bytes(precision))
    )
    return problem.batch * per_batch


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
    catalog: Sequence[GemmCandidate] = CATALOG,
) -> list[Evaluation]:
    """Build, validate and (when valid) cost every catalog entry, in catalog order."""
    results: list[Evaluation] = []
    for candidate in catalog:
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
    catalog: Sequence[GemmCandidate] = CATALOG,
) -> Evaluation:
    """The cheapest valid candidate (first in catalog order on ties); NoValidPlan if none."""
    from device.target import IPU21

    target = target or IPU21
    evaluations = evaluate_candidates(problem, tiles, indivisible, target, catalog)
    valid = [e for e in evaluations if e.reason is None]
    if not valid:
        raise NoValidPlan(evaluations)
    return min(valid, key=lambda e: e.cycles)  # min keeps the first of equal costs
