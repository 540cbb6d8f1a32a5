"""The tile work of the K-split GEMM plan (`gemm_ksplit` dispatch, `planning/gemm_ksplit.py`).

Two layers l of an R x C grid (tile l*R*C + r*C + c), layer l on K blocks l*s + i:

    step i = 0, then tile.loop %i = 1 to s:
      exchange A's own-layer half of the panel along every grid row (2R groups, g = l*R + r):
        from tile g*C + (l*s + i) floordiv kpa to the other tiles of the row, slot half l
      exchange A's other half across the layers: from tile ((1-l)*R + r)*C + (l*s + i)
        floordiv kpa to every tile of row r of layer l, slot half 1 - l (full duplex)
      exchange the B blocks down every grid column (2C groups, g = l*C + c)
      tile.loop %p over the panels: GEMM init (i = 0) or accum, once per half: out = the f32
        partials of that half and panel, left = that half of the A slot, right = block p of
        the B slot; holders read A and B where they live (`home`, one view per layer)
    exchange every tile's other half of the partials to its partner in the other layer
    add: the output = the tile's own half + the received one (FP32, rounded once)

The op count is a constant per GEMM, whatever the tile count or the number of blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from device.kernels import descriptor_words
from device.layouts import AMP_BLOCK, block_bytes, panel_bytes
from ipu_dialects import mid
from ipu_dialects.tile import BufferOp, ExchangeOp, HomeView, KernelOp, LoopOp, TileSetAttr
from passes.operators.add import KERNEL as ADD_KERNEL
from passes.operators.tile_maps import (
    GemmOperands,
    GemmWork,
    LayerBlocks,
    amp_slots,
    first_then_loop,
    gemm_scalars,
    scalar_map,
)
from planning.gemm_ksplit import (
    LAYERS,
    KSplitShape,
    block_words,
    half_descriptor,
    half_words,
    ksplit_of,
    lhs_pairs,
    partials_words,
    rhs_pairs,
)
from planning.gemm_layout import REDUCTION

if TYPE_CHECKING:
    from passes.operators.base import TileLowering


@dataclass
class KSplitLowering(GemmWork):
    shape: KSplitShape
    precision: str
    out_precision: str
    lhs: BufferOp
    rhs: BufferOp
    out: BufferOp
    lhs_slot: BufferOp
    rhs_slot: BufferOp
    partials: BufferOp
    received: BufferOp
    init_symbol: str
    accum_symbol: str
    scalars: list[int]

    # -- sizes -----------------------------------------------------------------------------------
    @property
    def a_half_bytes(self) -> int:
        return panel_bytes(self.shape.half_rows, self.precision)

    @property
    def partials_half_bytes(self) -> int:
        return self.shape.panels * panel_bytes(self.shape.half_rows, "f32")

    @property
    def partials_panel_bytes(self) -> int:
        return panel_bytes(self.shape.half_rows, "f32")

    @property
    def blocks(self) -> LayerBlocks:
        return LayerBlocks(self.shape.steps, self.shape.a_k_blocks, self.shape.b_k_blocks,
                           self.a_half_bytes, self.shape.panels * block_bytes(self.precision))

    # -- emission ------------------------------------------------------------------------------
    def emit(self) -> list[Operation]:
        ops = first_then_loop(self.step, self.shape.steps, "i",
                              self.provenance(self.op.result, "K blocks i of each layer's half"))
        return [*ops, self.exchange_partials(), self.add_halves()]

    def step(self, ivs: list[SSAValue], i: AffineExpr, *, init: bool) -> list[Operation]:
        shape, depth = self.shape, len(ivs)
        g = AffineExpr.dimension(depth)  # the group index, after the loop indices
        a_layer = g // shape.rows  # A's groups: g = l*R + r
        ops: list[Operation] = []
        row = TileSetAttr.range(0, shape.cols)
        row_shift = AffineMap(depth + 1, 0, (g * shape.cols,))
        a_words = half_words(shape, self.precision)
        if shape.cols > 1:
            ops.append(ExchangeOp(
                a_words, self.lhs, AffineMap(depth + 1, 0, (self.blocks.a_offset(a_layer, i),)),
                AffineMap(depth + 1, 0, (g * shape.cols + self.blocks.a_column(a_layer, i),)),
                self.lhs_slot, AffineMap(depth + 1, 0, (a_layer * self.a_half_bytes,)), row,
                ivs, self.provenance(self.op.lhs, "lhs half of the own layer along every grid row"),
                (LAYERS * shape.rows, row_shift), lhs_pairs(shape)))
        other = (g + shape.rows - a_layer * (LAYERS * shape.rows)) * shape.cols
        ops.append(ExchangeOp(
            a_words, self.lhs, AffineMap(depth + 1, 0, (self.blocks.a_offset(a_layer, i),)),
            AffineMap(depth + 1, 0, (other + self.blocks.a_column(a_layer, i),)),
            self.lhs_slot, AffineMap(depth + 1, 0, ((a_layer * -1 + 1) * self.a_half_bytes,)), row,
            ivs, self.provenance(self.op.lhs, "lhs half of the other layer across the layers"),
            (LAYERS * shape.rows, row_shift), lhs_pairs(shape)))
        if shape.rows > 1:
            b_layer, col = g // shape.cols, g % shape.cols  # B's groups: g = l*C + c
            column_start = b_layer * shape.layer_tiles + col
            ops.append(ExchangeOp(
                block_words(shape, self.precision), self.rhs,
                AffineMap(depth + 1, 0, (self.blocks.b_offset(b_layer, i),)),
                AffineMap(depth + 1, 0, (column_start + self.blocks.b_row(b_layer, i) * shape.cols,)),
                self.rhs_slot, AffineMap(depth + 1, 0, (AffineExpr.constant(0),)),
                TileSetAttr.of([r * shape.cols for r in range(shape.rows)]), ivs,
                self.provenance(self.op.rhs, "rhs blocks down every grid column"),
                (LAYERS * shape.cols, AffineMap(depth + 1, 0, (column_start,))), rhs_pairs(shape)))
        ops.append(self.panel_loop(ivs, i, init))
        return ops

    def panel_loop(self, ivs: list[SSAValue], i: AffineExpr, init: bool) -> LoopOp:
        """Per 64-column panel, one AMP call per half of the block's rows."""
        shape = self.shape
        loop = LoopOp(0, shape.panels,
                      self.provenance(self.op.result, "output panels p of the block"))
        loop.induction_var.name_hint = "p"
        depth = len(ivs) + 1
        p = AffineExpr.dimension(depth - 1)
        block = block_bytes(self.precision)
        b_homes = [
            HomeView(2, self.rhs.buffer, scalar_map(depth, self.blocks.b_offset(layer, i) + p * block),
                     TileSetAttr.range(layer * shape.layer_tiles,
                                       layer * shape.layer_tiles + shape.cols),
                     scalar_map(depth, self.blocks.b_row(layer, i) * shape.cols))
            for layer in range(LAYERS)
        ]
        for half in range(LAYERS):
            a_home = HomeView(
                1, self.lhs.buffer, scalar_map(depth, self.blocks.a_offset(half, i)),
                TileSetAttr.of([half * shape.layer_tiles + r * shape.cols
                                for r in range(shape.rows)]),
                scalar_map(depth, self.blocks.a_column(half, i)))
            out = scalar_map(depth, half * self.partials_half_bytes
                             + p * self.partials_panel_bytes)
            loop.body.block.add_op(KernelOp(
                self.init_symbol if init else self.accum_symbol,
                [(self.partials, out), (self.lhs_slot, scalar_map(depth, half * self.a_half_bytes)),
                 (self.rhs_slot, scalar_map(depth, p * block))],
                self.scalars, TileSetAttr.range(0, shape.tiles), [*ivs, loop.induction_var],
                self.provenance(self.op.result, f"{'initializing' if init else 'accumulating'} "
                                                f"gemm phase, row half {half}"),
                homes=[a_home, *b_homes],
            ))
        return loop

    def exchange_partials(self) -> ExchangeOp:
        """Every tile sends the half it does not keep to the same block's tile of the other
        layer (one group per tile; each also receives: full duplex)."""
        shape = self.shape
        g = AffineExpr.dimension(0)
        layer = g // shape.layer_tiles
        return ExchangeOp(
            partials_words(shape), self.partials,
            AffineMap(1, 0, ((layer * -1 + 1) * self.partials_half_bytes,)), AffineMap(1, 0, (g,)),
            self.received, scalar_map(0, 0), TileSetAttr.of([0]), [],
            self.provenance(self.op.result,
                            f"{REDUCTION}: the other layer's half of the f32 partials"),
            (shape.tiles, AffineMap(1, 0, (g + shape.layer_tiles
                                           - layer * (LAYERS * shape.layer_tiles),))))

    def add_halves(self) -> KernelOp:
        """out = own half + received half, on every tile; a tile of layer l keeps half l."""
        shape = self.shape
        words = descriptor_words(half_descriptor(shape, self.out_precision),
                                 half_descriptor(shape, "f32"), half_descriptor(shape, "f32"))
        second = TileSetAttr.range(shape.layer_tiles, shape.tiles)
        return KernelOp(
            ADD_KERNEL, [(self.out, scalar_map(0, 0)), (self.partials, scalar_map(0, 0)),
                         (self.received, scalar_map(0, 0))],
            list(words), TileSetAttr.range(0, shape.tiles), [],
            self.provenance(self.op.result, f"{REDUCTION}: sum the two layers' halves, rounded once"),
            homes=[HomeView(1, self.partials.buffer, scalar_map(0, self.partials_half_bytes),
                            second, scalar_map(0, 0))],
        )


