"""The layout operators: `graph.reshape`, `graph.transpose`, `graph.slice`, `graph.concat` ->
`mid.reshape` / `mid.transpose` / `mid.slice` / `mid.concat` -> element copies through an
index view (`device/index_views.py`), no arithmetic.

Each operand maps to the result by one index view (a concat input: a window of the result
along the joined axis). An operand keeps the format it has (a fresh graph input: the split,
or the whole tensor, that the result can take tile-locally), and each candidate cuts one axis
of the result across the tiles (`split<axis>`), carries the operand's own cut through the op
(`mirror`, `passes/operators/layout_mirror.py`: a batched GEMM's output cut on batch, rows and columns), or
takes the format a GEMM or attention consumer's plan wants the result in (`consumer`: the
copy is then that consumer's conversion, done once). Per operand the copy is
- tile-local when every result element's source sits in the operand's shard on the result
  element's tile: one `view_shard` call per result shard, no exchange; e.g. a slice of the
  columns of a row-split matrix, or a transpose that keeps the split axis;
- otherwise a gather (`conversions.lower_gather`): rounds of operand shards sent at once to
  the result tiles that read them (`gather.read_ranges`), or where the view has no read
  ranges a loop over the operand's shards, each broadcast to the result's tiles; each result
  tile's `gather_view` takes the elements it holds, from a slot of one operand shard.
The cheapest candidate wins (kernel, exchange and copy cycles, from the device model's
functions, and what the result's layout consumers then take); the slot counts against tile
memory, and a candidate that leaves a layout consumer with no valid plan loses to any valid
one. The result's padding is zeroed once, before the copies.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from device import kernels
from device.index_views import IndexView, row_major_strides
from device.model import cycles as device_cycles
from device.model.view_steps import view_step
from device.target import WORD_BYTES, Target
from ipu_dialects import graph, mid
from ipu_dialects.tile import KernelOp
from passes.operators.base import (
    STARVES_A_CONSUMER,
    Assumed,
    Candidate,
    GivenFormatsOperator,
    SelectionContext,
    TileLowering,
    consumers_cycles,
    format_of,
    tensor_type,
    unless_every_one_starves,
    wanted_formats,
)
from passes.operators.conversions import ZERO_KERNEL, lower_gather, provenance
from passes.operators.costs import (
    gather_cycles,
    round_phases_cycles,
    round_takes_cycles,
    shard_memory_reason,
)
from passes.operators.formats import descriptor, geometry_of, shard_words, split_format, storage_of
from passes.operators.gather import plan_rounds, read_ranges, view_receivers
from passes.operators.layout_mirror import permuted_format, reshaped_format, transposed_format
from passes.operators.pointwise import pointwise_plan
from passes.operators.tile_maps import scalar_map, tiles_of
from planning.shard_geometry import ShardGeometry
from planning.target_memo import TargetMemo

LOCAL_KERNEL = "view_shard"
GATHER_KERNEL = "gather_view"


# ---- index views of the four ops (graph and mid ops share the attribute names) --------------
def shape_of(value: SSAValue) -> tuple[int, ...]:
    return tuple(tensor_type(value).get_shape())


def whole_window(shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (0,) * len(shape), shape


def reshape_views(op: Operation) -> list[IndexView]:
    out = shape_of(op.results[0])
    return [IndexView(*whole_window(out), row_major_strides(out), 0)]


def transpose_views(op: graph.TransposeOp | mid.TransposeOp) -> list[IndexView]:
    strides = row_major_strides(shape_of(op.operands[0]))
    permutation = op.permutation.get_values()
    return [IndexView(*whole_window(shape_of(op.results[0])),
                      tuple(strides[p] for p in permutation), 0)]


def slice_views(op: Operation) -> list[IndexView]:
    strides = row_major_strides(shape_of(op.operands[0]))
    starts, steps = (getattr(op, n).get_values() for n in ("starts", "steps"))
    return [IndexView(*whole_window(shape_of(op.results[0])),
                      tuple(s * k for s, k in zip(strides, steps)),
                      sum(s * a for s, a in zip(strides, starts)))]


def concat_views(op: graph.ConcatOp | mid.ConcatOp) -> list[IndexView]:
    axis = op.axis.value.data
    out = shape_of(op.results[0])
    views, offset = [], 0
    for value in op.operands:
        shape = shape_of(value)
        starts = tuple(offset if a == axis else 0 for a in range(len(out)))
        stops = tuple(offset + shape[a] if a == axis else out[a] for a in range(len(out)))
        views.append(IndexView(starts, stops, row_major_strides(shape), 0))
        offset += shape[axis]
    return views


# ---- locality and cost ------------------------------------------------------------------------
@functools.lru_cache(maxsize=1024)
def is_local_view(view: IndexView, src_type: TensorType, out_type: TensorType) -> bool:
    """Every result element of the view's window has its source in the operand's shard on the
    result element's tile. Once per (view, types): the selector asks for every candidate's
    source options, the lowering for the chosen one again, and each answer walks every tile."""
    out, src = geometry_of(out_type), geometry_of(src_type)
    if out.first_tile < src.first_tile or out.tile_stop > src.tile_stop:
        return False
    by_receivers = local_by_receivers(view, src, out)
    if by_receivers is not None:
        return by_receivers
    # what `view_shard` would move on every result tile at once, from the tile's own shard
    tiles = np.arange(out.first_tile, out.tile_stop, dtype=np.int64)
    return not view_step(out, src, view, tiles, None).missing.any()


def local_by_receivers(view: IndexView, src: ShardGeometry, out: ShardGeometry) -> bool | None:
    """`is_local_view` from the gather's receivers (`gather.read_ranges`), all tiles at once,
    between unreplicated formats: local when no result tile reads a shard that sits on
    another tile; not local when one does and the ranges are exact; None otherwise."""
    ranges = read_ranges(view, src, out)
    if ranges is None or max(src.replication, out.replication) > 1:
        return None
    need = view_receivers(src, out, ranges)
    sender = src.first_tile + np.arange(src.partition_count)[:, None]
    receiver = out.first_tile + np.arange(out.tiles_used)[None, :]
    local = not bool((need & (sender != receiver)).any())
    return local if local or ranges[1] else None  # an inexact "reads another tile": walk


def view_words(view: IndexView, src_type: TensorType, out_type: TensorType) -> list[int]:
    return [*descriptor(out_type), *descriptor(src_type), *view.encode()]


def kernel_cycles(symbol: str, scalars: Sequence[int], out_type: TensorType,
                  target: Target) -> int:
    """On the tiles where it costs most (the first and the last result shard)."""
    geom = geometry_of(out_type)
    return max(kernels.kernel_cycles(symbol, scalars, tile, target)
               for tile in {geom.first_tile, geom.tile_stop - 1})


def copy_cycles(view: IndexView, src_type: TensorType, out_type: TensorType,
                ctx: SelectionContext, exact: bool = False) -> tuple[int, bool]:
    """Cycles of one operand's copy into the result, and whether it is tile-local (else a
    gather: concurrent rounds where the view reads one source axis per result axis,
    `gather.separable_axes`, else one exchange phase per source shard). Ranking prices each
    round's take as one shard's (`exact` False); the chosen plan's estimate takes every
    round's as the model charges it (`LayoutOperator.choose`), which costs a compile more
    than ranking can afford (every view gather of every candidate, looked ahead at)."""
    # once per view, types and target: a layout op's candidates are priced again by the ops
    # before it that look ahead at them (`LookAhead.consumers_cycles`), and the chains
    # of a transformer's Q, K and V repeat the same copies
    return KNOWN_COPIES.get((view, src_type, out_type, exact), ctx.target,
                            lambda: priced_copy(view, src_type, out_type, ctx.target, exact))


KNOWN_COPIES: TargetMemo[tuple[int, bool]] = TargetMemo(4096)


def priced_copy(view: IndexView, src_type: TensorType, out_type: TensorType,
                target: Target, exact: bool) -> tuple[int, bool]:
    words = view_words(view, src_type, out_type)
    if is_local_view(view, src_type, out_type):
        return kernel_cycles(LOCAL_KERNEL, words, out_type, target), True
    src, out = geometry_of(src_type), geometry_of(out_type)
    sources, receivers = src.partition_count, out.tiles_used
    shard = shard_words(src_type)
    # the farthest of the tiles the shards leave from and arrive at
    span = max(src.first_tile + sources, out.tile_stop)
    latency = (target.max_latency(span)
               if receivers > 1 or src.first_tile != out.first_tile else 0)
    rounds = plan_rounds(src, out, view)
    if exact and rounds is not None and rounds.takes_once:  # each round's take as charged
        return (round_phases_cycles(rounds, shard, target)
                + round_takes_cycles(rounds, out, src, target, tuple(words))), False
    return gather_cycles(rounds, sources,
                         device_cycles.exchange_step_cycles(shard + latency, target),
                         device_cycles.copy_cycles(shard * WORD_BYTES, target),
                         kernel_cycles(GATHER_KERNEL, [src.first_tile, *words], out_type,
                                       target), target, shard), False


def with_format(value: SSAValue, fmt: mid.TensorFormatAttr) -> TensorType:
    value_type = tensor_type(value)
    return TensorType(value_type.get_element_type(), value_type.get_shape(), fmt)


def copied_storage(op: Operation) -> tuple[str, int]:
    """The (precision, scale) the copies move, the same for every operand and the result,
    since a view copies codes bit-exactly: the operands' own when they agree (a differing
    declared result scale is then one cast of the result, after the copy), else the declared
    result's (each operand is cast to it first, which rounds each element exactly as the
    reference rounds the result; copying at operand 0's scale would misread the others)."""
    storages = {storage_of(tensor_type(value)) for value in op.operands}
    if len(storages) == 1:
        return storages.pop()
    return storage_of(tensor_type(op.results[0]))


