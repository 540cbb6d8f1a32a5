"""The attention operator: `graph.attention` -> `mid.attention` -> one `attention` kernel call
per shard of the output.

Tensors are `[..., heads, seq, head_dim]`. A candidate cuts one axis of the query and output
across the tiles (`split<axis>`, block 1):
- a leading or head axis: key and value are cut the same way, so each tile holds whole heads;
- the query-row axis (when there are fewer heads than tiles): key and value are whole on
  every tile of the output (replicated), each tile computes its rows (causal masking uses the
  rows' global positions).
Scores, softmax (stable: the row maximum is subtracted) and the product with the values are
FP32 inside the kernel; the result is rounded once to the output precision.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from device.kernels import f32_bits
from ipu_dialects import graph, mid
from passes.operators.base import Candidate, Operator, SelectionContext, TileLowering, tensor_type
from passes.operators.costs import conversion_cycles, plan_kernel_cycles
from passes.operators.formats import split_format
from passes.operators.pointwise import lower_pointwise, plan_types, pointwise_plan

KERNEL = "attention"


def attention_plan(name: str, formats: dict[str, mid.TensorFormatAttr],
                   alignment: int) -> mid.OperatorPlanAttr:
    plan = pointwise_plan(name, KERNEL, formats, alignment)
    return mid.OperatorPlanAttr(
        name, mid.OperatorDispatchAttr(mid.DispatchKind.HEAD_SHARDED, init=KERNEL),
        mid.StoragePrecision.F32, "", list(plan.operands.data), [], "none",
    )


class AttentionOperator(Operator):
    kind = "attention"
    graph_op = graph.AttentionOp
    mid_op = mid.AttentionOp
    operand_names = ("query", "key", "value")

    def candidates(self, op: Operation, ctx: SelectionContext) -> list[Candidate]:
        assert isinstance(op, graph.AttentionOp)
        query_type = tensor_type(op.query)
        shape = tuple(query_type.get_shape())
        rows_axis = len(shape) - 2
        candidates = []
        for axis in range(len(shape) - 1):
            if shape[axis] == 1 and axis != rows_axis:
                continue
            parts = min(ctx.tiles, shape[axis])
            query_fmt = split_format(shape, axis, ctx.tiles, query_type, ctx.indivisible)
            formats = {"query": query_fmt, "out": split_format(
                shape, axis, ctx.tiles, tensor_type(op.result), ctx.indivisible)}
            for name, value in (("key", op.key), ("value", op.value)):
                value_type = tensor_type(value)
                kv_shape = tuple(value_type.get_shape())
                if axis == rows_axis:
                    formats[name] = split_format(kv_shape, None, ctx.tiles, value_type,
                                                 ctx.indivisible, replication=parts)
                else:
                    formats[name] = split_format(kv_shape, axis, ctx.tiles, value_type,
                                                 ctx.indivisible)
            ordered = {n: formats[n] for n in (*self.operand_names, "out")}
            plan = attention_plan(f"attention_split{axis}", ordered, ctx.target.vector_alignment)
            cycles = plan_kernel_cycles(
                KERNEL, plan_types(op, self.operand_names, ordered), ctx.target,
                extra=(int(op.causal is not None), f32_bits(op.effective_scale())))
            for value, name in zip(op.operands, self.operand_names, strict=True):
                cycles += conversion_cycles(value, ordered[name], ctx)
            candidates.append(Candidate(plan, None, cycles))
        return candidates

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.AttentionOp)
        return mid.AttentionOp(operands[0], operands[1], operands[2], result_type, plan,
                               op.effective_scale(), op.causal is not None)

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.AttentionOp)
        return lower_pointwise(
            op, lowering, [op.query, op.key, op.value], "attention, one call per output shard",
            named=(int(op.causal is not None), f32_bits(op.scale.value.data)),
        )
