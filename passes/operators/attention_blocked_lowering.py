"""The tile work of the blocked attention plan (`attention_blocks` dispatch,
`planning/attention_plans.py`).

With S slices of P tiles (tile s * P + p), kc key blocks per holder tile:

    phase j = 0 (init), then tile.loop %j = 1 to nK:
      exchange key block j of every slice (S groups): from tile s * P + j floordiv kc to the
        key slot of the other tiles of slice s        (none when P = 1)
      the same for the value block
      attention_block init (j = 0) / accum on every tile, iv_scalars [j]: the holder reads
        the blocks where they live (`home`), the others from their slots
    attention_finish on every tile: out = acc / l

With the key split (L layers, `attention_blocked_r<R>_k<L>`): before the loop one phase per
later layer copies each tile's query rows to its tiles (`<out>_query_copy`); the loop runs
nK / L steps, step j exchanging, for every layer l, block l * nK / L + j to that layer's tiles
(a key and a value phase per layer, or one for all layers when they are alike:
`BlockedLayout.block_phases`), and one block call on the tiles of every layer
(each tile takes its layer's block: `cycles_attention.tile_position`). After the loop, per
later layer, its accumulator and its max and sum go to the first layer's tiles of the same
rows (`<out>_acc_in`, `<out>_stats_in`) and `attention_merge` folds them in; the finish runs
on the first layer.

With a key mask the block kernels are the `_masked` ones: every tile also reads the whole
i32 mask (host-written, one copy per tile) and masks its batch row's keys whose entry is 0.
The op count is a constant per attention: the key-block loop stays a loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from device.kernels import f32_bits
from device.layouts import AMP_BLOCK, element_bytes
from device.model.cycles_attention import KEY_BLOCK, STATE_WORDS
from device.target import WORD_BYTES
from ipu_dialects import mid
from ipu_dialects.locations import value_label
from ipu_dialects.tile import (
    BufferOp,
    ExchangeOp,
    HomeView,
    KernelOp,
    TileSetAttr,
    WorkProvenanceAttr,
)
from passes.operators.conversions import COPY_KERNEL
from passes.operators.tile_maps import first_then_loop, scalar_map, tensor_format
from planning.attention_plans import (
    CYCLIC_SUFFIX,
    BlockedLayout,
    block_words,
    home_tiles,
    plan_key_splits,
    staging_pieces,
)
from planning.shard_geometry import geometry

if TYPE_CHECKING:
    from passes.operators.base import TileLowering

QUERY_POINTER, KEY_POINTER, VALUE_POINTER = 4, 5, 6  # attention_block_*'s operand pointers
MERGE_KERNEL = "attention_merge"


class BlockedLowering:
    def __init__(self, op: mid.AttentionOp, lowering: TileLowering):
        self.op = op
        query_type, query_fmt = tensor_format(op, "query", op.query)
        key_type, key_fmt = tensor_format(op, "key", op.key)
        self.layout = layout = BlockedLayout.of(
            geometry(query_type.get_shape(), query_fmt), geometry(key_type.get_shape(), key_fmt),
            op.causal is not None, op.plan.candidate.data.endswith(CYCLIC_SUFFIX),
            op.key_mask is not None, plan_key_splits(op.plan.candidate.data))
        self.source = lowering.source_of(op)
        self.query = lowering.operand_buffer(op, op.query)
        self.key = lowering.operand_buffer(op, op.key)
        self.value = lowering.operand_buffer(op, op.value)
        # the key mask, whole on every tile (the host writes each copy), read where it lives
        self.key_mask = None if op.key_mask is None else lowering.operand_buffer(op, op.key_mask)
        self.out = lowering.result_buffer(op.result)
        self.home_tiles = TileSetAttr.range(0, layout.tiles)  # the first layer: the formats'
        self.tiles = TileSetAttr.range(0, layout.compute_tiles)
        name, pace = self.out.sym_name.data, lowering.target.pace_alignment
        precision, rows, width = layout.precision, layout.rows, layout.width
        self.split = layout.key_splits > 1

        def scratch(what: str, shard: tuple[int, ...], precision: str, order: str,
                    memory: str = "standard", tail: int = 0,
                    tiles: TileSetAttr | None = None) -> BufferOp:
            return lowering.scratch(f"{name}_{what}", tiles or self.tiles, shard, precision,
                                    order, memory, pace, tail)

        if self.split:  # later layers compute on copies of their rows' query, then merge
            self.query_copy = scratch("query_copy", (rows, width), precision, "amp_left",
                                      tail=lowering.target.amp_left_access_tail_bytes)
            self.acc_in = scratch("acc_in", (rows, width), "f32", "amp_output",
                                  tiles=self.home_tiles)
            self.stats_in = scratch("stats_in", (rows, STATE_WORDS), "f32", "row_major",
                                    tiles=self.home_tiles)
        if self.slotted:  # with one partition per slice every tile holds its blocks
            self.key_slot = scratch("key_slot", (KEY_BLOCK, width), precision, "amp_right_t")
            self.value_slot = scratch("value_slot", (KEY_BLOCK, width), precision, "amp_right")
        self.acc = scratch("acc", (rows, width), "f32", "amp_output", "interleaved")
        self.stats = scratch("stats", (rows, STATE_WORDS), "f32", "row_major")
        self.scores = scratch("scores", (rows, KEY_BLOCK), "f32", "amp_output", "interleaved")
        self.probs = scratch("probs", (rows, AMP_BLOCK), precision, "amp_left",
                             tail=lowering.target.amp_left_access_tail_bytes)
        # the cyclic variant computes on staged copies of the query and output blocks
        self.query_stage = self.query
        self.out_stage = self.out
        if layout.cyclic:
            self.query_stage = scratch("query_stage", (rows, width), precision, "amp_left",
                                       tail=lowering.target.amp_left_access_tail_bytes)
            out_shard = (rows, layout.head_dim)
            self.out_stage = lowering.scratch(f"{name}_out_stage", self.tiles, out_shard,
                                              precision, "row_major", "standard",
                                              lowering.target.vector_alignment)
        dispatch = op.plan.dispatch
        assert dispatch.init_symbol is not None and dispatch.accum_symbol is not None
        self.init_symbol, self.accum_symbol = dispatch.init_symbol, dispatch.accum_symbol
        self.constant_scalars = [layout.key_length, int(layout.causal),
                                 f32_bits(op.scale.value.data), layout.query_length,
                                 layout.head_dim, rows, layout.partitions, int(layout.cyclic),
                                 layout.slices, layout.key_splits]
        if layout.masked:
            self.constant_scalars += [layout.heads, layout.mask_rows]

    @property
    def slotted(self) -> bool:
        """Whether blocks are received into slots: some tile does not hold the ones it takes."""
        return self.layout.exchanges or self.layout.key_splits > 1

    def provenance(self, value: SSAValue, reason: str) -> WorkProvenanceAttr:
        return WorkProvenanceAttr(self.source, value_label(value), reason)

    def block_offset(self, j: AffineExpr) -> AffineExpr:
        """Byte offset of key (and value) block j in its holder's shard."""
        chunk = self.layout.key_chunk
        return (j % chunk) * self.layout.block_bytes if chunk > 1 else AffineExpr.constant(0)

    def block_phase(self, ivs: list[SSAValue], j: AffineExpr, layers: range) -> list[Operation]:
        """The key and the value phase of step j for `layers`: group g (layer first + g
        floordiv S, slice g mod S) sends block l * nK / L + j of its slice to the layer's tiles
        of the slice (the layers of one phase are alike: `BlockedLayout.block_phases`)."""
        layout, depth = self.layout, len(ivs)
        group = AffineExpr.dimension(depth)
        layer = group // layout.slices + layers.start if len(layers) > 1 else layers.start
        within = group % layout.slices if len(layers) > 1 else group
        block = j + layer * layout.segment
        width = layout.layer_width(layers.start)
        holder = AffineMap(depth + 1, 0, (within * layout.partitions + self.holder(block),))
        shift = AffineMap(depth + 1, 0, (group * width + layout.layer_base(layers.start),))
        offset = scalar_map(depth, self.block_offset(j + layers.start * layout.segment))
        if len(layers) > 1:
            where = "every key layer's tiles of its slice"
        elif layers.start == 0:
            where = "the tiles of its slice"
        else:
            where = f"key layer {layers.start}'s tiles of its slice"
        name = "j" if layers == range(0, 1) else (
            f"{layers.start * layout.segment} + j" if len(layers) == 1 else "l * nK / L + j")
        pairs = all(layout.layer_pairs(k) for k in layers)
        return [ExchangeOp(layout.block_words, source, offset, holder, slot, scalar_map(depth, 0),
                           TileSetAttr.range(0, width), ivs,
                           self.provenance(value, f"key block {name} to {where}"),
                           (layout.slices * len(layers), shift), pairs)
                for source, slot, value in ((self.key, self.key_slot, self.op.key),
                                            (self.value, self.value_slot, self.op.value))]

    def holder(self, j: AffineExpr) -> AffineExpr:
        """The partition, within its slice, of the tile holding key block j."""
        return j // self.layout.key_chunk if self.layout.key_chunk > 1 else j

    def emit(self) -> list[Operation]:
        ops = self.staging(to_compute=True) if self.layout.cyclic else []
        if self.split:
            ops += self.query_copies()
        ops += first_then_loop(self.step, self.layout.segment, "j",
                               self.provenance(self.op.key, "key blocks j, one at a time"))
        if self.split:
            ops += self.merges()
        ops.append(KernelOp(
            f"attention_finish_{self.layout.precision}",
            [(self.out_stage, scalar_map(0, 0)), (self.acc, scalar_map(0, 0)),
             (self.stats, scalar_map(0, 0))],
            [self.layout.rows, self.layout.head_dim], self.home_tiles, [],
            self.provenance(self.op.result, "out = accumulator / running sum, rounded once"),
        ))
        if self.layout.cyclic:
            ops += self.staging(to_compute=False)
        return ops

    def layer_maps(self, layer: int) -> tuple[int, AffineMap, AffineMap]:
        """(groups, its tiles, the first layer's tiles of the same rows) of a later layer, one
        group per tile: group t is partition first + t mod width of slice t floordiv width."""
        layout = self.layout
        first, width = layout.layer_first(layer), layout.layer_width(layer)
        t = AffineExpr.dimension(0)
        own = AffineMap(1, 0, (t + layout.layer_base(layer),))
        home = AffineMap(1, 0, ((t // width) * layout.partitions + t % width + first,))
        return layout.slices * width, own, home

    def query_copies(self) -> list[Operation]:
        """Each later layer's tiles receive their rows' query shard, one phase per layer."""
        words = self.layout.rows * self.layout.width * element_bytes(self.layout.precision)
        zero, ops = scalar_map(0, 0), list[Operation]()
        for layer in self.layout.layers[1:]:
            groups, own, home = self.layer_maps(layer)
            ops.append(ExchangeOp(
                words // WORD_BYTES, self.query, zero, home, self.query_copy, zero,
                TileSetAttr.range(0, 1), [],
                self.provenance(self.op.query, f"the query rows to key layer {layer}"),
                (groups, own)))
        return ops

    def merges(self) -> list[Operation]:
        """Per later layer: its accumulator, then its max and sum, to the first layer's tiles
        of the same rows, and the merge there."""
        layout, zero, ops = self.layout, scalar_map(0, 0), list[Operation]()
        f32 = element_bytes("f32")
        for layer in layout.layers[1:]:
            groups, own, home = self.layer_maps(layer)
            for state, received, words, what in (
                    (self.acc, self.acc_in, layout.rows * layout.width, "accumulator"),
                    (self.stats, self.stats_in, layout.rows * STATE_WORDS, "max and sum")):
                ops.append(ExchangeOp(
                    words * f32 // WORD_BYTES, state, zero, own, received, zero,
                    TileSetAttr.range(0, 1), [],
                    self.provenance(self.op.result, f"key layer {layer}'s {what} to the "
                                    "first layer"), (groups, home)))
            tiles = TileSetAttr.of(home_tiles(layout, layer).reshape(-1).tolist())
            ops.append(KernelOp(
                MERGE_KERNEL, [(self.acc, zero), (self.stats, zero), (self.acc_in, zero),
                               (self.stats_in, zero)],
                [layout.rows, layout.head_dim], tiles, [],
                self.provenance(self.op.result, f"key layer {layer}'s state merged")))
        return ops

    def staging(self, *, to_compute: bool) -> list[Operation]:
        """The cyclic variant's moves: the query blocks from their holders to the compute
        tiles' slots (`to_compute`), or the output blocks back; one grouped exchange per
        piece, a copy where holder and compute tile are one tile."""
        layout, ops = self.layout, list[Operation]()
        c, partitions = layout.units, layout.partitions
        width = layout.width if to_compute else layout.head_dim
        words = block_words(layout, width)
        nbytes = words * WORD_BYTES
        held, staged = (self.query, self.query_stage) if to_compute else (self.out, self.out_stage)
        value = self.op.query if to_compute else self.op.result
        reason = ("query blocks to the tiles that compute them" if to_compute
                  else "output blocks back to the tiles that hold them")
        for piece in staging_pieces(layout):
            held_at, staged_at = piece.position * nbytes, piece.slot * nbytes
            if piece.local:
                tiles = TileSetAttr.of(sorted(s * partitions + piece.p0 + c * piece.first
                                              for s in range(layout.slices)))
                views = [(staged, scalar_map(0, staged_at)), (held, scalar_map(0, held_at))]
                if not to_compute:
                    views.reverse()
                ops.append(KernelOp(COPY_KERNEL, views, [words], tiles, [],
                                    self.provenance(value, f"{reason} (one tile: a copy)")))
                continue
            t = AffineExpr.dimension(0)  # group t: slice t // count, g = first + t mod count
            s, g = (t, AffineExpr.constant(piece.first)) if piece.count == 1 else (
                t // piece.count, t % piece.count + piece.first)
            holder = AffineMap(1, 0, (s * partitions + piece.h0 + g,))
            computer = AffineMap(1, 0, (s * partitions + piece.p0 + g * c,))
            groups = layout.slices * piece.count
            if to_compute:
                ops.append(ExchangeOp(words, held, scalar_map(0, held_at), holder, staged,
                                      scalar_map(0, staged_at), TileSetAttr.range(0, 1), [],
                                      self.provenance(value, reason), (groups, computer)))
            else:
                ops.append(ExchangeOp(words, staged, scalar_map(0, staged_at), computer, held,
                                      scalar_map(0, held_at), TileSetAttr.range(0, 1), [],
                                      self.provenance(value, reason), (groups, holder)))
        return ops

    def step(self, ivs: list[SSAValue], j: AffineExpr, *, init: bool) -> list[Operation]:
        """Key block j: its two exchanges, then the block kernel on every tile."""
        layout, depth = self.layout, len(ivs)
        partitions = layout.partitions
        offset = scalar_map(depth, self.block_offset(j))
        ops: list[Operation] = []
        for layers in layout.block_phases():
            ops += self.block_phase(ivs, j, layers)
        zero = scalar_map(depth, 0)
        homes = []
        if self.slotted:
            key_view, value_view = (self.key_slot, zero), (self.value_slot, zero)
            holders = TileSetAttr.of([s * partitions for s in range(layout.slices)])
            to_holder = scalar_map(depth, self.holder(j))
            homes = [HomeView(KEY_POINTER, self.key.buffer, offset, holders, to_holder),
                     HomeView(VALUE_POINTER, self.value.buffer, offset, holders, to_holder)]
        else:  # every tile holds its slice's blocks
            key_view, value_view = (self.key, offset), (self.value, offset)
        query_view = (self.query_stage, zero)
        if self.split:  # the later layers' tiles read their copy
            query_view = (self.query_copy, zero)
            homes.append(HomeView(QUERY_POINTER, self.query.buffer, zero, self.home_tiles, zero))
        views = [(self.acc, zero), (self.stats, zero), (self.scores, zero), (self.probs, zero),
                 query_view, key_view, value_view]
        if self.key_mask is not None:
            views.append((self.key_mask, zero))
        reason = ("first key block: S, softmax state, P . V" if init
                  else "key block j: S, online softmax update, P . V")
        if init:
            return [*ops, KernelOp(self.init_symbol, views, [0, *self.constant_scalars],
                                   self.tiles, ivs, self.provenance(self.op.result, reason),
                                   homes=homes)]
        return [*ops, KernelOp(self.accum_symbol, views, self.constant_scalars, self.tiles, ivs,
                               self.provenance(self.op.result, reason),
                               iv_scalars=[scalar_map(depth, j)], homes=homes)]


def lower_attention_blocked(op: mid.AttentionOp, lowering: TileLowering) -> list[Operation]:
    return BlockedLowering(op, lowering).emit()