def source_options(value: SSAValue, ctx: SelectionContext,
                   assumed: Assumed) -> list[mid.TensorFormatAttr]:
    """The formats an operand may have: its own (or the one `assumed` for it), or for a fresh
    graph input what the host may write (input policy `consumer`: any split or the whole;
    `row_major`: the whole)."""
    fmt = format_of(value, assumed)
    if fmt is not None:
        return [fmt]
    value_type, shape = tensor_type(value), shape_of(value)
    whole = split_format(shape, None, ctx.tiles, value_type, ctx.indivisible)
    if ctx.inputs != mid.InputPolicy.CONSUMER:
        return [whole]
    splits = [split_format(shape, a, ctx.tiles, value_type, ctx.indivisible)
              for a in range(len(shape)) if shape[a] > 1]
    return [*splits, whole]


def output_splits(op: Operation, ctx: SelectionContext,
                  assumed: Assumed) -> list[tuple[int, int]]:
    """(axis, partitions) of the result's candidate splits: each axis across all the tiles it
    can use, and across as many tiles as an operand's format cuts one of its axes into (so
    that a result can line up with an operand that uses fewer tiles: tile-local)."""
    shape = shape_of(op.results[0])
    counts = {ctx.tiles}
    for value in op.operands:
        fmt = format_of(value, assumed)
        counts |= {p for p in (fmt.partitions if fmt else ()) if p > 1}
    found = []
    for axis, extent in enumerate(shape):
        if extent == 1 and axis != len(shape) - 1:
            continue
        for parts in sorted({min(c, extent) for c in counts}, reverse=True):
            found.append((axis, parts))
    return found


