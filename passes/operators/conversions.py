"""The conversion operators: `mid.cast_precision` and `mid.rearrange` (created by
`insert-conversions`, never chosen from a graph op).

- A conversion whose result has every shard on the same tile as the input's shard of the same
  elements (same shape, tiling and partitions; no more replicas than the input has) is local:
  one `convert_shard` call per shard, which repacks order, precision and FP8 scale.
- Any other rearrangement gathers: the result is zeroed where it is padded, then the input
  shards travel to the result tiles that hold their elements, several shards per exchange
  phase when their receivers do not meet (`passes/operators/gather.py`: rounds of concurrent
  groups, full duplex where a sender also receives; a sender that holds elements of its own
  shard copies it into its slot), and each result tile takes the elements of a shard it
  holds (`gather_shard`, which also repacks the order).
- A layout op's gather is planned the same way when its index view reads one source axis per
  result axis (a transpose, a slice, a concat input: `gather.separable_axes`); a reshape that
  merges or splits axes keeps the serial gather, as does any gather `gather.plan_rounds`
  finds no split for: for every input shard (a `tile.loop` over the input's tiles) the shard
  is broadcast to every result tile into a staging slot (its own tile copies it there), and
  each result tile takes its elements.

The op count is constant: a gather is a fixed nest of loops whatever the tile count.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from device.index_views import IndexView
from ipu_dialects import mid
from ipu_dialects.locations import value_label
from ipu_dialects.tile import ExchangeOp, KernelOp, LoopOp, TileSetAttr, WorkProvenanceAttr
from passes.operators.base import Operator, TileLowering, tensor_type
from passes.operators.formats import descriptor, geometry_of, shard_words
from passes.operators.gather import (
    COPY_KERNEL,
    lower_concurrent,
    lower_pieces,
    piece_plan,
    plan_rounds,
)
from passes.operators.tile_maps import scalar_map, tiles_of

CONVERT_KERNEL = "convert_shard"
GATHER_KERNEL = "gather_shard"
ZERO_KERNEL = "fill_zero"


def is_local(src: TensorType, dst: TensorType) -> bool:
    """Every result shard sits on a tile that holds the input shard of the same elements."""
    a, b = geometry_of(src), geometry_of(dst)
    return ((a.chunk, a.partitions, a.first_tile) == (b.chunk, b.partitions, b.first_tile)
            and b.replication <= a.replication)


def provenance(lowering: TileLowering, op: Operation, reason: str) -> WorkProvenanceAttr:
    return WorkProvenanceAttr(lowering.source_of(op), value_label(op.results[0]), reason)


def lower_local(op: Operation, lowering: TileLowering, reason: str) -> list[Operation]:
    src, dst = op.operands[0], op.results[0]
    out = lowering.result_buffer(dst)
    inp = lowering.operand_buffer(op, src)
    zero = scalar_map(0, 0)
    scalars = [*descriptor(tensor_type(dst)), *descriptor(tensor_type(src))]
    tiles = tiles_of(geometry_of(tensor_type(dst)))
    return [KernelOp(CONVERT_KERNEL, [(out, zero), (inp, zero)], scalars, tiles, [],
                     provenance(lowering, op, reason))]


def lower_gather(op: Operation, lowering: TileLowering, source: SSAValue | None = None,
                 kernel: str = GATHER_KERNEL, view: IndexView | None = None,
                 zero_padding: bool = True) -> list[Operation]:
    """Gather `source` (default: the op's only operand) into the op's result; a layout op
    passes its view kernel and index view, and zeroes the padding itself."""
    src = op.operands[0] if source is None else source
    dst = op.results[0]
    src_type, dst_type = tensor_type(src), tensor_type(dst)
    a, b = geometry_of(src_type), geometry_of(dst_type)
    out = lowering.result_buffer(dst)
    inp = lowering.operand_buffer(op, src)
    receivers = tiles_of(b)
    words = shard_words(src_type)
    zero0 = scalar_map(0, 0)
    ops: list[Operation] = []
    if zero_padding and b.padded_shape != b.shape:  # the gather writes real elements only
        ops.append(KernelOp(ZERO_KERNEL, [(out, zero0)], [shard_words(dst_type)], receivers, [],
                            provenance(lowering, op, "zero the result's padding")))
    pieces = piece_plan(a, b) if view is None else None
    if pieces is not None:
        return [*ops, *lower_pieces(pieces, out, inp, words,
                                    lambda why: provenance(lowering, op, why))]
    plan = plan_rounds(a, b, view)
    slot = lowering.scratch(f"{out.sym_name.data}_gather_slot", receivers, a.chunk,
                            a.precision, inp.order.data, "standard",
                            lowering.target.vector_alignment)
    scalars = [*descriptor(dst_type), *descriptor(src_type),
               *(view.encode() if view is not None else ())]
    if plan is not None:
        return [*ops, *lower_concurrent(plan, out, inp, slot, words, receivers, kernel,
                                        scalars, lambda why: provenance(lowering, op, why))]
    loop = LoopOp(0, a.partition_count, provenance(lowering, op, "one input shard at a time"))
    loop.induction_var.name_hint = "s"
    ivs = [loop.induction_var]
    # shard s is on tile first_tile + s
    source_tile = AffineMap(1, 0, (AffineExpr.dimension(0) + a.first_tile
                                   if a.first_tile else AffineExpr.dimension(0),))
    zero = scalar_map(1, 0)
    if b.tiles_used > 1 or a.partition_count > 1 or a.first_tile != b.first_tile:
        loop.body.block.add_op(ExchangeOp(
            words, inp, zero, source_tile, slot, zero, receivers, ivs,
            provenance(lowering, op, "input shard s to every result tile"),
        ))
    # the tiles that send and receive
    holders = range(max(a.first_tile, b.first_tile),
                    min(a.first_tile + a.partition_count, b.tile_stop))
    if holders:
        loop.body.block.add_op(KernelOp(
            COPY_KERNEL, [(slot, zero), (inp, zero)], [words],
            TileSetAttr.range(holders.start, holders.stop), ivs,
            provenance(lowering, op, "the input shard's own tile copies it into its slot"),
            on_tile=source_tile,
        ))
    loop.body.block.add_op(KernelOp(
        kernel, [(out, zero), (slot, zero)], scalars, receivers, ivs,
        provenance(lowering, op, "take the elements of shard s this tile holds"),
        iv_scalars=[source_tile],
    ))
    ops.append(loop)
    return ops


class ConversionOperator(Operator):
    """A format conversion (`mid.cast_precision`, `mid.rearrange`): one operand `src`, lowered
    on the tiles of its formats wherever they start (`first_tile`)."""

    honours_first_tile = True
    operand_names = ("src",)


class CastOperator(ConversionOperator):
    kind = "cast"
    mid_op = mid.CastPrecisionOp

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.CastPrecisionOp)
        return lower_local(op, lowering, "cast precision, one call per shard")


class RearrangeOperator(ConversionOperator):
    kind = "rearrange"
    mid_op = mid.RearrangeOp

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.RearrangeOp)
        if is_local(tensor_type(op.input), tensor_type(op.result)):
            return lower_local(op, lowering, "repack each shard on its tile")
        return lower_gather(op, lowering)

