"""The add operator: `graph.add` (NumPy broadcasting) -> `mid.add` -> one `add` kernel call
per output shard.

Candidates: the output takes over the format of an operand of the output's shape (no
conversion of that operand), or cuts one axis across the tiles (`split<axis>`). An operand
of the output's shape gets the output's format; a broadcast operand gets the part of it it
can have: the output's tiling on its non-broadcast axes, replicated once per partition of
the cut axes it is broadcast along (`formats.broadcast_operand_format`: a bias against a
GEMM's output cut on batch, rows and columns). The cheapest plan,
counting the conversions it needs, wins.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from ipu_dialects import graph, mid
from passes.operators.base import Assumed, Candidate, SelectionContext, TileLowering, tensor_type
from passes.operators.formats import broadcast_operand_format
from passes.operators.pointwise import PointwiseOperator, evaluate, lower_pointwise

KERNEL = "add"


class AddOperator(PointwiseOperator):
    kind = "add"
    honours_first_tile = True
    graph_op = graph.AddOp
    mid_op = mid.AddOp
    operand_names = ("lhs", "rhs")

    def candidates_given(self, op: Operation, ctx: SelectionContext,
                         assumed: Assumed) -> list[Candidate]:
        assert isinstance(op, graph.AddOp)
        out_shape = tuple(tensor_type(op.result).get_shape())

        def operand_formats(out_fmt: mid.TensorFormatAttr):
            formats = {}
            for name, value in (("lhs", op.lhs), ("rhs", op.rhs)):
                fmt = broadcast_operand_format(out_fmt, out_shape, tensor_type(value))
                if fmt is None:
                    return (f"{name} is broadcast along a cut axis that comes after one it "
                            "keeps cut, or the output is replicated")
                formats[name] = fmt
            return formats

        return evaluate(op, ctx, self.kind, KERNEL, self.operand_names, operand_formats,
                        aliasable=("lhs", "rhs"), assumed=assumed)

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        return mid.AddOp(operands[0], operands[1], result_type, plan)

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.AddOp)
        return lower_pointwise(op, lowering, [op.lhs, op.rhs], "add, one call per output shard",
                               operand_names=self.operand_names)
