"""`mid-to-tile`: lower each mid function to logical per-tile work (`tile` dialect).

Every function becomes a function without arguments whose body declares one `tile.buffer` per
value (arguments -> `input N`, returned values -> `output N`, other values and the GEMM
receive slots -> `scratch`) followed by the work, in program order. Each `mid.gemm` is
lowered by its plan's `OperatorDispatch` (docs/internals.md, "The retained AMP GEMM plan"):

    tile.loop %b_i ...                    one loop per broadcast batch axis of the result
      tile.loop %j = 0 to nJ              output-column blocks
        exchange block (0, j) of B from its home tile to the slot of every output-row tile
        copy_words on the home tile (only if it is an output-row tile)
        GEMM init kernel: out = panel j of C, left = panel 0 of A, right = slot
        tile.loop %k = 1 to nK            (absent when nK == 1)
          exchange block (k, j) / copy_words / GEMM accum kernel

so the op count is a constant per GEMM: it grows neither with the tile count nor with the
number of blocks. Home tiles and byte offsets are affine maps of the loop indices built from
the formats' geometry (`passes/shard_geometry.py`) and the byte layouts (`device/layouts.py`);
broadcast batch axes get stride 0.

The tile count comes from the module's `ipu.config` (`#mid.config`), never from an option.
Ops that cannot be lowered yet (`mid.cast_precision`, `mid.rearrange`, anything else) give a
`PassFailedException` naming the op.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from device.layouts import AMP_BLOCK, block_bytes, panel_bytes
from device.target import WORD_BYTES
from ipu_dialects import mid
from ipu_dialects.locations import value_label
from ipu_dialects.tile import (
    BufferOp,
    ExchangeOp,
    KernelOp,
    LoopOp,
    TileSetAttr,
    WorkProvenanceAttr,
)
from ipu_dialects.tile_iteration import evaluate_scalar_map
from passes.pipeline_config import configured_target, pipeline_config
from passes.shard_geometry import ShardGeometry, geometry

COPY_KERNEL = "copy_words"


def tensor_format(op: Operation, what: str, value: SSAValue) -> tuple[TensorType, mid.TensorFormatAttr]:
    value_type = value.type
    if not isinstance(value_type, TensorType) or not isinstance(
        value_type.encoding, mid.TensorFormatAttr
    ):
        raise PassFailedException(
            f"mid-to-tile: {op.name} {what} {value_label(value)} has type {value_type}, "
            "not a tensor with a #mid.format encoding"
        )
    return value_type, value_type.encoding


# ----------------------------------------------------------------------------------------------
# Affine helpers: maps over the iteration vector (d0, d1, ...) of the enclosing loops
# ----------------------------------------------------------------------------------------------


def dims(depth: int) -> list[AffineExpr]:
    return [AffineExpr.dimension(i) for i in range(depth)]


def scalar_map(depth: int, expr: AffineExpr | int) -> AffineMap:
    if isinstance(expr, int):
        expr = AffineExpr.constant(expr)
    return AffineMap(depth, 0, (expr,))


def linearize(indices: Sequence[AffineExpr | int], extents: Sequence[int]) -> AffineExpr:
    """Row-major linear index of `indices` in a grid of `extents`."""
    result: AffineExpr = AffineExpr.constant(0)
    for index, extent in zip(indices, extents):
        result = result * extent + index
    return result


# ----------------------------------------------------------------------------------------------
# One GEMM
# ----------------------------------------------------------------------------------------------


@dataclass
class GemmLowering:
    """Everything `mid-to-tile` derives from one `mid.gemm` before it emits ops."""

    op: mid.GemmOp
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
    ops: list[Operation] = field(default_factory=list)

    # -- provenance ----------------------------------------------------------------------------
    def provenance(self, value: SSAValue, reason: str) -> WorkProvenanceAttr:
        return WorkProvenanceAttr(
            f"graph.gemm {value_label(self.op.result)}", value_label(value), reason
        )

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
        return linearize(partition, b.partitions)

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
        return [nest[0]]

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
        left = scalar_map(depth, self.panel_offset(self.a, batch, k))
        ops.append(
            KernelOp(
                self.init_symbol if init else self.accum_symbol,
                [(self.out, out), (self.lhs, left), (self.slot, zero)], [self.rows],
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


# ----------------------------------------------------------------------------------------------
# Functions
# ----------------------------------------------------------------------------------------------


@dataclass
class FunctionLowering:
    function: func.FuncOp
    tile_count: int
    buffers: dict[SSAValue, BufferOp] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    outputs: dict[SSAValue, int] = field(default_factory=dict)

    def unique_name(self, wanted: str) -> str:
        name, suffix = wanted, 0
        while name in self.names:
            suffix += 1
            name = f"{wanted}_{suffix}"
        self.names.add(name)
        return name

    def buffer_for(
        self, value: SSAValue, kind: str, index: int | None, operand: mid.OperandPlanAttr | None
    ) -> BufferOp:
        if value in self.buffers:
            return self.buffers[value]
        value_type = value.type
        assert isinstance(value_type, TensorType)
        fmt = value_type.encoding
        assert isinstance(fmt, mid.TensorFormatAttr)
        geom = geometry(value_type.get_shape(), fmt)
        if geom.tiles_used > self.tile_count:
            raise PassFailedException(
                f"mid-to-tile: {value_label(value)} is stored on {geom.tiles_used} tiles, but the "
                f"module is configured for {self.tile_count}"
            )
        wanted = value.name_hint or (f"{kind}{index}" if index is not None else "value")
        buffer = BufferOp(
            self.unique_name(wanted),
            kind,
            TileSetAttr.range(0, geom.tiles_used),
            geom.shard_shape,
            fmt.precision.data,
            fmt.order.data,
            fmt.memory.data,
            operand.alignment.data if operand is not None else WORD_BYTES,
            operand.tail.data if operand is not None else 0,
            index=index,
            origin=value_type,
        )
        buffer.buffer.name_hint = buffer.sym_name.data
        self.buffers[value] = buffer
        return buffer

    def lower(self) -> func.FuncOp:
        body = self.function.body.block
        terminator = body.last_op
        if not isinstance(terminator, func.ReturnOp):
            raise PassFailedException(
                f"mid-to-tile: function @{self.function.sym_name.data} does not end with func.return"
            )
        for position, value in enumerate(terminator.arguments):
            if value in self.outputs:
                raise PassFailedException(
                    f"mid-to-tile: @{self.function.sym_name.data} returns {value_label(value)} twice"
                )
            if not isinstance(value.owner, Operation):
                raise PassFailedException(
                    f"mid-to-tile: @{self.function.sym_name.data} returns its argument "
                    f"{value_label(value)} unchanged; nothing to compute"
                )
            self.outputs[value] = position
        work: list[Operation] = []
        for op in body.ops:
            if op is terminator:
                continue
            if isinstance(op, mid.GemmOp):
                work.extend(self.lower_gemm(op))
            elif op.dialect_name() == "tile":
                raise PassFailedException(
                    f"mid-to-tile: the function is at the tile level already ({op.name} "
                    f"{', '.join(value_label(r) for r in op.results)}); run mid-to-tile once"
                )
            else:
                raise PassFailedException(
                    f"mid-to-tile: cannot lower {op.name} (result "
                    f"{', '.join(value_label(r) for r in op.results) or 'none'}) yet; "
                    "only mid.gemm with a gemm_blocks plan is supported"
                )
        buffers = self.ordered_buffers()
        new_body = Block([*buffers, *work, func.ReturnOp()])
        lowered = func.FuncOp.from_region(
            self.function.sym_name.data, [], [], Region(new_body)
        )
        return lowered

    def ordered_buffers(self) -> list[BufferOp]:
        """Inputs first (by index), then outputs (by index), then scratch in creation order."""
        buffers = list(self.buffers.values())
        rank = {"input": 0, "output": 1, "scratch": 2}
        return sorted(
            buffers,
            key=lambda b: (rank[b.kind.data], b.index.value.data if b.index is not None else 0),
        )

    def operand_buffer(self, op: Operation, value: SSAValue, operand: mid.OperandPlanAttr) -> BufferOp:
        if value in self.buffers:
            return self.buffers[value]
        if isinstance(value.owner, Block):
            return self.buffer_for(value, "input", value.index, operand)
        raise PassFailedException(
            f"mid-to-tile: {op.name} uses {value_label(value)} before it is computed"
        )

    def result_buffer(self, value: SSAValue, operand: mid.OperandPlanAttr) -> BufferOp:
        if value in self.outputs:
            return self.buffer_for(value, "output", self.outputs[value], operand)
        return self.buffer_for(value, "scratch", None, operand)

    def lower_gemm(self, op: mid.GemmOp) -> list[Operation]:
        plan = op.plan
        dispatch = plan.dispatch
        if dispatch.kind.data != mid.DispatchKind.GEMM_BLOCKS:
            raise PassFailedException(
                f"mid-to-tile: mid.gemm {value_label(op.result)}: dispatch "
                f"'{dispatch.kind.data}' is not gemm_blocks"
            )
        inner, columns = dispatch.inner_block, dispatch.column_block
        if inner != AMP_BLOCK or columns != AMP_BLOCK:
            raise PassFailedException(
                f"mid-to-tile: mid.gemm {value_label(op.result)}: dispatch blocks "
                f"inner = {inner}, columns = {columns}; the AMP kernels take {AMP_BLOCK}x{AMP_BLOCK}"
            )
        init_symbol, accum_symbol = dispatch.init_symbol, dispatch.accum_symbol
        assert init_symbol is not None and accum_symbol is not None  # the dispatch verifier
        roles = {entry.role.data: entry for entry in plan.operands.data}
        for role in (mid.OperandRole.LEFT, mid.OperandRole.RIGHT, mid.OperandRole.OUTPUT):
            if role not in roles:
                raise PassFailedException(
                    f"mid-to-tile: mid.gemm {value_label(op.result)}: plan "
                    f"'{plan.candidate.data}' has no {role} operand"
                )
        lhs_type, lhs_fmt = tensor_format(op, "lhs", op.lhs)
        rhs_type, rhs_fmt = tensor_format(op, "rhs", op.rhs)
        out_type, out_fmt = tensor_format(op, "result", op.result)
        for what, fmt, order in (
            ("lhs", lhs_fmt, "amp_left"), ("rhs", rhs_fmt, "amp_right"), ("result", out_fmt, "amp_output")
        ):
            if fmt.order.data != order:
                raise PassFailedException(
                    f"mid-to-tile: mid.gemm {value_label(op.result)}: {what} is stored "
                    f"{fmt.order.data}, the AMP GEMM plan needs {order}"
                )
        lhs = self.operand_buffer(op, op.lhs, roles[mid.OperandRole.LEFT])
        rhs = self.operand_buffer(op, op.rhs, roles[mid.OperandRole.RIGHT])
        out = self.result_buffer(op.result, roles[mid.OperandRole.OUTPUT])
        a = geometry(lhs_type.get_shape(), lhs_fmt)
        b = geometry(rhs_type.get_shape(), rhs_fmt)
        c = geometry(out_type.get_shape(), out_fmt)
        self.check_row_layout(op, a, c)
        row_tiles = TileSetAttr.range(0, c.tiles_used)
        slot = BufferOp(
            self.unique_name(f"{out.sym_name.data}_rhs_slot"),
            "scratch",
            row_tiles,
            (AMP_BLOCK, AMP_BLOCK),
            rhs_fmt.precision.data,
            "amp_right",
            "standard",
            roles[mid.OperandRole.RIGHT].alignment.data,
            0,
        )
        slot.buffer.name_hint = slot.sym_name.data
        self.buffers[SSAValue.get(slot)] = slot
        lowering = GemmLowering(
            op, lhs, rhs, out, slot, a, b, c, row_tiles,
            rows=c.chunk[-2],
            inner_blocks=a.padded_shape[-1] // AMP_BLOCK,
            column_blocks=c.padded_shape[-1] // AMP_BLOCK,
            batch=tuple(out_type.get_shape()[:-2]),
            init_symbol=init_symbol,
            accum_symbol=accum_symbol,
        )
        self.check_rhs_covers(op, lowering)
        return lowering.emit()

    def check_row_layout(self, op: mid.GemmOp, a: ShardGeometry, c: ShardGeometry) -> None:
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
        if a.partitions[-2] != c.partitions[-2] or a.chunk[-2] != c.chunk[-2]:
            raise PassFailedException(
                f"{name}: lhs rows ({a.partitions[-2]} partitions of {a.chunk[-2]}) and result rows "
                f"({c.partitions[-2]} partitions of {c.chunk[-2]}) are cut differently"
            )

    def check_rhs_covers(self, op: mid.GemmOp, g: GemmLowering) -> None:
        b = g.b
        blocks_k = b.padded_shape[-2] // AMP_BLOCK
        blocks_j = b.padded_shape[-1] // AMP_BLOCK
        if b.blocks[-2:] != (AMP_BLOCK, AMP_BLOCK) or g.inner_blocks > blocks_k or g.column_blocks > blocks_j:
            raise PassFailedException(
                f"mid-to-tile: mid.gemm {value_label(op.result)}: rhs tiling {list(b.blocks)} with "
                f"{blocks_k}x{blocks_j} blocks does not cover {g.inner_blocks}x{g.column_blocks} "
                f"blocks of {AMP_BLOCK}x{AMP_BLOCK}"
            )


@dataclass(frozen=True)
class MidToTilePass(ModulePass):
    """Lower `mid` functions to `tile` work lists (see the module docstring)."""

    name = "mid-to-tile"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = pipeline_config(op, self.name)
        configured_target(config, self.name)
        for function in [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]:
            if function.is_declaration:
                continue
            lowered = FunctionLowering(function, config.tiles.data).lower()
            op.body.block.insert_op_before(lowered, function)
            op.body.block.erase_op(function)
