"""The tile work of the retained AMP GEMM plan (`gemm_blocks` dispatch, `planning/gemm_rows.py`).

    tile.loop %b_i ...                    one loop per broadcast batch axis of the result
      tile.loop %j = 0 to nJ              output-column blocks
        exchange block (0, j) of B from its home tile to the slot of every output-row tile
        copy_words on the home tile (only if it is an output-row tile)
        GEMM init kernel: out = panel j of C, left = panel 0 of A, right = slot
        tile.loop %k = 1 to nK            (absent when nK == 1)
          exchange block (k, j) / copy_words / GEMM accum kernel
        convert_shard: panel j of C = the f32 partials panel, rounded once
                                          (FP32 partials of FP16 inputs: the kernels' out is
                                          then that f32 panel, not panel j of C)

so the op count is a constant per GEMM: it grows neither with the tile count nor with the
number of blocks. Home tiles and byte offsets are affine maps of the loop indices built from
the formats' geometry (`planning/shard_geometry.py`) and the byte layouts (`device/layouts.py`);
broadcast batch axes get stride 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr
from xdsl.utils.exceptions import PassFailedException

from device.kernels import descriptor_words
from device.layouts import AMP_BLOCK, block_bytes, panel_bytes
from device.target import WORD_BYTES
from ipu_dialects import mid
from ipu_dialects.locations import value_label
from ipu_dialects.tile import BufferOp, ExchangeOp, KernelOp, LoopOp, TileSetAttr
from ipu_dialects.tile_iteration import evaluate_scalar_map
from passes.operators.conversions import CONVERT_KERNEL, COPY_KERNEL
from passes.operators.tile_maps import (
    GemmOperands,
    GemmWork,
    dims,
    effective_type,
    gemm_scalars,
    linearize,
    scalar_map,
    tiles_of,
)
from planning.gemm_problem import has_f32_partials_panel
from planning.shard_geometry import ShardGeometry, geometry

if TYPE_CHECKING:
    from passes.operators.base import TileLowering


@dataclass
class GemmLowering(GemmWork):
    """Everything `mid-to-tile` derives from one `mid.gemm` before it emits ops."""

    lhs: BufferOp
    rhs: BufferOp
    out: BufferOp
    slot: BufferOp
    a: ShardGeometry
    b: ShardGeometry
    c: ShardGeometry
    row_tiles: TileSetAttr
    rows: int
    inner_blocks: int  # nK
    column_blocks: int  # nJ
    batch: tuple[int, ...]  # the result's batch extents (loops, outermost first)
    init_symbol: str
    accum_symbol: str
    # FP32 partials across K (FP16 inputs): the kernels accumulate into this f32 panel and
    # `convert_shard` rounds it into panel j of the output once, after the last K block
    partials: BufferOp | None = None
    ops: list[Operation] = field(default_factory=list)

    @property
    def scalars(self) -> list[int]:
        return gemm_scalars(self.rows, self.a, self.b, self.c)

    # -- per-iteration quantities ----------------------------------------------------------
    def batch_index(self, geom: ShardGeometry, batch_ivs: Sequence[AffineExpr]) -> list[AffineExpr | int]:
        """The operand's batch indices for the result's batch indices (stride 0 if broadcast)."""
        rank = geom.rank - 2
        aligned = list(batch_ivs[len(batch_ivs) - rank:]) if rank else []
        return [0 if geom.shape[axis] == 1 else iv for axis, iv in enumerate(aligned)]

    @staticmethod
    def partition_along(geom: ShardGeometry, axis: int, index: AffineExpr | int, unit: int) -> AffineExpr | int:
        """Partition (along `axis`) of `index`, counted in units of `unit` elements."""
        per_shard = geom.chunk[axis] // unit
        if geom.partitions[axis] == 1:
            return 0
        return index if per_shard == 1 else index // per_shard

    @staticmethod
    def local_along(geom: ShardGeometry, axis: int, index: AffineExpr | int, unit: int) -> AffineExpr | int:
        """Position of `index` (in units of `unit` elements) inside its shard along `axis`."""
        per_shard = geom.chunk[axis] // unit
        if geom.partitions[axis] == 1:
            return index
        return 0 if per_shard == 1 else index % per_shard

    def local_batch(self, geom: ShardGeometry, batch_ivs: Sequence[AffineExpr]) -> AffineExpr:
        """Linear batch index inside the operand's shard (batch chunk, row-major)."""
        index = self.batch_index(geom, batch_ivs)
        local = [self.local_along(geom, axis, i, 1) for axis, i in enumerate(index)]
        return linearize(local, geom.chunk[:-2])

    def panel_offset(self, geom: ShardGeometry, batch_ivs, panel: AffineExpr | int) -> AffineExpr:
        """Byte offset of 64-column panel `panel` of an amp_left/amp_output shard."""
        rows, cols = geom.chunk[-2:]
        panel_size = panel_bytes(rows, geom.precision)
        per_batch = (cols // AMP_BLOCK) * panel_size
        return self.local_batch(geom, batch_ivs) * per_batch + panel * panel_size

    def rhs_block_home(self, batch_ivs, k: AffineExpr, j: AffineExpr) -> AffineExpr:
        """Tile holding block (k, j) of B: its partition on every axis, linearized (replica 0)."""
        b = self.b
        partition = [
            self.partition_along(b, axis, i, 1)
            for axis, i in enumerate(self.batch_index(b, batch_ivs))
        ]
        partition.append(self.partition_along(b, b.rank - 2, k, AMP_BLOCK))
        partition.append(self.partition_along(b, b.rank - 1, j, AMP_BLOCK))
        home = linearize(partition, b.partitions)
        return home + b.first_tile if b.first_tile else home

    def rhs_block_offset(self, batch_ivs, k: AffineExpr, j: AffineExpr) -> AffineExpr:
        """Byte offset of block (k, j) of B inside its home shard (amp_right block order)."""
        b = self.b
        per_k = b.blocks_per_chunk(b.rank - 2)
        per_j = b.blocks_per_chunk(b.rank - 1)
        local_k = self.local_along(b, b.rank - 2, k, AMP_BLOCK)
        local_j = self.local_along(b, b.rank - 1, j, AMP_BLOCK)
        block = linearize([self.local_batch(b, batch_ivs), local_k, local_j], [1, per_k, per_j])
        return block * block_bytes(b.precision)

    # -- emission --------------------------------------------------------------------------
    def emit(self) -> list[Operation]:
        """The work ops, nested in loops; returns the outermost ops in order."""
        batch_loops = [
            LoopOp(0, extent, self.provenance(self.op.result, f"broadcast batch axis {axis}"))
            for axis, extent in enumerate(self.batch)
        ]
        column_loop = LoopOp(
            0, self.column_blocks, self.provenance(self.op.result, "output-column blocks j")
        )
        nest = [*batch_loops, column_loop]
        for axis, loop in enumerate(batch_loops):
            loop.induction_var.name_hint = f"batch{axis}"
        column_loop.induction_var.name_hint = "j"
        for outer, inner in zip(nest, nest[1:]):
            outer.body.block.add_op(inner)
        ivs = [loop.induction_var for loop in nest]
        depth = len(ivs)
        d = dims(depth)
        for op in self.phase(ivs, d[:-1], AffineExpr.constant(0), d[-1], init=True):
            column_loop.body.block.add_op(op)
        if self.inner_blocks > 1:
            inner_loop = LoopOp(
                1, self.inner_blocks, self.provenance(self.op.result, "accumulating inner blocks k")
            )
            inner_loop.induction_var.name_hint = "k"
            column_loop.body.block.add_op(inner_loop)
            inner_ivs = [*ivs, inner_loop.induction_var]
            di = dims(depth + 1)
            for op in self.phase(inner_ivs, di[:-2], di[-1], di[-2], init=False):
                inner_loop.body.block.add_op(op)
        if self.partials is not None:
            column_loop.body.block.add_op(self.round_partials(ivs, d[:-1], d[-1]))
        return [nest[0]]

    def panel_descriptor(self, precision: str) -> ShardGeometry:
        """One 64-column amp_output panel per output-row tile, as a format: what
        `convert_shard` reads and writes on each row tile."""
        tiles = self.row_tiles.count
        return ShardGeometry((tiles * self.rows, AMP_BLOCK), (self.rows, AMP_BLOCK),
                             (tiles, 1), (True, True), 1, tiles, precision, "amp_output",
                             first_tile=self.c.first_tile)

    def round_partials(self, ivs: Sequence[SSAValue], batch: Sequence[AffineExpr],
                       j: AffineExpr) -> KernelOp:
        """Panel j of the output = the f32 partials rounded once (after all of K)."""
        assert self.partials is not None
        depth = len(ivs)
        out = scalar_map(depth, self.panel_offset(self.c, batch, j))
        words = descriptor_words(self.panel_descriptor(self.c.precision),
                                 self.panel_descriptor(self.partials.precision.data))
        return KernelOp(
            CONVERT_KERNEL, [(self.out, out), (self.partials, scalar_map(depth, 0))],
            list(words), self.row_tiles, ivs,
            self.provenance(self.op.result,
                            "round the f32 partials of column block j to the output once"),
        )

    def phase(
        self,
        ivs: Sequence[SSAValue],
        batch: Sequence[AffineExpr],
        k: AffineExpr,
        j: AffineExpr,
        *,
        init: bool,
    ) -> list[Operation]:
        """One phase: broadcast block (k, j) of B, home copy, GEMM on every output-row tile."""
        depth = len(ivs)
        home = scalar_map(depth, self.rhs_block_home(batch, k, j))
        home_offset = scalar_map(depth, self.rhs_block_offset(batch, k, j))
        zero = scalar_map(depth, 0)
        words = block_bytes(self.b.precision) // WORD_BYTES
        bounds = self.bounds(init)
        homes = evaluate_scalar_map(home, bounds)
        ops: list[Operation] = []
        if self.row_tiles.count > 1 or np.any(homes != self.row_tiles.tiles()[0]):
            ops.append(
                ExchangeOp(
                    words, self.rhs, home_offset, home, self.slot, zero, self.row_tiles, ivs,
                    self.provenance(self.op.rhs, "rhs block to output-row tiles"),
                    # one group: a receiver's pair tile receives the same block or nothing
                    pairs=True,
                )
            )
        copy_tiles = self.copy_tiles()
        if copy_tiles is not None and np.isin(homes, copy_tiles.as_array()).any():
            ops.append(
                KernelOp(
                    COPY_KERNEL, [(self.slot, zero), (self.rhs, home_offset)], [words],
                    copy_tiles, ivs,
                    self.provenance(self.op.rhs, "home tile copies its own rhs block into its slot"),
                    on_tile=home,
                )
            )
        out = scalar_map(depth, self.panel_offset(self.c, batch, j))
        target = (self.out, out) if self.partials is None else (self.partials, zero)
        left = scalar_map(depth, self.panel_offset(self.a, batch, k))
        ops.append(
            KernelOp(
                self.init_symbol if init else self.accum_symbol,
                [target, (self.lhs, left), (self.slot, zero)], self.scalars,
                self.row_tiles, ivs,
                self.provenance(
                    self.op.result,
                    "initializing gemm phase k = 0" if init else "accumulating gemm phase",
                ),
            )
        )
        return ops

    def bounds(self, init: bool) -> list[tuple[int, int]]:
        nest = [(0, e) for e in self.batch] + [(0, self.column_blocks)]
        return nest if init else nest + [(1, self.inner_blocks)]

    def copy_tiles(self) -> TileSetAttr | None:
        """Output-row tiles that also hold B blocks: where a home tile copies into its slot."""
        both = sorted(set(self.row_tiles.tiles()) & set(self.rhs.tiles.tiles()))
        return TileSetAttr.of(both) if both else None


def lower_gemm_rows(op: mid.GemmOp, lowering: TileLowering,
                    roles: dict[mid.OperandRole, mid.OperandPlanAttr],
                    operands: GemmOperands) -> list[Operation]:
    """The tile work of one `mid.gemm` whose plan has the gemm_blocks dispatch
    (`operands`: what `lower_gemm` gives it, a folded plan's as the fold's matrices)."""
    plan, dispatch = op.plan, op.plan.dispatch
    typed = operands.typed()
    lhs_type, lhs_fmt = effective_type(*typed[0])
    rhs_type, rhs_fmt = effective_type(*typed[1])
    out_type, out_fmt = typed[2]
    lhs = lowering.operand_buffer(op, op.lhs)
    rhs = lowering.operand_buffer(op, op.rhs)
    out = lowering.result_buffer(op.result)
    a = geometry(lhs_type.get_shape(), lhs_fmt)
    b = geometry(rhs_type.get_shape(), rhs_fmt)
    c = geometry(out_type.get_shape(), out_fmt)
    check_row_layout(op, a, c)
    row_tiles = tiles_of(c)
    slot = lowering.scratch(
        f"{out.sym_name.data}_rhs_slot", row_tiles, (AMP_BLOCK, AMP_BLOCK),
        rhs_fmt.precision.data, "amp_right", "standard",
        roles[mid.OperandRole.RIGHT].alignment.data,
    )
    partials = None
    if has_f32_partials_panel(plan):
        partials = lowering.scratch(
            f"{out.sym_name.data}_partials", row_tiles, (c.chunk[-2], AMP_BLOCK), "f32",
            "amp_output", "interleaved", roles[mid.OperandRole.OUTPUT].alignment.data,
        )
    assert dispatch.init_symbol is not None and dispatch.accum_symbol is not None
    gemm = GemmLowering(
        op, lhs, rhs, out, slot, a, b, c, row_tiles,
        rows=c.chunk[-2],
        inner_blocks=a.padded_shape[-1] // AMP_BLOCK,
        column_blocks=c.padded_shape[-1] // AMP_BLOCK,
        batch=tuple(out_type.get_shape()[:-2]),
        init_symbol=dispatch.init_symbol,
        accum_symbol=dispatch.accum_symbol,
        partials=partials,
    )
    check_rhs_covers(op, gemm)
    return gemm.emit()


def check_row_layout(op: mid.GemmOp, a: ShardGeometry, c: ShardGeometry) -> None:
    """A and C must share the row partitioning; batch axes and columns stay whole."""
    name = f"mid-to-tile: mid.gemm {value_label(op.result)}"
    for what, geom in (("lhs", a), ("result", c)):
        if geom.replication != 1:
            raise PassFailedException(f"{name}: {what} is replicated; the AMP plan stores it once")
        if any(p != 1 for p in geom.partitions[:-2]) or geom.partitions[-1] != 1:
            raise PassFailedException(
                f"{name}: {what} partitions {list(geom.partitions)}; the AMP plan partitions "
                "only the rows"
            )
    if a.first_tile != c.first_tile:
        raise PassFailedException(
            f"{name}: lhs starts at tile {a.first_tile} and the result at tile {c.first_tile}; "
            "the AMP plan reads the lhs rows on the result's tiles"
        )
    if a.partitions[-2] != c.partitions[-2] or a.chunk[-2] != c.chunk[-2]:
        raise PassFailedException(
            f"{name}: lhs rows ({a.partitions[-2]} partitions of {a.chunk[-2]}) and result rows "
            f"({c.partitions[-2]} partitions of {c.chunk[-2]}) are cut differently"
        )


def check_rhs_covers(op: mid.GemmOp, g: GemmLowering) -> None:
    b = g.b
    blocks_k = b.padded_shape[-2] // AMP_BLOCK
    blocks_j = b.padded_shape[-1] // AMP_BLOCK
    if b.blocks[-2:] != (AMP_BLOCK, AMP_BLOCK) or g.inner_blocks > blocks_k or g.column_blocks > blocks_j:
        raise PassFailedException(
            f"mid-to-tile: mid.gemm {value_label(op.result)}: rhs tiling {list(b.blocks)} with "
            f"{blocks_k}x{blocks_j} blocks does not cover {g.inner_blocks}x{g.column_blocks} "
            f"blocks of {AMP_BLOCK}x{AMP_BLOCK}"
        )