class LayoutOperator(GivenFormatsOperator):
    """What the four layout operators share; each names its ops and its index views."""

    operand_names = ("src",)
    honours_first_tile = True

    def views(self, op: Operation) -> list[IndexView]:
        raise NotImplementedError

    def choose(self, op: Operation, ctx: SelectionContext) -> Candidate:
        """The cheapest candidate, its estimate with its gathers' round takes priced as the
        model charges them (`copy_cycles`, exact)."""
        chosen = super().choose(op, ctx)
        out_type = with_format(op.results[0], chosen.plan.operand_plan("out").format)
        delta = 0
        for name, value, view in zip(self.plan_operand_names(op), op.operands, self.views(op),
                                     strict=True):
            src_type = with_format(value, chosen.plan.operand_plan(name).format)
            delta += (copy_cycles(view, src_type, out_type, ctx, exact=True)[0]
                      - copy_cycles(view, src_type, out_type, ctx)[0])
        return dataclasses.replace(chosen, cycles=chosen.valid_cycles + delta)

    def candidates_given(self, op: Operation, ctx: SelectionContext,
                         assumed: Assumed) -> list[Candidate]:
        """The candidates with the operands in `assumed` taken as stored in those formats."""
        out_value = op.results[0]
        precision, scale = copied_storage(op)
        views = self.views(op)
        names = self.plan_operand_names(op)
        candidates = []
        for cut, out_fmt in self.result_formats(op, ctx, assumed):
            out_fmt = out_fmt.with_changes(precision=precision, scale=scale)
            out_type = with_format(out_value, out_fmt)
            formats, cycles, local, slot = {}, 0, True, 0
            for name, value, view in zip(names, op.operands, views, strict=True):
                options = [f.with_changes(precision=precision, scale=scale)
                           for f in source_options(value, ctx, assumed)]
                costed = [(*copy_cycles(view, with_format(value, f), out_type, ctx), f)
                          for f in options]
                cost, is_local, fmt = min(costed, key=lambda c: c[0])
                formats[name] = fmt
                cycles += cost
                local = local and is_local
                if not is_local:  # the result tiles stage one shard of it at a time
                    slot = max(slot, geometry_of(with_format(value, fmt)).shard_bytes())
            geom = geometry_of(out_type)
            if geom.padded_shape != geom.shape:
                cycles += device_cycles.fill_zero_cycles(shard_words(out_type), ctx.target)
            # a chain of layout ops: what the next one takes
            consumers = consumers_cycles(ctx, out_value, out_fmt)
            cycles += consumers or 0
            formats["out"] = out_fmt
            how = "local" if local else "gather"
            plan = pointwise_plan(f"{self.kind}_{cut}_{how}",
                                  LOCAL_KERNEL if local else GATHER_KERNEL, formats,
                                  ctx.target.vector_alignment)
            types = [with_format(v, formats[n])
                     for v, n in zip((out_value, *op.operands), ("out", *names), strict=True)]
            reason = shard_memory_reason(types, ctx.target, slot)
            if reason is None and consumers is None:
                reason = STARVES_A_CONSUMER
            candidates.append(Candidate(plan, reason, cycles, consumers or 0))
        return unless_every_one_starves(candidates)

    def result_formats(self, op: Operation, ctx: SelectionContext,
                       assumed: Assumed) -> list[tuple[str, mid.TensorFormatAttr]]:
        """(name, format) of each candidate result format: one axis cut across the tiles
        (`split<axis>`), the operand's cut carried through the op (`mirror`,
        `passes/operators/layout_mirror.py`), and the format a GEMM or attention consumer's plan wants the
        result in (`consumer`: the op's copy is then that consumer's conversion)."""
        shape = shape_of(op.results[0])
        first = tensor_type(op.operands[0])
        found = [(f"split{axis}" if parts >= min(ctx.tiles, shape[axis]) else
                  f"split{axis}x{parts}", split_format(shape, axis, parts, first, ctx.indivisible))
                 for axis, parts in output_splits(op, ctx, assumed)]
        fmt = format_of(op.operands[0], assumed) if len(op.operands) == 1 else None
        mirror = None if fmt is None else self.mirrored_format(op, fmt)
        if mirror is not None and mirror.group.data <= ctx.tiles:
            found.append(("mirror", mirror))
        permuted = None if fmt is None or mirror is not None else self.permuted_format(op, fmt)
        if permuted is not None and permuted.group.data <= ctx.tiles:
            found.append(("permuted", permuted))
        found += [("consumer", wanted) for wanted in wanted_formats(ctx, op.results[0])
                  if wanted.replication.data == 1]
        unique: dict[mid.TensorFormatAttr, str] = {}
        for name, out_fmt in found:
            unique.setdefault(out_fmt, name)
        return [(name, out_fmt) for out_fmt, name in unique.items()]

    def mirrored_format(self, op: Operation,
                        fmt: mid.TensorFormatAttr) -> mid.TensorFormatAttr | None:
        """The result format that carries the operand's cut `fmt` through the op, if any."""
        return None

    def permuted_format(self, op: Operation,
                        fmt: mid.TensorFormatAttr) -> mid.TensorFormatAttr | None:
        """The operand's cut carried through the op with its shards moved whole between tiles
        (a transpose that reorders cut axes), if any."""
        return None

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        out_value = op.results[0]
        out_type = tensor_type(out_value)
        out = lowering.result_buffer(out_value)
        geom = geometry_of(out_type)
        tiles = tiles_of(geom)
        zero = scalar_map(0, 0)
        work: list[Operation] = []
        if geom.padded_shape != geom.shape:  # the copies write real elements only
            work.append(KernelOp(ZERO_KERNEL, [(out, zero)], [shard_words(out_type)], tiles, [],
                                 provenance(lowering, op, "zero the result's padding")))
        for value, view in zip(op.operands, self.views(op), strict=True):
            src_type = tensor_type(value)
            words = view_words(view, src_type, out_type)
            if is_local_view(view, src_type, out_type):
                work.append(KernelOp(
                    LOCAL_KERNEL, [(out, zero), (lowering.operand_buffer(op, value), zero)],
                    words, tiles, [],
                    provenance(lowering, op,
                               f"{self.kind}: copy each shard's elements on its tile"),
                ))
            else:
                work.extend(lower_gather(op, lowering, value, GATHER_KERNEL, view,
                                         zero_padding=False))
        return work


