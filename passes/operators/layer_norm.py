"""The layer_norm operator: `graph.layer_norm` -> `mid.layer_norm` -> one `layer_norm` kernel
call per output shard, or, with the last axis cut, the column-split layer norm.

With whole rows on a tile (the statistics are per row) a candidate either follows the input's
format (when it keeps the last axis whole) or cuts one other axis across the tiles
(`split<axis>`); a single row is computed whole on one tile (`whole`). The input keeps the
output's format (only the precision may differ); weight and bias ([C]) are whole on every
tile of the output, replicated as add's broadcast operands are
(`formats.broadcast_operand_format`). FP32 statistics, one rounding (device kernel).

Where the input's format cuts the last axis C ways (a GEMM's output in 64-column panels),
`layer_norm_cols_<name>` candidates keep that cut (`column_split_outputs`): weight and bias cut
as the last axis, replicated per row part; `layer_norm_stats` on every tile, C exchange phases
in which column part r of every row group sends its statistics block to the group's other
tiles (`statistics_rounds`), then `layer_norm_apply`. Its cost adds the statistics kernel and
the phases to the apply kernel's (`with_statistics`), so the residual stream between a GEMM
and the next one need not be gathered into whole rows and back.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from device.kernels import f32_bits
from device.model.cycles import STATS_PER_ROW
from device.model.kernels_layer_norm import stats_geometry, stats_rows
from device.target import WORD_BYTES, Target
from ipu_dialects import graph, mid
from ipu_dialects.locations import value_label
from ipu_dialects.tile import ExchangeOp, KernelOp, LoopOp, WorkProvenanceAttr
from passes.operators.base import (
    Assumed,
    Candidate,
    SelectionContext,
    TileLowering,
    format_of,
    tensor_type,
    wanted_formats,
)
from passes.operators.costs import round_phases_cycles, shard_kernel_cycles
from passes.operators.formats import (
    broadcast_operand_format,
    descriptor,
    geometry_of,
    split_format,
    tensor_format_of,
    with_storage,
)
from passes.operators.gather import GatherRounds
from passes.operators.pointwise import (
    PointwiseOperator,
    evaluate,
    fitting_first,
    lower_pointwise,
    output_formats,
)
from passes.operators.tile_maps import scalar_map, tiles_of
from planning.shard_geometry import ShardGeometry, geometry

KERNEL = "layer_norm"
STATS_KERNEL = "layer_norm_stats"
APPLY_KERNEL = "layer_norm_apply"


def candidate_outputs(op: Operation, ctx: SelectionContext,
                      assumed: Assumed) -> list[tuple[str, mid.TensorFormatAttr]]:
    """The pointwise candidates (follow, split<axis>), the input's cut with whole rows
    (`rows_of_input`), for an input that has no format yet (a graph input, which the host
    writes as its consumer wants) the formats its result's planned consumers want
    (`wanted<i>`: the next GEMM's A panels, which the column split keeps), and the whole
    tensor on one tile."""
    out_type = tensor_type(op.results[0])
    whole = split_format(out_type.get_shape(), None, ctx.tiles, out_type, ctx.indivisible)
    found = output_formats(op, ctx, assumed)
    found += [(name, fmt) for name, fmt in rows_of_input(op, ctx, assumed)
              if all(fmt != known for _, known in found)]
    found += [(name, fmt) for name, fmt in wanted_by_consumers(op, ctx, assumed)
              if all(fmt != known for _, known in found)]
    return found if any(fmt == whole for _, fmt in found) else [*found, ("whole", whole)]


def wanted_by_consumers(op: Operation, ctx: SelectionContext,
                        assumed: Assumed) -> list[tuple[str, mid.TensorFormatAttr]]:
    """For an input with no format yet, the formats the result's planned consumers want,
    stored as the result."""
    if format_of(op.operands[0], assumed) is not None:
        return []
    out_type = tensor_type(op.results[0])
    return [(f"wanted{index}", with_storage(fmt, out_type))
            for index, fmt in enumerate(wanted_formats(ctx, op.results[0]))]


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

        def with_vectors(out_fmt: mid.TensorFormatAttr, src: mid.TensorFormatAttr,
                         refusal: str):
            """src, and weight and bias broadcast against the output (`refusal` when not)."""
            formats = {"src": src}
            for name, value in (("weight", op.weight), ("bias", op.bias)):
                fmt = broadcast_operand_format(out_fmt, out_shape, tensor_type(value))
                if fmt is None:
                    return f"{name} {refusal}"
                formats[name] = fmt
            return formats

        def operand_formats(out_fmt: mid.TensorFormatAttr):
            if out_fmt.partitions[-1] > 1:
                return "the normalized last axis would be cut across tiles"
            return with_vectors(out_fmt, with_storage(out_fmt, tensor_type(op.input)),
                                "cannot be whole on every tile of a replicated output")

        def split_formats(out_fmt: mid.TensorFormatAttr):
            # a moved candidate reads its input converted to where it is
            src = sources.get(out_fmt, with_storage(out_fmt, tensor_type(op.input)))
            return with_vectors(out_fmt, src, "cannot be cut as the output's last axis")

        named = (f32_bits(op.eps.value.data),)
        outputs = candidate_outputs(op, ctx, assumed)
        whole_rows = evaluate(op, ctx, self.kind, KERNEL, self.operand_names, operand_formats,
                              named=named, outputs=outputs, assumed=assumed)
        split_kinds = column_split_kinds(op, outputs) if ctx.layer_norm_columns else []
        if not split_kinds:
            return whole_rows
        sources = {out_fmt: src_fmt for _, out_fmt, src_fmt in split_kinds}
        cut = [(name, out_fmt) for name, out_fmt, _ in split_kinds]
        split = evaluate(op, ctx, f"{self.kind}_cols", APPLY_KERNEL, self.operand_names,
                         split_formats, named=named, outputs=cut, assumed=assumed,
                         kernel_cost=lambda types: apply_cycles(types, named, ctx.target))
        # what fits beside the tiles' contents is preferred over both kinds at once
        return fitting_first(op, self.operand_names,
                             whole_rows + [with_statistics(c, op, ctx) for c in split], ctx)

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        assert isinstance(op, graph.LayerNormOp)
        return mid.LayerNormOp(operands[0], operands[1], operands[2], result_type, plan,
                               op.eps.value.data)

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.LayerNormOp)
        if op.plan.dispatch.init_symbol == APPLY_KERNEL:
            return lower_column_split(op, lowering)
        return lower_pointwise(op, lowering, [op.input, op.weight, op.bias],
                               "layer_norm, one call per output shard (whole rows)",
                               named=(f32_bits(op.eps.value.data),))


# ---- the column-split layer norm -------------------------------------------------------------


def column_split_outputs(op: Operation, outputs: list[tuple[str, mid.TensorFormatAttr]]
                         ) -> list[tuple[str, mid.TensorFormatAttr]]:
    """The candidate outputs that cut the last axis of rows (rank >= 2, stored once): the
    formats the column-split layer norm keeps."""
    rank = len(tensor_type(op.results[0]).get_shape())
    return [(name, fmt) for name, fmt in outputs
            if rank >= 2 and fmt.partitions[-1] > 1 and fmt.replication.data == 1]


def column_split_kinds(op: Operation, outputs: list[tuple[str, mid.TensorFormatAttr]]
                       ) -> list[tuple[str, mid.TensorFormatAttr, mid.TensorFormatAttr]]:
    """(name, output format, input format) of each column-split candidate: the input read in
    the candidate's cut as the input is stored, the output stored standard, and a GEMM's
    amp_output panels as amp_left (the same bytes for a shard of whole 64-column panels), so
    that the next GEMM reads its A where the layer norm wrote it and interleaved memory holds
    only what the AMP streams."""
    src_type = tensor_type(op.operands[0])
    found: dict[mid.TensorFormatAttr, tuple[str, mid.TensorFormatAttr]] = {}
    for name, fmt in column_split_outputs(op, outputs):
        order = (mid.ElementOrder.AMP_LEFT if fmt.order.data == mid.ElementOrder.AMP_OUTPUT
                 else fmt.order.data)
        out = fmt.with_changes(order=order, memory=mid.MemoryClass.STANDARD)
        found.setdefault(out, (name, with_storage(fmt, src_type)))
    return [(name, out, src) for out, (name, src) in found.items()]


def statistics_rounds(src: ShardGeometry) -> GatherRounds:
    """The statistics exchange: in round r, column part r of every row group (tile g C + r
    from the first tile) sends its block to the group's C tiles (the sender receives
    nothing): C rounds of one group per row group."""
    parts = src.partitions[-1]
    return GatherRounds(rounds=parts, groups=math.prod(src.partitions[:-1]), inner=parts,
                        shift=(0, 0, 0, parts), base=tuple(range(parts)), copiers=(),
                        has_traffic=True, tile_base=src.first_tile)


def block_words(src: ShardGeometry) -> int:
    """Words of one column part's statistics block: (mean, M2) of each row."""
    return stats_rows(src) * STATS_PER_ROW


