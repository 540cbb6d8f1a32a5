"""The tile work of the 3-D grid GEMM plan (`gemm_grid3d` dispatch, `planning/gemm_grid3d.py`).

L layers l of an R x C grid (tile l*R*C + r*C + c), layer l on K blocks l*s + i, A and B
replicated in every layer (kpa / kpb their K blocks per tile):

    step i = 0, then tile.loop %i = 1 to s:
      exchange A's panel l*s + i along every grid row of every layer (L*R groups, g = l*R + r):
        from tile g*C + (l*s + i) floordiv kpa to the A slot of the other tiles of the row
      exchange the B blocks down every grid column of every layer (L*C groups, g = l*C + c):
        from tile l*R*C + ((l*s + i) floordiv kpb)*C + c to the B slot of the column's tiles
      tile.loop %p over the panels: GEMM init (i = 0) or accum on every tile: out = panel p of
        the f32 partials, left = the A slot, right = block p of the B slot; holders read A and
        B where they live (`home`, one view per layer)
    per reduction round (layers [keep, keep + n) into [0, n), halving to layer 0):
      exchange the partials of tile t + keep*R*C to the receive buffer of tile t (n*R*C groups)
      add on tiles [0, n*R*C): partials += received (FP32); the last round writes the output
        on layer 0 instead, rounded once

The op count is a constant per GEMM and layer count, whatever the tile count or the blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from device.kernels import descriptor_words
from device.layouts import AMP_BLOCK, block_bytes, panel_bytes
from ipu_dialects import mid
from ipu_dialects.tile import (
    BufferOp,
    ExchangeOp,
    HomeView,
    KernelOp,
    LoopOp,
    TileSetAttr,
)
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
from planning.gemm_grid3d import (
    Grid3DShape,
    ReductionRound,
    block_descriptor,
    block_words,
    grid3d_of,
    lhs_pairs,
    panel_words,
    partials_words,
    reduction_rounds,
    rhs_pairs,
)
from planning.gemm_layout import REDUCTION

if TYPE_CHECKING:
    from passes.operators.base import TileLowering


@dataclass
class Grid3DLowering(GemmWork):
    shape: Grid3DShape
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

    @property
    def blocks(self) -> LayerBlocks:
        grid = self.shape.grid
        return LayerBlocks(self.shape.steps, grid.a_k_blocks, grid.b_k_blocks,
                           panel_bytes(grid.tile_rows, self.precision),
                           grid.panels * block_bytes(self.precision))

    # -- emission ------------------------------------------------------------------------------
    def emit(self) -> list[Operation]:
        ops = first_then_loop(self.step, self.shape.steps, "i",
                              self.provenance(self.op.result, "K blocks i of each layer's share"))
        for reduction in reduction_rounds(self.shape.layers):
            ops += [self.exchange_partials(reduction), self.add_partials(reduction)]
        return ops

    def step(self, ivs: list[SSAValue], i: AffineExpr, *, init: bool) -> list[Operation]:
        shape, depth = self.shape, len(ivs)
        g = AffineExpr.dimension(depth)  # the group index, after the loop indices
        ops: list[Operation] = []
        if shape.cols > 1:
            a_layer = g // shape.rows  # A's groups: g = l*R + r
            ops.append(ExchangeOp(
                panel_words(shape, self.precision), self.lhs,
                AffineMap(depth + 1, 0, (self.blocks.a_offset(a_layer, i),)),
                AffineMap(depth + 1, 0, (g * shape.cols + self.blocks.a_column(a_layer, i),)),
                self.lhs_slot, scalar_map(depth, 0), TileSetAttr.range(0, shape.cols), ivs,
                self.provenance(self.op.lhs, "lhs panel along every grid row of every layer"),
                (shape.layers * shape.rows, AffineMap(depth + 1, 0, (g * shape.cols,))),
                lhs_pairs(shape)))
        if shape.rows > 1:
            b_layer, col = g // shape.cols, g % shape.cols  # B's groups: g = l*C + c
            column_start = b_layer * shape.layer_tiles + col
            ops.append(ExchangeOp(
                block_words(shape, self.precision), self.rhs,
                AffineMap(depth + 1, 0, (self.blocks.b_offset(b_layer, i),)),
                AffineMap(depth + 1, 0, (column_start + self.blocks.b_row(b_layer, i) * shape.cols,)),
                self.rhs_slot, scalar_map(depth, 0),
                TileSetAttr.of([r * shape.cols for r in range(shape.rows)]), ivs,
                self.provenance(self.op.rhs, "rhs blocks down every grid column of every layer"),
                (shape.layers * shape.cols, AffineMap(depth + 1, 0, (column_start,))),
                rhs_pairs(shape)))
        ops.append(self.panel_loop(ivs, i, init))
        return ops

    def panel_loop(self, ivs: list[SSAValue], i: AffineExpr, init: bool) -> LoopOp:
        """One AMP call per 64-column panel of every tile's block, into its f32 partials."""
        shape = self.shape
        loop = LoopOp(0, shape.grid.panels,
                      self.provenance(self.op.result, "output panels p of the grid block"))
        loop.induction_var.name_hint = "p"
        depth = len(ivs) + 1
        p = AffineExpr.dimension(depth - 1)
        block = block_bytes(self.precision)
        homes = []
        for layer in range(shape.layers):
            first = layer * shape.layer_tiles
            homes.append(HomeView(
                1, self.lhs.buffer, scalar_map(depth, self.blocks.a_offset(layer, i)),
                TileSetAttr.of([first + r * shape.cols for r in range(shape.rows)]),
                scalar_map(depth, self.blocks.a_column(layer, i))))
            homes.append(HomeView(
                2, self.rhs.buffer, scalar_map(depth, self.blocks.b_offset(layer, i) + p * block),
                TileSetAttr.range(first, first + shape.cols),
                scalar_map(depth, self.blocks.b_row(layer, i) * shape.cols)))
        out = scalar_map(depth, p * panel_bytes(shape.grid.tile_rows, "f32"))
        loop.body.block.add_op(KernelOp(
            self.init_symbol if init else self.accum_symbol,
            [(self.partials, out), (self.lhs_slot, scalar_map(depth, 0)),
             (self.rhs_slot, scalar_map(depth, p * block))],
            self.scalars, TileSetAttr.range(0, shape.tiles), [*ivs, loop.induction_var],
            self.provenance(self.op.result, "initializing gemm phase i = 0" if init
                            else "accumulating gemm phase"),
            homes=homes,
        ))
        return loop

    def exchange_partials(self, reduction: ReductionRound) -> ExchangeOp:
        """Each tile of layers [keep, keep + n) sends its partials to the tile of the same
        block keep layers down (one group per receiving tile)."""
        shape = self.shape
        g = AffineExpr.dimension(0)
        return ExchangeOp(
            partials_words(shape), self.partials, scalar_map(0, 0),
            AffineMap(1, 0, (g + reduction.keep * shape.layer_tiles,)),
            self.received, scalar_map(0, 0), TileSetAttr.of([0]), [],
            self.provenance(self.op.result, f"{REDUCTION}: the f32 partials of layers "
                                            f"{reduction.keep} to "
                                            f"{reduction.keep + reduction.senders - 1}, "
                                            f"{reduction.keep} layers down"),
            (reduction.senders * shape.layer_tiles, AffineMap(1, 0, (g,))))

    def add_partials(self, reduction: ReductionRound) -> KernelOp:
        """partials += received on the receiving tiles; the last round writes the output."""
        shape = self.shape
        partials = block_descriptor(shape, "f32")
        target, precision, reason = (
            (self.out, self.out_precision, f"{REDUCTION}: sum the last two layers' partials "
                                           "into the output, rounded once") if reduction.last
            else (self.partials, "f32", f"{REDUCTION}: add the received partials to the "
                                        "tile's own"))
        words = descriptor_words(block_descriptor(shape, precision), partials, partials)
        return KernelOp(
            ADD_KERNEL, [(target, scalar_map(0, 0)), (self.partials, scalar_map(0, 0)),
                         (self.received, scalar_map(0, 0))],
            list(words), TileSetAttr.range(0, reduction.senders * shape.layer_tiles), [],
            self.provenance(self.op.result, reason),
        )


