"""The gelu operator: `graph.gelu` (exact, erf form) -> `mid.gelu` -> one `gelu` kernel call
per shard. The input keeps the output's tiling, order and memory class (only the precision
may differ), so following the producer's format costs no conversion."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from ipu_dialects import graph, mid
from passes.operators.base import Candidate, Operator, SelectionContext, TileLowering, tensor_type
from passes.operators.formats import with_storage
from passes.operators.pointwise import evaluate, lower_pointwise

KERNEL = "gelu"


class GeluOperator(Operator):
    kind = "gelu"
    honours_first_tile = True
    graph_op = graph.GeluOp
    mid_op = mid.GeluOp
    operand_names = ("src",)

    def candidates(self, op: Operation, ctx: SelectionContext) -> list[Candidate]:
        assert isinstance(op, graph.GeluOp)
        src_type = tensor_type(op.input)
        return evaluate(
            op, ctx, self.kind, KERNEL, self.operand_names,
            lambda out_fmt: {"src": with_storage(out_fmt, src_type)}, aliasable=("src",),
        )

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        return mid.GeluOp(operands[0], result_type, plan)

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.GeluOp)
        return lower_pointwise(op, lowering, [op.input], "exact gelu, one call per shard",
                               operand_names=self.operand_names)