def apply_cycles(types: list[TensorType], named: Sequence[int], target: Target) -> int:
    """The `layer_norm_apply` call on the plan's types (out, src, weight, bias) and the
    statistics."""
    shards = [geometry_of(t) for t in types]
    return shard_kernel_cycles(APPLY_KERNEL, [*shards, stats_geometry(shards[1])], target,
                               named)


def with_statistics(found: Candidate, op: Operation, ctx: SelectionContext) -> Candidate:
    """`found` (priced with its apply kernel) with the statistics kernel and the exchange's
    phases added, as the device model charges them."""
    if found.cycles is None:
        return found
    src = geometry(tensor_type(op.results[0]).get_shape(), found.plan.operand_plan("src").format)
    kernel = shard_kernel_cycles(STATS_KERNEL, [stats_geometry(src), src], ctx.target)
    phases = round_phases_cycles(statistics_rounds(src), block_words(src), ctx.target)
    return dataclasses.replace(found, cycles=found.cycles + kernel + phases)


def lower_column_split(op: mid.LayerNormOp, lowering: TileLowering) -> list[Operation]:
    """`layer_norm_stats` on every tile of the output, the statistics exchange in a loop of
    C rounds, `layer_norm_apply` on every tile."""
    out = op.results[0]
    src_type = tensor_type(op.input)
    src = geometry(src_type.get_shape(), tensor_format_of(op.input))
    tiles = tiles_of(src)
    buffers = [lowering.result_buffer(out),
               *(lowering.operand_buffer(op, v) for v in (op.input, op.weight, op.bias))]
    stats_geom = stats_geometry(src)
    name = buffers[0].sym_name.data
    stats = lowering.scratch(f"{name}_stats", tiles, stats_geom.chunk, "f32", "row_major",
                             "standard", lowering.target.vector_alignment)
    source, label = lowering.source_of(op), value_label(out)

    def provenance(reason: str) -> WorkProvenanceAttr:
        return WorkProvenanceAttr(source, label, reason)

    zero = scalar_map(0, 0)
    stats_words = tuple(stats_geom.encode())
    compute = KernelOp(STATS_KERNEL, [(stats, zero), (buffers[1], zero)],
                       [*stats_words, *descriptor(src_type)], tiles, [],
                       provenance("each row's mean and M2 over this tile's columns"))
    rounds = statistics_rounds(src)
    loop = LoopOp(0, rounds.rounds, provenance("the row group's column parts, one a round"))
    loop.induction_var.name_hint = "r"
    words = block_words(src)
    block = AffineMap(1, 0, (AffineExpr.dimension(0) * (words * WORD_BYTES),))
    loop.body.block.add_op(ExchangeOp(
        words, stats, block, rounds.sender_map(), stats, block, rounds.destinations(),
        [loop.induction_var], provenance("column part r's statistics to its row group"),
        (rounds.groups, rounds.shift_map())))
    values = (out, op.input, op.weight, op.bias)
    scalars = [f32_bits(op.eps.value.data),
               *(w for value in values for w in descriptor(tensor_type(value))), *stats_words]
    apply = KernelOp(APPLY_KERNEL, [(b, zero) for b in (*buffers, stats)], scalars, tiles, [],
                     provenance("merge the column parts' statistics, normalize this tile's "
                                "columns"))
    return [compute, loop, apply]
