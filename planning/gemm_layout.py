"""A GEMM layout: how one plan cuts the operands over the tiles, and all that follows from it.

One strategy object per layout, keyed by its `DispatchKind` (the only tag a layout has; the
registry is `planning.gemm_selection.LAYOUTS`):

| dispatch      | strategy                              | lowering                                         |
|---------------|---------------------------------------|--------------------------------------------------|
| `gemm_blocks` | `planning/gemm_rows.py` `RowsLayout`     | `passes/operators/gemm_rows_lowering.py`   |
| `gemm_grid`   | `planning/gemm_grid.py` `GridLayout`     | `passes/operators/gemm_grid_lowering.py`   |
| `gemm_ksplit` | `planning/gemm_ksplit.py` `KSplitLayout` | `passes/operators/gemm_ksplit_lowering.py` |

A strategy answers, for a catalog entry and a problem: how each operand is cut (`cuts`,
from which `assemble_plan` builds the complete `#mid.plan`, and `cut_options`, every cut
worth costing with the conversions of the operands); whether a plan's formats are the
layout's (`check`, after the rules every GEMM plan obeys: `planning/gemm_rules.py`); which
buffers its busiest tile holds (`buffers`) and how many bytes of row slots its exchange ops
need (`row_slot_bytes`), which `planning/gemm_memory.py` fits into tile memory; the cycles
the device model charges for its tile work (`cycles`); and, for a plan that does not fit on
any tile count, why (`no_tile_count_helps`). Its lowering to tile work lives in the operators
layer, one module per layout, registered by the same dispatch kind
(`passes/operators/gemm.py`, `LOWERINGS`): lowering imports planning, not the reverse.

Another operator with several plans takes the same shape: a protocol over its own problem
and catalog entry, one strategy per dispatch kind in a registry its selector iterates, and
one lowering per kind in its operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from device.layouts import AMP_BLOCK
from device.target import Target
from ipu_dialects.mid import (
    AxisTilingAttr,
    DispatchKind,
    ElementOrder,
    MemoryClass,
    OperandPlanAttr,
    OperatorDispatchAttr,
    OperatorPlanAttr,
    TensorFormatAttr,
)
from planning.gemm_memory import RowTileBuffer
from planning.gemm_problem import (
    GEMM_OPERANDS,
    ORDER_OF,
    ROLE_OF,
    TRANSPOSED_ORDER,
    GemmCandidate,
    GemmProblem,
    swap_matrix_axes,
)


@dataclass(frozen=True)
class OperandCuts:
    """(row, column) partition counts of each operand's matrix axes, and how many copies of
    rhs the layout keeps."""

    lhs: tuple[int, int]
    rhs: tuple[int, int]
    out: tuple[int, int]
    rhs_replication: int = 1

    def of(self, operand: str) -> tuple[int, int]:
        return {"lhs": self.lhs, "rhs": self.rhs, "out": self.out}[operand]


@dataclass(frozen=True)
class CycleBreakdown:
    """A plan's modeled cycles by kind of step (what `run_package` charges, summed)."""

    exchange: int  # syncs + exchange events of the broadcasts
    copies: int  # home tiles copying their own block into their slot
    amp: int  # the GEMM kernel calls
    rounding: int  # convert_shard of the f32 partials panels (FP32 partials of FP16 inputs);
    # for the K-split, the reduction: the partials' exchange and the add that rounds

    @property
    def total(self) -> int:
        return self.exchange + self.copies + self.amp + self.rounding


class GemmLayout(Protocol):
    """What a GEMM layout decides. The plan and problem a method gets are the effective ones
    (`effective_plan`, `GemmProblem.effective`: transposed operands read untransposed), except
    in `cuts`, which sees the problem as the user wrote it."""

    dispatch: DispatchKind
    name: str  # how diagnostics and `--explain` name its plans and tiles: "output-row"
    reads_transposed: bool  # whether it runs transposed operands (amp_left_t/amp_right_t)
    replicates_an_operand: bool  # whether it stores an operand more than once
    last_step: str  # what `--explain` calls `CycleBreakdown.rounding`: "rounding"

    def cuts(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
             target: Target) -> OperandCuts:
        """How the plan of `candidate` cuts each operand on `tiles` tiles: the first of
        `cut_options`, the cheapest in itself."""
        ...

    def cut_options(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                    target: Target) -> list[OperandCuts]:
        """Every cut worth costing with the program around the op (what converting its
        operands costs depends on the cut), the cheapest in itself first."""
        ...

    def check(self, plan: OperatorPlanAttr, problem: GemmProblem) -> None:
        """Raise `InvalidPlan` when the plan's cuts are not this layout's."""
        ...

    def buffers(self, plan: OperatorPlanAttr, problem: GemmProblem,
                target: Target) -> dict[str, RowTileBuffer]:
        """The buffers of tile 0 (it holds every kind of buffer of the plan), in the order
        `mid-to-tile` declares them."""
        ...

    def row_slot_bytes(self, plan: OperatorPlanAttr, problem: GemmProblem,
                       farthest: np.ndarray) -> list[int]:
        """Bytes of row slots of each exchange op of the plan on more than one tile."""
        ...

    def cycles(self, plan: OperatorPlanAttr, problem: GemmProblem, tiles: int,
               target: Target) -> CycleBreakdown:
        """The cycles the device model charges for the plan's tile work."""
        ...

    def no_tile_count_helps(self, problem: GemmProblem, out: TensorFormatAttr,
                            target: Target) -> str:
        """Why the plan fits no tile count (`out`: its output's format on every tile)."""
        ...


