"""The attention operator: `graph.attention` -> `mid.attention` -> the blocked plan's key-block
loop, or one `attention` kernel call per shard of the output.

Tensors are `[..., heads, seq, head_dim]`. The blocked candidates (`attention_blocked_r<R>`,
`planning/attention_plans.py`, lowered by `passes/operators/attention_blocked_lowering.py`) give
every tile R query rows of one batch x head slice and bring the keys and values to it one
64-key block at a time; no tile holds all of a slice's K or V. For causal attention the cyclic
variants (`..._cyclic`) move the query rows so that a tile computes early and late rows
alike. The retained candidates cut one axis of the query and output across the tiles
(`split<axis>`, block 1):
- a leading or head axis: key and value are cut the same way, so each tile holds whole heads;
- the query-row axis (when there are fewer heads than tiles): key and value are whole on
  every tile of the output (replicated), each tile computes its rows (causal masking uses the
  rows' global positions).
Scores, softmax (stable: the row maximum is subtracted) and the product with the values are
FP32 inside the kernel; the result is rounded once to the output precision. Every candidate is
checked against tile memory; the cheapest valid one wins (the retained plans win small cases).
With a key padding mask (`key_mask`, i32, written by the host) only the blocked candidates
are valid: the mask is whole on each of their tiles and their block kernels are the
`_masked` ones; the retained candidates are listed, refused by name (`KEY_MASK_RETAINED`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from device.kernels import f32_bits
from device.model.kernels_attention_blocked import block_symbol
from device.target import Target
from ipu_dialects import graph, mid
from passes.operators.attention_blocked_lowering import lower_attention_blocked
from passes.operators.base import Candidate, Operator, SelectionContext, TileLowering, tensor_type
from passes.operators.costs import conversion_cycles, plan_kernel_cycles
from passes.operators.formats import geometry_of, split_format, storage_of
from passes.operators.pointwise import lower_pointwise, plan_types, pointwise_plan
from planning.attention_plans import (
    blocked_cycles,
    candidate_key_splits,
    candidate_partitions,
    formats_for_shapes,
    layout_failure,
    layout_for,
    memory_failure,
    plan_name,
)
from planning.gemm_memory import DoesNotFit, RowTileBuffer, check_capacity
from planning.gemm_problem import AMP_CONFIG
from planning.memory_allocator import Request
from planning.plan_reasons import MemoryReason

KERNEL = "attention"


def attention_plan(name: str, formats: dict[str, mid.TensorFormatAttr],
                   alignment: int) -> mid.OperatorPlanAttr:
    plan = pointwise_plan(name, KERNEL, formats, alignment)
    return mid.OperatorPlanAttr(
        name, mid.OperatorDispatchAttr(mid.DispatchKind.HEAD_SHARDED, init=KERNEL),
        mid.StoragePrecision.F32, "", list(plan.operands.data), [], "none",
    )


def blocked_plan(name: str, formats: dict[str, mid.TensorFormatAttr], rows: int,
                 precision: str, target: Target) -> mid.OperatorPlanAttr:
    """A blocked candidate: query the AMP's left operand, key and value its right ones; a key
    mask (in `formats` when the op has one) an input the masked kernels read."""
    roles = {"query": (mid.OperandRole.LEFT, target.pace_alignment,
                       target.amp_left_access_tail_bytes),
             "key": (mid.OperandRole.RIGHT, target.pace_alignment, 0),
             "value": (mid.OperandRole.RIGHT, target.pace_alignment, 0),
             "out": (mid.OperandRole.OUTPUT, target.vector_alignment, 0)}
    masked = "key_mask" in formats
    if masked:
        roles["key_mask"] = (mid.OperandRole.INPUT, target.pace_alignment, 0)
    operands = [mid.OperandPlanAttr(o, role, formats[o], align, tail)
                for o, (role, align, tail) in roles.items()]
    dispatch = mid.OperatorDispatchAttr(
        mid.DispatchKind.ATTENTION_BLOCKS, inner=64, columns=rows,
        init=block_symbol(precision, "init", masked),
        accum=block_symbol(precision, "accum", masked))
    return mid.OperatorPlanAttr(name, dispatch, mid.StoragePrecision.F32, AMP_CONFIG[precision],
                                operands, [], "none")


def shards_failure(types: Sequence[TensorType], target: Target) -> str | None:
    """A retained candidate's shards (out, query, key, value) on its fullest tile, against
    tile memory."""
    buffers = {}
    for name, value_type in zip(("out", "query", "key", "value"), types, strict=True):
        nbytes = geometry_of(value_type).shard_bytes()
        buffers[name] = RowTileBuffer(f"its {name} shard", Request(
            -(-nbytes // target.vector_alignment) * target.vector_alignment, 0,
            target.vector_alignment, False, False))
    try:
        check_capacity(buffers, target, "an attention tile")
    except DoesNotFit as failure:
        names = ", ".join(f"{n} {b.extent}" for n, b in buffers.items())
        return MemoryReason(f"{failure} ({names})")
    return None


KEY_MASK_RETAINED = ("the key mask is read by the blocked kernels only (attention_block_*_masked); "
                     "the retained attention kernel has no key mask")


class AttentionOperator(Operator):
    kind = "attention"
    graph_op = graph.AttentionOp
    mid_op = mid.AttentionOp
    operand_names = ("query", "key", "value")

    def plan_operand_names(self, op: Operation) -> tuple[str, ...]:
        return (*self.operand_names, "key_mask") if len(op.operands) == 4 else self.operand_names

    def candidates(self, op: Operation, ctx: SelectionContext) -> list[Candidate]:
        assert isinstance(op, graph.AttentionOp)
        return self.blocked_candidates(op, ctx) + self.retained_candidates(op, ctx)

    def retained_candidates(self, op: graph.AttentionOp,
                            ctx: SelectionContext) -> list[Candidate]:
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
            if op.key_mask is not None:
                candidates.append(Candidate(plan, KEY_MASK_RETAINED, None))
                continue
            types = plan_types(op, self.operand_names, ordered)
            reason = shards_failure(types, ctx.target)
            if reason is not None:
                candidates.append(Candidate(plan, reason, None))
                continue
            cycles = plan_kernel_cycles(
                KERNEL, types, ctx.target,
                extra=(int(op.causal is not None), f32_bits(op.effective_scale())))
            candidates.append(Candidate(plan, None, cycles + self.conversions(op, ordered, ctx)))
        return candidates

    def conversions(self, op: Operation, formats: dict[str, mid.TensorFormatAttr],
                    ctx: SelectionContext) -> int:
        """The operands' conversions into `formats` (the key mask, written by the host in its
        format, needs none)."""
        return sum(conversion_cycles(value, formats[name], ctx)
                   for value, name in zip(op.operands, self.operand_names, strict=False))

    def blocked_candidates(self, op: graph.AttentionOp, ctx: SelectionContext) -> list[Candidate]:
        """One blocked candidate per distinct count of query rows per tile."""
        query_type = tensor_type(op.query)
        shape, key_shape = tuple(query_type.get_shape()), tuple(tensor_type(op.key).get_shape())
        precision, _ = storage_of(query_type)
        candidates = []
        causal, masked = op.causal is not None, op.key_mask is not None
        layouts = [layout_for(shape, key_shape, partitions, precision, causal, cyclic, masked)
                   for partitions in candidate_partitions(math.prod(shape[:-2]), shape[-2],
                                                          ctx.tiles)
                   for cyclic in ((False, True) if causal else (False,))]
        layouts += [replace(layout, key_splits=splits) for layout in layouts
                    for splits in candidate_key_splits(layout, ctx.tiles)]
        for layout in layouts:
            if layout.cyclic and layout.units < 2:
                continue  # one group per tile: the same rows as the contiguous candidate
            formats = formats_for_shapes(layout, shape[:-2], precision, ctx.indivisible)
            plan = blocked_plan(plan_name(layout), formats, layout.rows, precision, ctx.target)
            reason = (layout_failure(layout, ctx.tiles, ctx.indivisible)
                      or memory_failure(layout, ctx.target))
            cycles = None
            if reason is None:
                cycles = (blocked_cycles(layout, ctx.target, ctx.tiles).total
                          + self.conversions(op, formats, ctx))
            candidates.append(Candidate(plan, reason, cycles))
        return candidates

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.AttentionOp)
        return mid.AttentionOp(operands[0], operands[1], operands[2], result_type, plan,
                               op.effective_scale(), op.causal is not None,
                               operands[3] if len(operands) == 4 else None)

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.AttentionOp)
        if op.plan.dispatch.kind.data == mid.DispatchKind.ATTENTION_BLOCKS:
            return lower_attention_blocked(op, lowering)
        return lower_pointwise(
            op, lowering, [op.query, op.key, op.value], "attention, one call per output shard",
            named=(int(op.causal is not None), f32_bits(op.scale.value.data)),
        )
