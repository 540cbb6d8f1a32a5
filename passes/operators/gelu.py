"""The gelu operator: `graph.gelu` -> `mid.gelu` -> one kernel call per shard: `gelu` for the
exact (erf) form, `gelu_tanh` for `approximate tanh`. The input keeps the output's tiling,
order and memory class (only the precision may differ), so following the producer's format
costs no conversion."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from device.numerics import GeluApproximation
from ipu_dialects import graph, mid
from ipu_dialects.locations import located, value_label
from passes.operators.base import Assumed, Candidate, SelectionContext, TileLowering, tensor_type
from passes.operators.formats import with_storage
from passes.operators.pointwise import PointwiseOperator, evaluate, lower_pointwise

# The kernel of each form (None: exact), and what its calls are for.
KERNELS: dict[GeluApproximation | None, str] = {None: "gelu", GeluApproximation.TANH: "gelu_tanh"}
REASONS: dict[GeluApproximation | None, str] = {
    None: "exact gelu, one call per shard",
    GeluApproximation.TANH: "tanh gelu, one call per shard",
}


class GeluOperator(PointwiseOperator):
    kind = "gelu"
    honours_first_tile = True
    graph_op = graph.GeluOp
    mid_op = mid.GeluOp
    operand_names = ("src",)

    def candidates_given(self, op: Operation, ctx: SelectionContext,
                         assumed: Assumed) -> list[Candidate]:
        assert isinstance(op, graph.GeluOp)
        src_type = tensor_type(op.input)
        return evaluate(
            op, ctx, self.kind, KERNELS[op.approximation], self.operand_names,
            lambda out_fmt: {"src": with_storage(out_fmt, src_type)}, aliasable=("src",),
            assumed=assumed,
        )

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.GeluOp)
        return mid.GeluOp(operands[0], result_type, plan, op.approximate)

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.GeluOp)
        check_kernel(op)
        return lower_pointwise(op, lowering, [op.input], REASONS[op.approximation],
                               operand_names=self.operand_names)


def check_kernel(op: mid.GeluOp) -> None:
    """A hand-written `mid.gelu` reaches mid-to-tile without the selector: its plan's kernel
    must compute the form the op names, or the program would compute the other GeLU."""
    wanted = KERNELS[op.approximation]
    found = op.plan.dispatch.init_symbol
    if found != wanted:
        form = "exact (erf)" if op.approximation is None else f"approximate {op.approximation}"
        raise PassFailedException(located(
            op,
            f"mid-to-tile: mid.gelu {value_label(op.result)} is the {form} GeLU, but its plan "
            f"calls @{found}; that form's kernel is @{wanted}",
        ))
