"""Batched GEMMs with an unbatched right operand, folded into one GEMM over their stacked rows.

The projections of a batched transformer are `[B.., T, K] @ [K, N]`: every batch slice
multiplies the same B. Run slice by slice, the row plan repeats every broadcast of B once per
slice and keeps all slices on the same output-row tiles (an output-row tile of BERT-base at
batch 8 would hold 8 x 16 rows x 3072 columns); the grid and K-split plans run one GEMM only.
Folded, the same GEMM is one `[B·Tp, K] @ [K, N]` GEMM (each slice's T rows padded to `Tp`,
a multiple of the row block) planned by every layout of the family, and its plan is written
back on the batched operands:

- lhs and the result: each batch axis cut `1 x extent` (one slice per partition), the row
  axis `rb x Tp / c` where `c` is the folded plan's rows per tile, the last axis as folded;
- rhs: its (extent-1) batch axes `1 x 1`, its matrix axes as folded.

That batched format puts every element on the tile, and at the byte offset, the folded
format puts it: the linear partition of (batch b, row chunk t) is `b * Tp / c + t`, the
folded row chunk of row `b * Tp + t * c`, and a shard with one batch slice is laid out as the
matrix it holds (`device/layouts.py` stacks batch outermost). So the folded plan's tile work
(`passes/operators/gemm.py` lowers the plan refolded, `refold_plan`) reads and writes the
batched buffers unchanged. A fold exists only where that holds: `c` divides `Tp` and the
folded plan's partitions hold exactly the folded rows (`unfold_plan` returns None otherwise
and the GEMM is planned slice by slice, as before).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import TensorType

from ipu_dialects.mid import AxisTilingAttr, OperatorPlanAttr, TensorFormatAttr
from planning.gemm_problem import GemmProblem, with_operand_formats
from planning.shard_geometry import axis_chunk, ceil_div

ROW_OPERANDS = ("lhs", "out")  # the operands whose rows are folded


@dataclass(frozen=True)
class BatchFold:
    """The batch slices of a GEMM stacked into one matrix of `folded_rows` rows."""

    batch: tuple[int, ...]  # the batch extents of lhs and the result
    padded_rows: int  # Tp: the rows each slice takes in the fold (its T, padded)

    @property
    def slices(self) -> int:
        return math.prod(self.batch)

    @property
    def folded_rows(self) -> int:
        return self.slices * self.padded_rows


def foldable(problem: GemmProblem) -> bool:
    """Several batch slices of an untransposed lhs times one B (no batch axis of rhs has an
    extent above 1), with the result batched as lhs is."""
    lhs, rhs, out = problem.lhs_shape, problem.rhs_shape, problem.out_shape
    return (not problem.transpose_lhs and len(lhs) > 2 and len(out) == len(lhs)
            and all(e == 1 for e in rhs[:-2]) and problem.batch > 1)


def batch_fold(problem: GemmProblem, row_block: int) -> BatchFold | None:
    """The fold of `problem` with each slice's rows padded to `row_block` (None: none)."""
    if not foldable(problem):
        return None
    rows = problem.lhs_shape[-2]
    return BatchFold(tuple(problem.lhs_shape[:-2]), ceil_div(rows, row_block) * row_block)


def refit_fold(fold: BatchFold, folded: OperatorPlanAttr, rows: int) -> BatchFold | None:
    """A fold whose slices are padded to the folded plan's rows per tile, so that a plan
    with as many rows per tile can hold whole slices (None: that is this fold already).
    `rows`: a slice's rows."""
    chunks = [axis_chunk(fold.folded_rows, t.block.data, t.partitions.data)
              for t in (folded.operand_plan(o).format.tiling.data[-2] for o in ROW_OPERANDS)]
    padded = ceil_div(rows, max(chunks)) * max(chunks)
    return None if padded == fold.padded_rows else replace(fold, padded_rows=padded)


def folded_problem(problem: GemmProblem, fold: BatchFold) -> GemmProblem:
    """The one GEMM the batch slices make, stacked."""
    rows = fold.folded_rows
    return replace(problem, lhs_shape=(rows, problem.lhs_shape[-1]),
                   rhs_shape=tuple(problem.rhs_shape[-2:]),
                   out_shape=(rows, problem.out_shape[-1]), row_slices=fold.slices)


