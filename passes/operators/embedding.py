"""The embedding operator: `graph.gather` -> `mid.gather` -> one `gather_rows` kernel call
per output shard (the table's rows by i32 indices; the kernel: device/model/kernels_embedding.py).

The indices are known only at run time, so no exchange can be scheduled per row. The plans
therefore cut the table along its *row* axes (the trailing ones; for a 2-D table the hidden
axis), never along the rows themselves: tile p holds columns p of every table row, the
indices whole (replicated on every tile of the plan, i32), and computes columns p of every
output row on its own, with no exchange and no reduction (`gather_split<axis>`, the output's
last axis cut as the table's). A GPT-2 table (50257 x 768 f16) on 1472 tiles takes 768
tiles of one column each, 100 KB per tile; its consumers bring the output into their own
formats with the usual conversions. `gather_whole` keeps table, indices and output on one
tile. A table too large for its column shards (rows x columns-per-tile bytes above a
tile's memory) has no plan (the candidates' memory reasons say so): cutting rows too needs
the kernel's masked select (it already writes zeros for rows it does not hold) followed by
a sum over the row blocks, which is not built.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from ipu_dialects import graph, mid
from passes.operators.base import Candidate, Operator, SelectionContext, TileLowering, tensor_type
from passes.operators.formats import split_format, with_storage
from passes.operators.pointwise import evaluate, lower_pointwise

KERNEL = "gather_rows"


def candidate_outputs(op: graph.GatherOp,
                      ctx: SelectionContext) -> list[tuple[str, mid.TensorFormatAttr]]:
    """The output's last axis cut like the table's (when the table has row axes), and the
    whole output on one tile."""
    out_type = tensor_type(op.result)
    shape = tuple(out_type.get_shape())
    found = []
    if len(tensor_type(op.table).get_shape()) > 1 and shape[-1] > 1:
        axis = len(shape) - 1
        found.append((f"split{axis}", split_format(shape, axis, ctx.tiles, out_type,
                                                   ctx.indivisible)))
    found.append(("whole", split_format(shape, None, ctx.tiles, out_type, ctx.indivisible)))
    return found


def index_format(out_fmt: mid.TensorFormatAttr, rank: int) -> mid.TensorFormatAttr:
    """The indices whole on every tile of the output (one replica per output shard)."""
    return mid.TensorFormatAttr(
        mid.StoragePrecision.I32, mid.ElementOrder.ROW_MAJOR,
        [mid.AxisTilingAttr(1, 1)] * rank, replication=out_fmt.partition_count,
        group=out_fmt.group.data, first_tile=out_fmt.first_tile.data)


def operand_formats(op: graph.GatherOp, out_fmt: mid.TensorFormatAttr
                    ) -> dict[str, mid.TensorFormatAttr] | str:
    """The table cut as the output's row axes (its rows whole), the indices replicated."""
    lead = len(tensor_type(op.indices).get_shape())
    if any(p > 1 for p in out_fmt.partitions[:lead]) or out_fmt.replication.data != 1:
        return "the output's index axes would be cut or replicated (the table is not)"
    table_type = tensor_type(op.table)
    table = with_storage(out_fmt, table_type).with_changes(
        tiling=[mid.AxisTilingAttr(1, 1, out_fmt.tiling.data[0].indivisible.data),
                *out_fmt.tiling.data[lead:]])
    return {"table": table, "indices": index_format(out_fmt, lead)}


class EmbeddingOperator(Operator):
    kind = "gather"
    honours_first_tile = True
    graph_op = graph.GatherOp
    mid_op = mid.GatherOp
    operand_names = ("table", "indices")

    def candidates(self, op: Operation, ctx: SelectionContext) -> list[Candidate]:
        assert isinstance(op, graph.GatherOp)
        return evaluate(op, ctx, self.kind, KERNEL, self.operand_names,
                        lambda out_fmt: operand_formats(op, out_fmt),
                        outputs=candidate_outputs(op, ctx))

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.GatherOp)
        return mid.GatherOp(operands[0], operands[1], result_type, plan)

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.GatherOp)
        return lower_pointwise(op, lowering, [op.table, op.indices],
                               "gather_rows, one call per output shard (its columns of "
                               "every indexed row)")
