"""Helpers the operator lowerings share: operand formats and affine maps over loop indices.

Per-iteration quantities of tile work (home tiles, byte offsets) are builtin affine maps over
the iteration vector (d0, d1, ...) of the enclosing `tile.loop`s, outermost first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.utils.exceptions import PassFailedException

from device.layouts import AMP_BLOCK
from ipu_dialects import mid
from ipu_dialects.locations import located, value_label
from ipu_dialects.tile import BufferOp, LoopOp, TileSetAttr, WorkProvenanceAttr
from passes.operators.formats import current_format
from planning.gemm_problem import UNTRANSPOSED_ORDER, effective_format
from planning.shard_geometry import ShardGeometry, geometry

if TYPE_CHECKING:
    from passes.operators.base import TileLowering


def tensor_format(op: Operation, what: str, value: SSAValue) -> tuple[TensorType, mid.TensorFormatAttr]:
    """A lowered value's type and format (`formats.current_format`), or a diagnostic naming
    `op` and `what` the value is to it."""
    value_type = value.type
    if isinstance(value_type, TensorType) and (fmt := current_format(value)) is not None:
        return value_type, fmt
    raise PassFailedException(
        f"mid-to-tile: {op.name} {what} {value_label(value)} has type {value_type}, "
        "not a tensor with a #mid.format encoding"
    )


def effective_operand(op: Operation, what: str,
                      value: SSAValue) -> tuple[TensorType, mid.TensorFormatAttr]:
    """A GEMM operand's type and format; a transposed one (amp_left_t/amp_right_t) as the
    type and format of its transpose, which is how the GEMM lowerings index it."""
    return effective_type(*tensor_format(op, what, value))


def effective_type(value_type: TensorType,
                   fmt: mid.TensorFormatAttr) -> tuple[TensorType, mid.TensorFormatAttr]:
    """`effective_operand` of a type and its format."""
    if fmt.order.data not in UNTRANSPOSED_ORDER:
        return value_type, fmt
    shape = tuple(value_type.get_shape())
    return (TensorType(value_type.get_element_type(), (*shape[:-2], shape[-1], shape[-2]),
                       effective_format(fmt)), effective_format(fmt))


@dataclass(frozen=True)
class GemmOperands:
    """The types a GEMM layout's lowering reads its operands by, each with its format as its
    encoding: the op's own, or for a folded batched plan the fold's matrices
    (`planning/gemm_fold.py`), whose formats place every element where the op's do."""

    lhs: TensorType
    rhs: TensorType
    out: TensorType

    @staticmethod
    def of(op: Operation) -> GemmOperands:
        return GemmOperands(*(tensor_format(op, what, value)[0] for what, value in
                              (("lhs", op.operands[0]), ("rhs", op.operands[1]),
                               ("result", op.results[0]))))

    def typed(self) -> tuple[tuple[TensorType, mid.TensorFormatAttr], ...]:
        """((type, format) of lhs, rhs, out)."""
        return tuple((t, t.encoding) for t in (self.lhs, self.rhs, self.out))  # type: ignore[misc]

    def geometries(self) -> tuple[ShardGeometry, ShardGeometry, ShardGeometry]:
        """The shard geometries of lhs, rhs and out (A, B, C)."""
        a, b, c = (geometry(t.get_shape(), fmt) for t, fmt in self.typed())
        return a, b, c


@dataclass
class GemmWork:
    """What every GEMM layout's lowering states its tile work with: the op, and the provenance
    of each tile op (the graph op, the value the op works on, why)."""

    op: mid.GemmOp

    def provenance(self, value: SSAValue, reason: str) -> WorkProvenanceAttr:
        return WorkProvenanceAttr(f"graph.gemm {value_label(self.op.result)}", value_label(value), reason)


def amp_slots(lowering: TileLowering, name: str, tiles: TileSetAttr, lhs_rows: int, columns: int,
              a: ShardGeometry, b: ShardGeometry,
              roles: dict[mid.OperandRole, mid.OperandPlanAttr]) -> tuple[BufferOp, BufferOp]:
    """The A slot (`lhs_rows` x 64, amp_left) and the B slot (64 x `columns`, amp_right) on
    `tiles`, where a grid GEMM's tiles receive the panel and the blocks of one K step, with
    the alignment (and A's access tail) of the plan's left and right operands."""
    left, right = roles[mid.OperandRole.LEFT], roles[mid.OperandRole.RIGHT]
    lhs_slot = lowering.scratch(f"{name}_lhs_slot", tiles, (lhs_rows, AMP_BLOCK), a.precision,
                                "amp_left", "standard", left.alignment.data, left.tail.data)
    rhs_slot = lowering.scratch(f"{name}_rhs_slot", tiles, (AMP_BLOCK, columns), b.precision,
                                "amp_right", "standard", right.alignment.data)
    return lhs_slot, rhs_slot


