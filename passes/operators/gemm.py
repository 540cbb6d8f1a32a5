"""The GEMM operator: `graph.gemm` -> `mid.gemm` -> the retained AMP plan's block loops.

Candidates, validation and the tile-count hints are `planning/gemm_plans.py`; cost and
selection `planning/gemm_selection.py`; the tile work `passes/operators/gemm_lowering.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from ipu_dialects import graph, mid
from passes.operators.base import Operator, SelectionContext, tensor_type
from passes.operators.gemm_lowering import lower_gemm
from planning.gemm_plans import GemmProblem, catalog_entries
from planning.gemm_selection import select_gemm_plan

if TYPE_CHECKING:
    from passes.operators.base import TileLowering as FunctionLowering


class GemmOperator(Operator):
    kind = "gemm"
    graph_op = graph.GemmOp
    mid_op = mid.GemmOp
    operand_names = ("lhs", "rhs")

    def select(self, op: Operation, ctx: SelectionContext) -> mid.OperatorPlanAttr:
        assert isinstance(op, graph.GemmOp)
        problem = GemmProblem.from_types(
            tensor_type(op.lhs), tensor_type(op.rhs), tensor_type(op.result),
            op.transpose_lhs is not None, op.transpose_rhs is not None,
        )
        return select_gemm_plan(
            problem, ctx.tiles, ctx.indivisible, ctx.target, catalog_entries(ctx.catalog),
        ).plan

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.GemmOp)
        return mid.GemmOp(operands[0], operands[1], result_type, plan,
                          op.transpose_lhs is not None, op.transpose_rhs is not None)

    def lower(self, op: Operation, lowering: FunctionLowering) -> list[Operation]:
        assert isinstance(op, mid.GemmOp)
        return lower_gemm(op, lowering)
