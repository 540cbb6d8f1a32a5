"""The layer_norm operator: `graph.layer_norm` -> `mid.layer_norm` -> one `layer_norm` kernel
call per output shard.

Every row of the normalized last axis must be whole on one tile (the statistics are per row),
so a candidate either follows the input's format (when it keeps the last axis whole) or cuts
one other axis across the tiles (`split<axis>`); a single row is computed whole on one tile
(`whole`). The input keeps the output's format (only the precision may differ); weight and
bias ([C]) are whole on every tile of the output, replicated as add's broadcast operands are
(`formats.broadcast_operand_format`). FP32 statistics, one rounding (device kernel).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from device.kernels import f32_bits
from ipu_dialects import graph, mid
from passes.operators.base import Candidate, Operator, SelectionContext, TileLowering, tensor_type
from passes.operators.formats import broadcast_operand_format, split_format, with_storage
from passes.operators.pointwise import evaluate, lower_pointwise, output_formats

KERNEL = "layer_norm"


def candidate_outputs(op: Operation,
                      ctx: SelectionContext) -> list[tuple[str, mid.TensorFormatAttr]]:
    """The pointwise candidates (follow, split<axis>) and the whole tensor on one tile."""
    out_type = tensor_type(op.results[0])
    whole = split_format(out_type.get_shape(), None, ctx.tiles, out_type, ctx.indivisible)
    found = output_formats(op, ctx)
    return found if any(fmt == whole for _, fmt in found) else [*found, ("whole", whole)]


class LayerNormOperator(Operator):
    kind = "layer_norm"
    honours_first_tile = True
    graph_op = graph.LayerNormOp
    mid_op = mid.LayerNormOp
    operand_names = ("src", "weight", "bias")

    def candidates(self, op: Operation, ctx: SelectionContext) -> list[Candidate]:
        assert isinstance(op, graph.LayerNormOp)
        out_shape = tuple(tensor_type(op.result).get_shape())

        def operand_formats(out_fmt: mid.TensorFormatAttr):
            if out_fmt.partitions[-1] > 1:
                return "the normalized last axis would be cut across tiles"
            formats = {"src": with_storage(out_fmt, tensor_type(op.input))}
            for name, value in (("weight", op.weight), ("bias", op.bias)):
                fmt = broadcast_operand_format(out_fmt, out_shape, tensor_type(value))
                if fmt is None:
                    return f"{name} cannot be whole on every tile of a replicated output"
                formats[name] = fmt
            return formats

        return evaluate(op, ctx, self.kind, KERNEL, self.operand_names, operand_formats,
                        named=(f32_bits(op.eps.value.data),),
                        outputs=candidate_outputs(op, ctx))

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.LayerNormOp)
        return mid.LayerNormOp(operands[0], operands[1], operands[2], result_type, plan,
                               op.eps.value.data)

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.LayerNormOp)
        return lower_pointwise(op, lowering, [op.input, op.weight, op.bias],
                               "layer_norm, one call per output shard (whole rows)",
                               named=(f32_bits(op.eps.value.data),))
