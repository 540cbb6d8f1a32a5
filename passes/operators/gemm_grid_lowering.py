"""The tile work of the 2-D grid GEMM plan (`gemm_grid` dispatch, `planning/gemm_grid.py`).

On an R x C grid (tile r * C + c), with kpa / kpb the K blocks of A / B per tile:

    phase k = 0, then tile.loop %k = 1 to nK:
      exchange panel k of A along every grid row (R groups): from tile r*C + k floordiv kpa
        to the A slot of the other tiles of row r
      exchange the B blocks (k, columns of c) down every grid column (C groups): from tile
        (k floordiv kpb)*C + c to the B slot of the other tiles of column c
      tile.loop %p = 0 to nb: GEMM init (k = 0) or accum kernel on every grid tile:
        out = panel p of the output (or of the f32 partials), left = the A slot, right =
        block p of the B slot; the tiles holding panel k of A / the B blocks read them
        where they live (`home`)
    convert_shard: the output = the f32 partials, rounded once (FP32 partials of FP16 inputs)

The op count is a constant per GEMM, whatever the tile count or the number of blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from device.kernels import descriptor_words
from device.layouts import AMP_BLOCK, block_bytes, panel_bytes
from device.target import WORD_BYTES
from ipu_dialects import mid
from ipu_dialects.tile import BufferOp, ExchangeOp, HomeView, KernelOp, LoopOp, TileSetAttr
from passes.operators.conversions import CONVERT_KERNEL
from passes.operators.tile_maps import GemmOperands, GemmWork, amp_slots, first_then_loop, gemm_scalars, scalar_map
from planning.gemm_grid import GridShape, grid_of, lhs_pairs, rhs_pairs, shard_descriptor
from planning.gemm_problem import has_f32_partials_panel
from planning.shard_geometry import ShardGeometry

if TYPE_CHECKING:
    from passes.operators.base import TileLowering

@dataclass
class GridLowering(GemmWork):
    grid: GridShape
    k_blocks: int
    lhs: BufferOp
    rhs: BufferOp
    out: BufferOp
    lhs_slot: BufferOp
    rhs_slot: BufferOp
    a: ShardGeometry
    b: ShardGeometry
    c: ShardGeometry
    init_symbol: str
    accum_symbol: str
    partials: BufferOp | None = None
    scalars: list[int] = field(default_factory=list)

    @property
    def tiles(self) -> TileSetAttr:
        return TileSetAttr.range(0, self.grid.tiles)

    # -- where blocks live ---------------------------------------------------------------------
    def lhs_home_offset(self, k: AffineExpr) -> AffineExpr:
        """Byte offset of panel k of A in the shard of the tile that holds it."""
        return (k % self.grid.a_k_blocks) * panel_bytes(self.grid.tile_rows, self.a.precision)

    def lhs_home_column(self, k: AffineExpr) -> AffineExpr:
        return k // self.grid.a_k_blocks

    def rhs_home_offset(self, k: AffineExpr) -> AffineExpr:
        """Byte offset of the B blocks (k, this column's panels): contiguous in amp_right."""
        return (k % self.grid.b_k_blocks) * (self.grid.panels * block_bytes(self.b.precision))

    def rhs_home_row(self, k: AffineExpr) -> AffineExpr:
        return k // self.grid.b_k_blocks

    def grid_rows_first_tiles(self) -> TileSetAttr:
        """Tile c = 0 of every grid row (shifted by a column index: that column)."""
        return TileSetAttr.of([r * self.grid.cols for r in range(self.grid.rows)])

    # -- emission ------------------------------------------------------------------------------
    def emit(self) -> list[Operation]:
        ops = first_then_loop(self.phase, self.k_blocks, "k",
                              self.provenance(self.op.result, "accumulating inner blocks k"))
        if self.partials is not None:
            ops.append(self.round_partials())
        return ops

    def phase(self, ivs: list[SSAValue], k: AffineExpr, *, init: bool) -> list[Operation]:
        depth, grid = len(ivs), self.grid
        group = AffineExpr.dimension(depth)
        ops: list[Operation] = []
        if grid.cols > 1:
            ops.append(ExchangeOp(
                panel_bytes(grid.tile_rows, self.a.precision) // WORD_BYTES,
                self.lhs, scalar_map(depth, self.lhs_home_offset(k)),
                AffineMap(depth + 1, 0, (group * grid.cols + self.lhs_home_column(k),)),
                self.lhs_slot, scalar_map(depth, 0), TileSetAttr.range(0, grid.cols), ivs,
                self.provenance(self.op.lhs, "lhs panel k along every grid row"),
                (grid.rows, AffineMap(depth + 1, 0, (group * grid.cols,))), lhs_pairs(grid),
            ))
        if grid.rows > 1:
            ops.append(ExchangeOp(
                grid.panels * block_bytes(self.b.precision) // WORD_BYTES,
                self.rhs, scalar_map(depth, self.rhs_home_offset(k)),
                AffineMap(depth + 1, 0, (self.rhs_home_row(k) * grid.cols + group,)),
                self.rhs_slot, scalar_map(depth, 0), self.grid_rows_first_tiles(), ivs,
                self.provenance(self.op.rhs, "rhs blocks k down every grid column"),
                (grid.cols, AffineMap(depth + 1, 0, (group,))), rhs_pairs(grid),
            ))
        ops.append(self.panel_loop(ivs, k, init))
        return ops

    def panel_loop(self, ivs: list[SSAValue], k: AffineExpr, init: bool) -> LoopOp:
        """One AMP call per 64-column panel of every tile's output block."""
        loop = LoopOp(0, self.grid.panels,
                      self.provenance(self.op.result, "output panels p of the grid block"))
        loop.induction_var.name_hint = "p"
        depth = len(ivs) + 1
        p = AffineExpr.dimension(depth - 1)
        block = block_bytes(self.b.precision)
        target, out_precision = (self.out, self.c.precision) if self.partials is None \
            else (self.partials, "f32")
        out = scalar_map(depth, p * panel_bytes(self.grid.tile_rows, out_precision))
        homes = [
            HomeView(1, self.lhs.buffer, scalar_map(depth, self.lhs_home_offset(k)),
                     self.grid_rows_first_tiles(), scalar_map(depth, self.lhs_home_column(k))),
            HomeView(2, self.rhs.buffer, scalar_map(depth, self.rhs_home_offset(k) + p * block),
                     TileSetAttr.range(0, self.grid.cols),
                     scalar_map(depth, self.rhs_home_row(k) * self.grid.cols)),
        ]
        loop.body.block.add_op(KernelOp(
            self.init_symbol if init else self.accum_symbol,
            [(target, out), (self.lhs_slot, scalar_map(depth, 0)),
             (self.rhs_slot, scalar_map(depth, p * block))],
            self.scalars, self.tiles, [*ivs, loop.induction_var],
            self.provenance(self.op.result,
                            "initializing gemm phase k = 0" if init else "accumulating gemm phase"),
            homes=homes,
        ))
        return loop

    def round_partials(self) -> KernelOp:
        assert self.partials is not None
        words = descriptor_words(shard_descriptor(self.grid, self.c.precision),
                                 shard_descriptor(self.grid, "f32"))
        return KernelOp(
            CONVERT_KERNEL, [(self.out, scalar_map(0, 0)), (self.partials, scalar_map(0, 0))],
            list(words), self.tiles, [],
            self.provenance(self.op.result, "round the f32 partials to the output once"),
        )


def lower_gemm_grid(op: mid.GemmOp, lowering: TileLowering,
                    roles: dict[mid.OperandRole, mid.OperandPlanAttr],
                    operands: GemmOperands) -> list[Operation]:
    """The tile work of one `mid.gemm` whose plan has the gemm_grid dispatch
    (`operands`: what `lower_gemm` gives it, a folded plan's as the fold's matrices)."""
    plan, dispatch = op.plan, op.plan.dispatch
    a, b, c = operands.geometries()
    grid = grid_of(c, a, b)
    tiles = TileSetAttr.range(0, grid.tiles)
    out = lowering.result_buffer(op.result)
    name = out.sym_name.data
    lhs_slot, rhs_slot = amp_slots(lowering, name, tiles, grid.tile_rows, grid.panels * AMP_BLOCK,
                                   a, b, roles)
    partials = None
    if has_f32_partials_panel(plan):
        partials = lowering.scratch(
            f"{name}_partials", tiles, (grid.tile_rows, grid.panels * AMP_BLOCK), "f32",
            "amp_output", "interleaved", roles[mid.OperandRole.OUTPUT].alignment.data)
    assert dispatch.init_symbol is not None and dispatch.accum_symbol is not None
    return GridLowering(
        op, grid, -(-operands.lhs.get_shape()[-1] // AMP_BLOCK),
        lowering.operand_buffer(op, op.lhs), lowering.operand_buffer(op, op.rhs), out,
        lhs_slot, rhs_slot, a, b, c, dispatch.init_symbol, dispatch.accum_symbol, partials,
        gemm_scalars(grid.tile_rows, a, b, c),
    ).emit()
