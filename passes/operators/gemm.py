"""The GEMM operator: `graph.gemm` -> `mid.gemm` -> the tile work of its plan's layout.

Selection is `planning/gemm_selection.py` (every catalog entry built by its layout with each
of its cuts, validated, costed with what converting the operands into its formats costs);
the tile work is one lowering per layout, looked up by the plan's dispatch kind (`LOWERINGS`,
the same keys as `planning.gemm_selection.LAYOUTS`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from device.layouts import AMP_BLOCK
from device.target import Target
from ipu_dialects import graph, mid
from ipu_dialects.locations import value_label
from passes.operators.base import Candidate, Operator, SelectionContext, tensor_type
from passes.operators.costs import conversion_cycles
from passes.operators.gemm_grid3d_lowering import lower_gemm_grid3d
from passes.operators.gemm_grid_lowering import lower_gemm_grid
from passes.operators.gemm_ksplit_lowering import lower_gemm_ksplit
from passes.operators.gemm_rows_lowering import lower_gemm_rows
from passes.operators.resident import ResidentMemory, SpreadStorage, selection_room
from passes.operators.sequence_spread import cheapest_spread, spread_storage
from passes.operators.tile_maps import (
    GemmOperands,
    effective_operand,
    refuse_first_tiles,
    tensor_format,
)
from planning.gemm_fold import folded_type, plan_fold, refold_plan
from planning.gemm_problem import GemmProblem, catalog_entries
from planning.gemm_selection import (
    Evaluation,
    costed_options,
    plan_tile_memory,
    ranked_gemm_cuts,
    row_tile_memory,
    select_gemm_plan,
)

if TYPE_CHECKING:
    from passes.operators.base import TileLowering

Roles = dict[mid.OperandRole, mid.OperandPlanAttr]
# the cheapest plans of a GEMM whose result's consumers are priced (`cheapest_with_consumers`)
CONSUMER_PRICED_PLANS = 12
# The tile work of each GEMM layout, by the dispatch kind of its strategy.
Lowering = Callable[[mid.GemmOp, "TileLowering", Roles, GemmOperands], list[Operation]]
LOWERINGS: dict[mid.DispatchKind, Lowering] = {
    mid.DispatchKind.GEMM_BLOCKS: lower_gemm_rows,
    mid.DispatchKind.GEMM_GRID: lower_gemm_grid,
    mid.DispatchKind.GEMM_KSPLIT: lower_gemm_ksplit,
    mid.DispatchKind.GEMM_GRID3D: lower_gemm_grid3d,
}


class GemmOperator(Operator):
    kind = "gemm"
    graph_op = graph.GemmOp
    mid_op = mid.GemmOp
    operand_names = ("lhs", "rhs")
    honours_first_tile = True  # the row plan does; `lower_gemm` refuses the others' first tiles

    def choose(self, op: Operation, ctx: SelectionContext) -> Candidate:
        chosen = self.evaluate_chosen(op, ctx)
        return Candidate(chosen.plan, None, chosen.total_cycles)

    def evaluate_chosen(self, op: Operation, ctx: SelectionContext) -> Evaluation:
        """The cut selection takes: its own cycles and its operands' conversions (and, for a
        sequence it reads stored spread, the fetch of each iteration's element)."""
        problem = problem_of(op)
        sequences = ctx.resident.sequence_operands()

        def in_place(plan: mid.OperatorPlanAttr) -> bool:  # its sequences where it reads them
            return self.fits_in_place(op, plan, plan_tile_memory(plan, problem, ctx.target), ctx)

        def fits(evaluation: Evaluation) -> bool:  # beside what its tiles already hold
            plan_bytes = row_tile_memory(evaluation, ctx.target)
            if self.fits_in_place(op, evaluation.plan, plan_bytes, ctx):
                return True
            if not sequences:
                return False
            spread = self.stored_spread(op, evaluation.plan, ctx, sequences, plan_bytes)
            return self.fits_beside(op, evaluation.plan, plan_bytes, ctx,
                                    ctx.resident.with_spread(spread))

        # from the operands' current formats (in their types, `priced`'s key); a plan whose
        # sequence operands do not fit where it reads them also fetches them every iteration
        def priced(plan: mid.OperatorPlanAttr) -> int:
            converted = sum(conversion_cycles(value, plan.operand_plan(name).format, ctx)
                            for value, name in zip(op.operands, self.operand_names, strict=True))
            if not sequences or in_place(plan):
                return converted
            return converted + self.fetch_cycles(op, plan, ctx, sequences)

        # what `priced` depends on: the operand types and the formats earlier consumers
        # converted them into; with sequence operands also what the tiles hold now, so those
        # are priced afresh (no key)
        key = None if sequences else tuple(
            (tensor_type(value), frozenset(ctx.converted.get(value, {})))
            for value in op.operands)
        if ctx.consumers is None:
            return select_gemm_plan(
                problem, ctx.tiles, ctx.indivisible, ctx.target, catalog_entries(ctx.catalog),
                fits, priced, key)
        ranked = ranked_gemm_cuts(
            problem, ctx.tiles, ctx.indivisible, ctx.target, catalog_entries(ctx.catalog),
            fits, priced, key)
        return self.cheapest_with_consumers(op, ranked, ctx)

    def spread_operands(self, op: Operation, plan: mid.OperatorPlanAttr,
                        ctx: SelectionContext) -> dict[int, SpreadStorage]:
        """The operands (elements of a repeat's sequences) whose sequences `plan` takes stored
        spread over the chip, with how each is stored: all of them when they do not fit
        where the plan reads them."""
        sequences = ctx.resident.sequence_operands()
        plan_bytes = plan_tile_memory(plan, problem_of(op), ctx.target)
        if not sequences or self.fits_in_place(op, plan, plan_bytes, ctx):
            return {}
        return self.stored_spread(op, plan, ctx, sequences, plan_bytes)

    def fits_in_place(self, op: Operation, plan: mid.OperatorPlanAttr, plan_bytes: int,
                      ctx: SelectionContext) -> bool:
        """Whether `plan`, holding `plan_bytes` on its busiest tile, fits beside what its tiles
        hold with its sequence operands stored where it reads them (never when a lowering
        before this one forced them spread)."""
        return not ctx.resident.forced and self.fits_beside(op, plan, plan_bytes, ctx,
                                                            ctx.resident)

    def fits_beside(self, op: Operation, plan: mid.OperatorPlanAttr, plan_bytes: int,
                    ctx: SelectionContext, resident: ResidentMemory) -> bool:
        """Whether `plan` fits the selection room on its tiles beside what `resident` says
        they hold."""
        formats, shapes, out = self.plan_formats(op, plan)
        return resident.fits(plan_bytes, formats, shapes, selection_room(ctx.target), out)

    def stored_spread(self, op: Operation, plan: mid.OperatorPlanAttr, ctx: SelectionContext,
                      indices: Sequence[int], plan_bytes: int) -> dict[int, SpreadStorage]:
        """How the sequences of operands `indices` are stored spread when `plan`, holding
        `plan_bytes` on its busiest tile, fetches their elements (`spread_storage`: on the
        tiles that hold least so far and at this op, one after the other)."""
        resident = ctx.resident
        formats, shapes, out = self.plan_formats(op, plan)
        fetching = resident.with_spread(
            {i: SpreadStorage(np.zeros(ctx.tiles, np.int64)) for i in indices})
        loads = np.maximum(resident.earlier_peak,
                           fetching.holding(plan_bytes, formats, shapes, out))
        stored = {}
        for i in indices:
            stored[i] = spread_storage(tensor_type(op.operands[i]), formats[i],
                                       resident.sequence_counts[i], loads, ctx.indivisible,
                                       ctx.target)
            loads = loads + stored[i].tile_bytes
        return stored

    def fetch_cycles(self, op: Operation, plan: mid.OperatorPlanAttr, ctx: SelectionContext,
                     indices: Sequence[int]) -> int:
        """What fetching each iteration's element of the sequences of operands `indices`, stored
        spread, into the plan's formats costs (`cheapest_spread`)."""
        return sum(cheapest_spread(tensor_type(op.operands[i]),
                                   plan.operand_plan(self.operand_names[i]).format, ctx.tiles,
                                   ctx.indivisible, ctx.target)[1] for i in indices)

    def cheapest_with_consumers(self, op: Operation, ranked: Sequence[Evaluation],
                                ctx: SelectionContext) -> Evaluation:
        """Of the `CONSUMER_PRICED_PLANS` cheapest plans (own cycles and operand conversions),
        the one cheapest with what the GEMMs its result feeds then pay for its format
        (`chained_gemm_cycles`, through a bias add and a gelu that follow it): a GEMM's
        output cut is the next one's input (BERT's MLP: its second GEMM converts the first's
        output). The first of equal ones."""
        assert ctx.consumers is not None
        priced = ranked[:CONSUMER_PRICED_PLANS]
        if len({e.plan.operand_plan("out").format for e in priced}) < 2:
            return ranked[0]  # one output format: its consumers pay the same whichever runs
        seen: dict[mid.TensorFormatAttr, int] = {}
        for evaluation in priced:
            fmt = evaluation.plan.operand_plan("out").format
            if fmt not in seen:
                seen[fmt] = ctx.consumers.chained_gemm_cycles(op.results[0], fmt)
        return min(priced, key=lambda e: e.total_cycles
                   + seen[e.plan.operand_plan("out").format])

    def cheapest_plans(self, op: Operation, ctx: SelectionContext,
                       count: int) -> list[tuple[mid.OperatorPlanAttr, int]]:
        """The `count` cheapest valid ways to run `op` (every cut of each layout), with their
        own cycles, operands' conversions aside: what a look-ahead prices an operand's format
        against (`LookAhead.gemm_extra_cycles`)."""
        problem = problem_of(op)
        valid = sorted((e for candidate in catalog_entries(ctx.catalog)
                        for e in costed_options(candidate, problem, ctx.tiles, ctx.indivisible,
                                                ctx.target, lambda plan: 0)
                        if e.reason is None), key=lambda e: e.total_cycles)
        return [(e.plan, e.total_cycles) for e in valid[:count]]

    def plan_tile_bytes(self, op: Operation, plan: mid.OperatorPlanAttr, target: Target) -> int:
        """Its buffers on the busiest tile, staging slots and partials included."""
        return plan_tile_memory(plan, problem_of(op), target)

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.GemmOp)
        return mid.GemmOp(operands[0], operands[1], result_type, plan,
                          op.transpose_lhs is not None, op.transpose_rhs is not None)

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.GemmOp)
        return lower_gemm(op, lowering)


