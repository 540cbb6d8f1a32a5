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

With a key mask the block kernels are the `_masked` ones: every tile also reads the whole
i32 mask (host-written, one copy per tile) and masks its batch row's keys whose entry is 0.
The op count is a constant per attention: the key-block loop stays a loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from device.kernels import f32_bits
from device.layouts import AMP_BLOCK
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
from planning.attention_plans import CYCLIC_SUFFIX, BlockedLayout, block_words, staging_pieces
from planning.shard_geometry import geometry

if TYPE_CHECKING:
    from passes.operators.base import TileLowering

KEY_POINTER, VALUE_POINTER = 5, 6  # attention_block_*'s key and value pointers


class BlockedLowering:
    def __init__(self, op: mid.AttentionOp, lowering: TileLowering):
        self.op = op
        query_type, query_fmt = tensor_format(op, "query", op.query)
        key_type, key_fmt = tensor_format(op, "key", op.key)
        self.layout = layout = BlockedLayout.of(
            geometry(query_type.get_shape(), query_fmt), geometry(key_type.get_shape(), key_fmt),
            op.causal is not None, op.plan.candidate.data.endswith(CYCLIC_SUFFIX),
            op.key_mask is not None)
        self.source = lowering.source_of(op)
        self.query = lowering.operand_buffer(op, op.query)
        self.key = lowering.operand_buffer(op, op.key)
        self.value = lowering.operand_buffer(op, op.value)
        # the key mask, whole on every tile (the host writes each copy), read where it lives
        self.key_mask = None if op.key_mask is None else lowering.operand_buffer(op, op.key_mask)
        self.out = lowering.result_buffer(op.result)
        self.tiles = TileSetAttr.range(0, layout.tiles)
        name, pace = self.out.sym_name.data, lowering.target.pace_alignment
        precision, rows, width = layout.precision, layout.rows, layout.width

        def scratch(what: str, shard: tuple[int, ...], precision: str, order: str,
                    memory: str = "standard", tail: int = 0) -> BufferOp:
            return lowering.scratch(f"{name}_{what}", self.tiles, shard, precision, order,
                                    memory, pace, tail)

        if layout.exchanges:  # with one partition per slice every tile holds its blocks
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
                                 layout.head_dim, rows, layout.partitions, int(layout.cyclic)]
        if layout.masked:
            self.constant_scalars += [layout.heads, layout.mask_rows]

    def provenance(self, value: SSAValue, reason: str) -> WorkProvenanceAttr:
        return WorkProvenanceAttr(self.source, value_label(value), reason)

    def block_offset(self, j: AffineExpr) -> AffineExpr:
        """Byte offset of key (and value) block j in its holder's shard."""
        chunk = self.layout.key_chunk
        return (j % chunk) * self.layout.block_bytes if chunk > 1 else AffineExpr.constant(0)

    def holder(self, j: AffineExpr) -> AffineExpr:
        """The partition, within its slice, of the tile holding key block j."""
        return j // self.layout.key_chunk if self.layout.key_chunk > 1 else j

    def emit(self) -> list[Operation]:
        ops = self.staging(to_compute=True) if self.layout.cyclic else []
        ops += first_then_loop(self.step, self.layout.key_blocks, "j",
                               self.provenance(self.op.key, "key blocks j, one at a time"))
        ops.append(KernelOp(
            f"attention_finish_{self.layout.precision}",
            [(self.out_stage, scalar_map(0, 0)), (self.acc, scalar_map(0, 0)),
             (self.stats, scalar_map(0, 0))],
            [self.layout.rows, self.layout.head_dim], self.tiles, [],
            self.provenance(self.op.result, "out = accumulator / running sum, rounded once"),
        ))
        if self.layout.cyclic:
            ops += self.staging(to_compute=False)
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
        if layout.exchanges:
            group = AffineExpr.dimension(depth)
            holder = AffineMap(depth + 1, 0, (group * partitions + self.holder(j),))
            shift = AffineMap(depth + 1, 0, (group * partitions,))
            for source, slot, value in ((self.key, self.key_slot, self.op.key),
                                        (self.value, self.value_slot, self.op.value)):
                ops.append(ExchangeOp(
                    layout.block_words, source, offset, holder, slot, scalar_map(depth, 0),
                    TileSetAttr.range(0, partitions), ivs,
                    self.provenance(value, "key block j to the tiles of its slice"),
                    (layout.slices, shift), layout.pairs,
                ))
        zero = scalar_map(depth, 0)
        if layout.exchanges:
            key_view, value_view = (self.key_slot, zero), (self.value_slot, zero)
            holders = TileSetAttr.of([s * partitions for s in range(layout.slices)])
            to_holder = scalar_map(depth, self.holder(j))
            homes = [HomeView(KEY_POINTER, self.key.buffer, offset, holders, to_holder),
                     HomeView(VALUE_POINTER, self.value.buffer, offset, holders, to_holder)]
        else:  # every tile holds its slice's blocks
            key_view, value_view = (self.key, offset), (self.value, offset)
            homes = []
        views = [(self.acc, zero), (self.stats, zero), (self.scores, zero), (self.probs, zero),
                 (self.query_stage, zero), key_view, value_view]
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