def lower_gemm_ksplit(op: mid.GemmOp, lowering: TileLowering,
                      roles: dict[mid.OperandRole, mid.OperandPlanAttr],
                      operands: GemmOperands) -> list[Operation]:
    """The tile work of one `mid.gemm` whose plan has the gemm_ksplit dispatch
    (`operands`: what `lower_gemm` gives it, a folded plan's as the fold's matrices)."""
    dispatch = op.plan.dispatch
    a, b, c = operands.geometries()
    shape = ksplit_of(c, a, b)
    tiles = TileSetAttr.range(0, shape.tiles)
    out = lowering.result_buffer(op.result)
    name = out.sym_name.data
    output = roles[mid.OperandRole.OUTPUT]
    h, cols = shape.half_rows, shape.panels * AMP_BLOCK
    lhs_slot, rhs_slot = amp_slots(lowering, name, tiles, LAYERS * h, cols, a, b, roles)
    partials = lowering.scratch(f"{name}_partials", tiles, (LAYERS * h, cols), "f32",
                                "amp_output", "interleaved", output.alignment.data)
    received = lowering.scratch(f"{name}_received", tiles, (h, cols), "f32", "amp_output",
                                "interleaved", output.alignment.data)
    assert dispatch.init_symbol is not None and dispatch.accum_symbol is not None
    return KSplitLowering(
        op, shape, a.precision, c.precision,
        lowering.operand_buffer(op, op.lhs), lowering.operand_buffer(op, op.rhs), out,
        lhs_slot, rhs_slot, partials, received, dispatch.init_symbol, dispatch.accum_symbol,
        gemm_scalars(h, a, b, c),
    ).emit()