def gemm_problem(op: graph.GemmOp | mid.GemmOp, lhs: TensorType, rhs: TensorType,
                 out: TensorType) -> GemmProblem:
    """The GEMM `op` asks for, its operands typed `lhs`, `rhs`, `out`."""
    return GemmProblem.from_types(lhs, rhs, out, op.transpose_lhs is not None,
                                  op.transpose_rhs is not None)


def problem_of(op: Operation) -> GemmProblem:
    """The GEMM a `graph.gemm` asks for."""
    assert isinstance(op, graph.GemmOp)
    return gemm_problem(op, tensor_type(op.lhs), tensor_type(op.rhs), tensor_type(op.result))


def lower_gemm(op: mid.GemmOp, lowering: TileLowering) -> list[Operation]:
    """The tile work of one `mid.gemm`, by its plan's layout. What every layout needs of a
    plan is checked here first: a hand-written `mid.gemm` reaches `mid-to-tile` without the
    selector's validation."""
    plan = op.plan
    dispatch = plan.dispatch
    name = f"mid-to-tile: mid.gemm {value_label(op.result)}"
    if dispatch.kind.data not in LOWERINGS:
        kinds = [str(k) for k in LOWERINGS]
        raise PassFailedException(
            f"{name}: dispatch '{dispatch.kind.data}' is not {', '.join(kinds[:-1])} or "
            f"{kinds[-1]}"
        )
    inner, columns = dispatch.inner_block, dispatch.column_block
    if inner != AMP_BLOCK or columns != AMP_BLOCK:
        raise PassFailedException(
            f"{name}: dispatch blocks inner = {inner}, columns = {columns}; the AMP kernels "
            f"take {AMP_BLOCK}x{AMP_BLOCK}"
        )
    assert dispatch.init_symbol is not None and dispatch.accum_symbol is not None  # verifier
    roles = {entry.role.data: entry for entry in plan.operands.data}
    for role in (mid.OperandRole.LEFT, mid.OperandRole.RIGHT, mid.OperandRole.OUTPUT):
        if role not in roles:
            raise PassFailedException(
                f"{name}: plan '{plan.candidate.data}' has no {role} operand"
            )
    # a transposed operand (amp_left_t/amp_right_t) is indexed as its untransposed self
    for what, fmt, order in (
        ("lhs", effective_operand(op, "lhs", op.lhs)[1], "amp_left"),
        ("rhs", effective_operand(op, "rhs", op.rhs)[1], "amp_right"),
        ("result", tensor_format(op, "result", op.result)[1], "amp_output"),
    ):
        if fmt.order.data != order:
            raise PassFailedException(
                f"{name}: {what} is stored {fmt.order.data}, the AMP GEMM plan needs {order}"
            )
    lower = LOWERINGS[dispatch.kind.data]
    operands = GemmOperands.of(op)
    try:
        fold = plan_fold(plan, gemm_problem(op, operands.lhs, operands.rhs, operands.out))
    except ValueError as reason:  # NotAFold, or a problem no plan runs (an extent 0)
        raise PassFailedException(f"{name}: {reason}") from None
    if fold is not None or dispatch.kind.data != mid.DispatchKind.GEMM_BLOCKS:
        refuse_first_tiles(op, "mid.gemm plans other than the unfolded row plan (gemm_blocks)")
    if fold is None:
        return lower(op, lowering, roles, operands)
    folded = refold_plan(plan, fold)
    operands = GemmOperands(*(
        folded_type(value_type, folded.operand_plan(o).format, fold, o != "rhs")
        for o, value_type in zip(("lhs", "rhs", "out"),
                                 (operands.lhs, operands.rhs, operands.out))))
    roles = {entry.role.data: entry for entry in folded.operands.data}
    return lower(op, lowering, roles, operands)
