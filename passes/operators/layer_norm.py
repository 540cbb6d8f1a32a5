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
from passes.operators.base import (
    Assumed,
    Candidate,
    SelectionContext,
    TileLowering,
    format_of,
    tensor_type,
)
from passes.operators.formats import broadcast_operand_format, split_format, with_storage
from passes.operators.pointwise import (
    PointwiseOperator,
    evaluate,
    lower_pointwise,
    output_formats,
)
from planning.shard_geometry import geometry

KERNEL = "layer_norm"


def candidate_outputs(op: Operation, ctx: SelectionContext,
                      assumed: Assumed) -> list[tuple[str, mid.TensorFormatAttr]]:
    """The pointwise candidates (follow, split<axis>), the input's cut with whole rows
    (`rows_of_input`), and the whole tensor on one tile."""
    out_type = tensor_type(op.results[0])
    whole = split_format(out_type.get_shape(), None, ctx.tiles, out_type, ctx.indivisible)
    found = output_formats(op, ctx, assumed)
    found += [(name, fmt) for name, fmt in rows_of_input(op, ctx, assumed)
              if all(fmt != known for _, known in found)]
    return found if any(fmt == whole for _, fmt in found) else [*found, ("whole", whole)]


def rows_of_input(op: Operation, ctx: SelectionContext,
                  assumed: Assumed) -> list[tuple[str, mid.TensorFormatAttr]]:
    """Where the input is cut on its last axis (a GEMM's output in 64-column blocks), its cut
    on the other axes with the rows whole (`rows`), and that cut with its row axis cut
    `ROW_REFINEMENTS` times finer (`rows<k>`): each input shard then goes to the one tile (or
    the k tiles) of its rows, not to a one-axis split that every input tile feeds."""
    fmt = format_of(op.operands[0], assumed)
    return [] if fmt is None else rows_of(fmt, tensor_type(op.results[0]), ctx.tiles)


def rows_of(fmt: mid.TensorFormatAttr, out_type: TensorType,
            tiles: int) -> list[tuple[str, mid.TensorFormatAttr]]:
    """`rows_of_input` for an input stored `fmt`."""
    shape = tuple(out_type.get_shape())
    if len(shape) < 2 or fmt.partitions[-1] == 1 or fmt.replication.data != 1:
        return []
    tiling = [*fmt.tiling.data[:-1], mid.AxisTilingAttr(1, 1)]
    rows = with_storage(fmt.with_changes(order=mid.ElementOrder.ROW_MAJOR, tiling=tiling,
                                         memory=mid.MemoryClass.STANDARD), out_type)
    found = [("rows", rows.with_changes(group=rows.partition_count))]
    row_axis = len(shape) - 2
    chunk = geometry(shape, rows).chunk[row_axis]
    for factor in ROW_REFINEMENTS:
        parts = rows.partition_count * factor
        if chunk % factor or rows.first_tile.data + parts > tiles:
            break
        finer = list(tiling)
        finer[row_axis] = mid.AxisTilingAttr(chunk // factor,
                                             rows.partitions[row_axis] * factor)
        # the group grows with the partitions: set both at once, the format verifies each
        found.append((f"rows{factor}", rows.with_changes(tiling=finer, group=parts)))
    return found


# how many times finer than the input's row cut a layer norm may cut its rows
ROW_REFINEMENTS = (2, 4, 8)


class LayerNormOperator(PointwiseOperator):
    kind = "layer_norm"
    honours_first_tile = True
    graph_op = graph.LayerNormOp
    mid_op = mid.LayerNormOp
    operand_names = ("src", "weight", "bias")

    def candidates_given(self, op: Operation, ctx: SelectionContext,
                         assumed: Assumed) -> list[Candidate]:
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
                        outputs=candidate_outputs(op, ctx, assumed), assumed=assumed)

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