def tile_name(layout: GemmLayout) -> str:
    """"an output-row tile", "a grid tile", "a K-split tile": the subject of memory
    diagnostics."""
    return f"{'an' if layout.name[0] in 'aeiou' else 'a'} {layout.name} tile"


def _matrix_format(
    precision: str,
    order: str,
    batch_rank: int,
    rows: tuple[int, int],
    cols: tuple[int, int],
    mode: str,
    group: int,
    memory: str = MemoryClass.STANDARD,
    scale: int = 0,
    replication: int = 1,
) -> TensorFormatAttr:
    tiling = [AxisTilingAttr(1, 1, mode)] * batch_rank + [
        AxisTilingAttr(rows[0], rows[1], mode),
        AxisTilingAttr(cols[0], cols[1], mode),
    ]
    return TensorFormatAttr(precision, order, tiling, replication, group, memory, scale)


def assemble_plan(layout: GemmLayout, candidate: GemmCandidate, problem: GemmProblem,
                  tiles: int, indivisible: str, target: Target,
                  cuts: OperandCuts | None = None) -> OperatorPlanAttr:
    """The complete plan of `candidate` for `problem` with `cuts` (default: the layout's
    `cuts`), not yet validated. A transposed operand is stored transposed
    (amp_left_t/amp_right_t)."""
    p, mode = candidate.precision, str(indivisible)
    cuts = cuts or layout.cuts(candidate, problem, tiles, target)
    rank_of = {o: len(problem.shape_of(o)) for o in GEMM_OPERANDS}
    formats = {
        "lhs": _matrix_format(
            p, ElementOrder.AMP_LEFT, rank_of["lhs"] - 2,
            (candidate.row_block, cuts.lhs[0]), (AMP_BLOCK, cuts.lhs[1]), mode, tiles,
            scale=problem.lhs_scale if p == problem.precision else 0,
        ),
        "rhs": _matrix_format(
            p, ElementOrder.AMP_RIGHT, rank_of["rhs"] - 2,
            (AMP_BLOCK, cuts.rhs[0]), (AMP_BLOCK, cuts.rhs[1]), mode, tiles,
            scale=problem.rhs_scale if p == problem.precision else 0,
            replication=cuts.rhs_replication,
        ),
        "out": _matrix_format(
            candidate.output_precision, ElementOrder.AMP_OUTPUT, rank_of["out"] - 2,
            (candidate.row_block, cuts.out[0]), (AMP_BLOCK, cuts.out[1]), mode, tiles,
            MemoryClass.INTERLEAVED,
            scale=problem.partial_scale if p == problem.precision else 0,
        ),
    }
    for o in ("lhs", "rhs"):
        if problem.transposed(o):
            formats[o] = swap_matrix_axes(formats[o], TRANSPOSED_ORDER[ORDER_OF[o]])
    tails = {"lhs": target.amp_left_access_tail_bytes, "rhs": 0, "out": 0}
    operands = [
        OperandPlanAttr(o, ROLE_OF[o], formats[o], target.pace_alignment, tails[o])
        for o in GEMM_OPERANDS
    ]
    prefix = candidate.kernel_prefix(problem.inner_blocks)
    dispatch = OperatorDispatchAttr(layout.dispatch, AMP_BLOCK, AMP_BLOCK, f"{prefix}init",
                                    f"{prefix}accum")
    return OperatorPlanAttr(
        candidate.name,
        dispatch,
        candidate.accumulate,
        candidate.amp,
        operands,
        distinct=[("out", "lhs")],
        alias="none",
    )