def unfold_plan(folded: OperatorPlanAttr, problem: GemmProblem,
                fold: BatchFold) -> OperatorPlanAttr | None:
    """The folded plan written on the batched operands, or None when a batched format cannot
    place every element where the folded one does."""
    formats: dict[str, TensorFormatAttr] = {}
    for entry in folded.operands.data:
        name, fmt = entry.operand.data, entry.format
        tiling = list(fmt.tiling.data)
        if name not in ROW_OPERANDS:
            ones = [AxisTilingAttr(1, 1, t.indivisible.data) for t in tiling[:1]]
            formats[name] = fmt.with_changes(tiling=ones * (len(problem.rhs_shape) - 2) + tiling)
            continue
        rows = tiling[-2]
        block, parts = rows.block.data, rows.partitions.data
        chunk = axis_chunk(fold.folded_rows, block, parts)
        if chunk * parts != fold.folded_rows or fold.padded_rows % chunk:
            return None
        mode = rows.indivisible.data
        batch = [AxisTilingAttr(1, e, mode) for e in fold.batch]
        parts_per_slice = fold.padded_rows // chunk
        if parts_per_slice * axis_chunk(problem.shape_of(name)[-2], block,
                                        parts_per_slice) != fold.padded_rows:
            block = chunk  # a slice padded past its blocks (`refit_fold`): one block per
            # partition says Tp, so that `plan_fold` reads back the fold that was planned
        slice_rows = AxisTilingAttr(block, parts_per_slice, mode)
        formats[name] = fmt.with_changes(tiling=[*batch, slice_rows, tiling[-1]])
    return with_operand_formats(folded, formats)


class NotAFold(ValueError):
    """A batched GEMM plan whose batch axes are cut, but not as a fold (the message says how)."""


def plan_fold(plan: OperatorPlanAttr, problem: GemmProblem) -> BatchFold | None:
    """The fold a `mid.gemm`'s plan runs (None: its batch slices run one by one, every batch
    axis of lhs uncut); `NotAFold` when lhs's batch axes are cut in a way no fold places."""
    lhs_shape, out_shape = problem.lhs_shape, problem.out_shape
    if len(lhs_shape) <= 2 or all(p == 1 for p in plan.operand_plan("lhs").format.partitions[:-2]):
        return None
    if not foldable(problem):
        raise NotAFold("lhs's batch axes are cut, which only a folded GEMM does (an "
                       "untransposed lhs with several batch slices, a result batched as lhs, "
                       "no rhs batch axis above 1)")
    padded: set[int] = set()
    for name, shape in (("lhs", lhs_shape), ("out", out_shape)):
        fmt = plan.operand_plan(name).format
        for axis, (extent, tiling) in enumerate(zip(shape[:-2], fmt.tiling.data)):
            if tiling.block.data != 1 or tiling.partitions.data != extent:
                raise NotAFold(f"{name} batch axis {axis} is tiled {tiling.block.data} x "
                               f"{tiling.partitions.data}; a fold holds one slice per "
                               f"partition (1 x {extent})")
        rows = fmt.tiling.data[-2]
        padded.add(axis_chunk(shape[-2], rows.block.data, rows.partitions.data)
                   * rows.partitions.data)
    if len(padded) != 1:
        raise NotAFold(f"lhs and the result pad their rows differently ({sorted(padded)})")
    return BatchFold(tuple(lhs_shape[:-2]), padded.pop())


def refold_plan(plan: OperatorPlanAttr, fold: BatchFold) -> OperatorPlanAttr:
    """The folded plan of a batched one (`unfold_plan`'s inverse)."""
    formats: dict[str, TensorFormatAttr] = {}
    for entry in plan.operands.data:
        name, fmt = entry.operand.data, entry.format
        tiling = list(fmt.tiling.data)
        if name not in ROW_OPERANDS:
            formats[name] = fmt.with_changes(tiling=tiling[-2:])
            continue
        rows = tiling[-2]
        folded_rows = AxisTilingAttr(rows.block.data, fold.slices * rows.partitions.data,
                                     rows.indivisible.data)
        formats[name] = fmt.with_changes(tiling=[folded_rows, tiling[-1]])
    return with_operand_formats(plan, formats)


def folded_type(value_type: TensorType, fmt: TensorFormatAttr, fold: BatchFold,
                rows_folded: bool) -> TensorType:
    """A batched operand's type as the folded GEMM sees it, in its refolded format `fmt`:
    `[B·Tp, last]` for lhs and the result, the matrix axes for rhs."""
    shape = tuple(value_type.get_shape())
    folded = (fold.folded_rows, shape[-1]) if rows_folded else shape[-2:]
    return TensorType(value_type.get_element_type(), folded, fmt)