@dataclass(frozen=True)
class LayerBlocks:
    """Where the K block l*s + i of a layered GEMM's A and B lives (the K-split's and the 3-D
    grid's layer l, step i): the grid column and byte offset of A's panel, the grid row and
    byte offset of B's blocks, in every layer's copy."""

    steps: int  # s: K blocks per layer
    a_k_blocks: int  # kpa: K blocks of A per tile
    b_k_blocks: int  # kpb: K blocks of B per tile
    a_panel_bytes: int  # one K block of a tile's A rows
    b_blocks_bytes: int  # one K block of a tile's B panels

    def layer_block(self, layer: AffineExpr | int, i: AffineExpr) -> AffineExpr:
        return i + layer * self.steps

    def a_column(self, layer: AffineExpr | int, i: AffineExpr) -> AffineExpr:
        return self.layer_block(layer, i) // self.a_k_blocks

    def a_offset(self, layer: AffineExpr | int, i: AffineExpr) -> AffineExpr:
        return (self.layer_block(layer, i) % self.a_k_blocks) * self.a_panel_bytes

    def b_row(self, layer: AffineExpr | int, i: AffineExpr) -> AffineExpr:
        return self.layer_block(layer, i) // self.b_k_blocks

    def b_offset(self, layer: AffineExpr | int, i: AffineExpr) -> AffineExpr:
        return (self.layer_block(layer, i) % self.b_k_blocks) * self.b_blocks_bytes


class Step(Protocol):
    """The tile work of one block step of a lowering, at block `index` (an affine expression of
    the enclosing loops' indices `ivs`); `init` for the first, whose kernel initializes."""

    def __call__(self, ivs: list[SSAValue], index: AffineExpr, /, *, init: bool) -> list[Operation]: ...


def first_then_loop(step: Step, count: int, name: str,
                    provenance: WorkProvenanceAttr) -> list[Operation]:
    """`step` of block 0 (init), then for `count` > 1 a `tile.loop %name = 1 to count` of the
    step of its block: the block loop stays a loop, whatever the count."""
    ops = step([], AffineExpr.constant(0), init=True)
    if count > 1:
        loop = LoopOp(1, count, provenance)
        loop.induction_var.name_hint = name
        loop.body.block.add_ops(step([loop.induction_var], AffineExpr.dimension(0), init=False))
        ops.append(loop)
    return ops


def refuse_first_tiles(op: Operation, plans: str) -> None:
    """`plans` (the lowerings that place their work from tile 0 on: attention, repeat, the
    GEMM layouts but the row plan) need every value of `op` to start at tile 0."""
    for value in (*op.operands, *op.results):
        fmt = value.type.encoding if isinstance(value.type, TensorType) else None
        if isinstance(fmt, mid.TensorFormatAttr) and fmt.first_tile.data:
            raise PassFailedException(located(
                op,
                f"mid-to-tile: {op.name} {value_label(value)} starts at tile "
                f"{fmt.first_tile.data} (first_tile); {plans} are lowered from tile 0 only: "
                "move the value there with a mid.rearrange"
            ))


def tiles_of(geom: ShardGeometry) -> TileSetAttr:
    """The tiles that hold a shard of `geom` (from its first tile on)."""
    return TileSetAttr.range(geom.first_tile, geom.tile_stop)


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


def gemm_scalars(rows: int, a: ShardGeometry, b: ShardGeometry, c: ShardGeometry) -> list[int]:
    """The AMP GEMM kernels' scalars (every GEMM layout): rows; FP8 kernels also take the
    operands' scales (value = q * 2**scale) and the unit of the FP16 partials (`c`'s scale,
    the FP8 result's)."""
    if a.precision != "f8f143":
        return [rows]
    return [rows, a.scale, b.scale, c.scale]