def lower_gemm_grid3d(op: mid.GemmOp, lowering: TileLowering,
                      roles: dict[mid.OperandRole, mid.OperandPlanAttr],
                      operands: GemmOperands) -> list[Operation]:
    """The tile work of one `mid.gemm` whose plan has the gemm_grid3d dispatch
    (`operands`: what `lower_gemm` gives it, a folded plan's as the fold's matrices)."""
    dispatch = op.plan.dispatch
    a, b, c = operands.geometries()
    shape = grid3d_of(c, a, b)
    tiles = TileSetAttr.range(0, shape.tiles)
    out = lowering.result_buffer(op.result)
    name = out.sym_name.data
    output = roles[mid.OperandRole.OUTPUT]
    rows, cols = shape.grid.tile_rows, shape.grid.panels * AMP_BLOCK
    lhs_slot, rhs_slot = amp_slots(lowering, name, tiles, rows, cols, a, b, roles)
    partials = lowering.scratch(f"{name}_partials", tiles, (rows, cols), "f32", "amp_output",
                                "interleaved", output.alignment.data)
    received = lowering.scratch(f"{name}_received", tiles, (rows, cols), "f32", "amp_output",
                                "interleaved", output.alignment.data)
    assert dispatch.init_symbol is not None and dispatch.accum_symbol is not None
    return Grid3DLowering(
        op, shape, a.precision, c.precision,
        lowering.operand_buffer(op, op.lhs), lowering.operand_buffer(op, op.rhs), out,
        lhs_slot, rhs_slot, partials, received, dispatch.init_symbol, dispatch.accum_symbol,
        gemm_scalars(rows, a, b, c),
    ).emit()