class ReshapeOperator(LayoutOperator):
    kind = "reshape"
    graph_op = graph.ReshapeOp
    mid_op = mid.ReshapeOp

    def views(self, op: Operation) -> list[IndexView]:
        return reshape_views(op)

    def mirrored_format(self, op: Operation,
                        fmt: mid.TensorFormatAttr) -> mid.TensorFormatAttr | None:
        return reshaped_format(fmt, reshape_views(op)[0], shape_of(op.operands[0]),
                               shape_of(op.results[0]))

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        return mid.ReshapeOp(operands[0], result_type, plan)


class TransposeOperator(LayoutOperator):
    kind = "transpose"
    graph_op = graph.TransposeOp
    mid_op = mid.TransposeOp

    def views(self, op: Operation) -> list[IndexView]:
        assert isinstance(op, graph.TransposeOp | mid.TransposeOp)
        return transpose_views(op)

    def mirrored_format(self, op: Operation,
                        fmt: mid.TensorFormatAttr) -> mid.TensorFormatAttr | None:
        assert isinstance(op, graph.TransposeOp | mid.TransposeOp)
        return transposed_format(fmt, op.permutation.get_values())

    def permuted_format(self, op: Operation,
                        fmt: mid.TensorFormatAttr) -> mid.TensorFormatAttr | None:
        assert isinstance(op, graph.TransposeOp | mid.TransposeOp)
        return permuted_format(fmt, op.permutation.get_values())

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.TransposeOp)
        return mid.TransposeOp(operands[0], result_type, plan, op.permutation.get_values())


class SliceOperator(LayoutOperator):
    kind = "slice"
    graph_op = graph.SliceOp
    mid_op = mid.SliceOp

    def views(self, op: Operation) -> list[IndexView]:
        return slice_views(op)

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.SliceOp)
        return mid.SliceOp(operands[0], result_type, plan, op.starts.get_values(),
                           op.ends.get_values(), op.steps.get_values())


class ConcatOperator(LayoutOperator):
    kind = "concat"
    graph_op = graph.ConcatOp
    mid_op = mid.ConcatOp

    def plan_operand_names(self, op: Operation) -> tuple[str, ...]:
        return mid.concat_operand_names(len(op.operands))

    def views(self, op: Operation) -> list[IndexView]:
        assert isinstance(op, graph.ConcatOp | mid.ConcatOp)
        return concat_views(op)

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.ConcatOp)
        return mid.ConcatOp(operands, result_type, plan, op.axis.value.data)
