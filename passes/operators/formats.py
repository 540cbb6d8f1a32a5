"""Formats the non-GEMM operators build, and the kernel descriptors that carry them.

Pointwise and attention plans cut at most one axis into partitions (block 1, `P` partitions,
shard `p` on tile `p`), so that an operand which is broadcast along that axis (or lacks it)
can sit on the same tiles as the output: whole, replicated `P` times (replica `r` on tile `r`).
A plan may also take over its operand's format as it is (`follow`), which needs no conversion.

Kernels other than the AMP GEMM are specialized on their operands' formats, as Poplar
codelets are templated on types: their scalars are the formats' descriptors
(`device.shard_geometry`), and each call finds its own shard from the tile it runs on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from device.target import WORD_BYTES
from ipu_dialects import graph, mid
from planning.gemm_problem import element_precision
from planning.shard_geometry import ShardGeometry, geometry


def storage_precision(element: Attribute) -> str:
    """The storage precision of a graph element type: the float types' (`element_precision`),
    and i32 for index tensors (graph.gather's indices, written by the host exactly)."""
    if element == graph.INDEX_ELEMENT_TYPE:
        return mid.StoragePrecision.I32
    return element_precision(element)


def storage_of(value_type: TensorType) -> tuple[str, int]:
    """(storage precision, FP8 scale) a value is stored with: its mid format's once it has
    one (an operand lowered for an earlier consumer), else its graph type's. Reading the
    graph encoding alone would give a value already retyped to the mid level scale 0, and its
    next consumer a conversion to scale 0 that saturates and flushes it."""
    if isinstance(value_type.encoding, mid.TensorFormatAttr):
        return value_type.encoding.precision.data, value_type.encoding.scale.data
    return storage_precision(value_type.get_element_type()), graph.fp8_scale(value_type)


def with_storage(fmt: mid.TensorFormatAttr, value_type: TensorType) -> mid.TensorFormatAttr:
    """`fmt` storing `value_type`'s element precision and FP8 scale."""
    precision, scale = storage_of(value_type)
    return fmt.with_changes(precision=precision, scale=scale)


def split_format(shape: Sequence[int], axis: int | None, tiles: int, value_type: TensorType,
                 indivisible: str, replication: int = 1) -> mid.TensorFormatAttr:
    """Row-major; `axis` cut into min(tiles, extent) partitions of block 1 (None: whole)."""
    partitions = [min(tiles, shape[a]) if a == axis else 1 for a in range(len(shape))]
    parts = partitions[axis] if axis is not None else 1
    precision, scale = storage_of(value_type)
    return mid.TensorFormatAttr(
        precision,
        mid.ElementOrder.ROW_MAJOR,
        [mid.AxisTilingAttr(1, p, indivisible) for p in partitions],
        replication=replication,
        group=max(parts, replication),
        scale=scale,
    )


def partitioned_axes(fmt: mid.TensorFormatAttr) -> list[int]:
    return [a for a, p in enumerate(fmt.partitions) if p > 1]


def broadcast_operand_format(out_fmt: mid.TensorFormatAttr, out_shape: Sequence[int],
                             operand_type: TensorType) -> mid.TensorFormatAttr | None:
    """The format an operand broadcast against `out_shape` needs so that every output shard's
    operand elements are on the output shard's tile; None where `out_fmt` cannot serve it
    (replicated, or an axis the operand has cut before one it is broadcast along).

    The operand keeps the output's tiling on the axes it has and is replicated once per
    partition of the cut axes it is broadcast along. Tiles number the output's partitions
    row-major, so when every such axis comes before the cut axes the operand has, tile
    `t` holds replica `t // Q`, partition `t mod Q` (Q: the operand's partitions): the one
    its output shard reads (a bias against GEMM output cut on batch, rows and columns)."""
    shape = tuple(operand_type.get_shape())
    lead = len(out_shape) - len(shape)
    if shape == tuple(out_shape[lead:]) and lead == 0:
        return with_storage(out_fmt, operand_type)
    if out_fmt.replication.data != 1:
        return None

    def broadcast(axis: int) -> bool:  # an output axis the operand does not have in full
        return axis < lead or shape[axis - lead] != out_shape[axis]

    cut = partitioned_axes(out_fmt)
    broadcast_cut = [axis for axis in cut if broadcast(axis)]
    kept_cut = [axis for axis in cut if not broadcast(axis)]
    if broadcast_cut and kept_cut and max(broadcast_cut) > min(kept_cut):
        return None
    tilings = []
    for j in range(len(shape)):
        i = j + lead
        tilings.append(mid.AxisTilingAttr(1, 1) if broadcast(i) else out_fmt.tiling.data[i])
    replicas = math.prod(out_fmt.partitions[axis] for axis in broadcast_cut)
    same_tail = len(shape) >= 2 and shape[-2:] == tuple(out_shape[-2:])
    order = out_fmt.order.data if same_tail else mid.ElementOrder.ROW_MAJOR
    precision, scale = storage_of(operand_type)
    return mid.TensorFormatAttr(
        precision,
        order,
        tilings,
        replication=replicas,
        group=out_fmt.group.data,
        memory=mid.MemoryClass.STANDARD,
        scale=scale,
        first_tile=out_fmt.first_tile.data,  # on the output's tiles
    )


def geometry_of(value_type: TensorType) -> ShardGeometry:
    """The shards of a mid tensor type: its shape cut by its `#mid.format` encoding."""
    fmt = value_type.encoding
    assert isinstance(fmt, mid.TensorFormatAttr)
    return geometry(value_type.get_shape(), fmt)


def descriptor(value_type: TensorType) -> tuple[int, ...]:
    """The kernel descriptor of a mid tensor: its shape and format, as 32-bit words."""
    return geometry_of(value_type).encode()


def shard_words(value_type: TensorType) -> int:
    nbytes = geometry_of(value_type).shard_bytes()
    return -(-nbytes // WORD_BYTES)


# ---- graph values taking their formats (graph-to-mid) -----------------------------------------


def whole_bytes(value_type: TensorType) -> int:
    """The bytes of a tensor stored whole on one tile (its `row_major_format`)."""
    return geometry(value_type.get_shape(), row_major_format(value_type, "pad")).shard_bytes()


def row_major_format(value_type: TensorType, indivisible: str) -> mid.TensorFormatAttr:
    """Graph-input policy `row_major`: the whole tensor, row-major, on one tile."""
    rank = len(value_type.get_shape())
    return mid.TensorFormatAttr(
        storage_precision(value_type.get_element_type()),
        mid.ElementOrder.ROW_MAJOR,
        [mid.AxisTilingAttr(1, 1, indivisible)] * rank,
        replication=1,
        group=1,
        scale=graph.fp8_scale(value_type)
        if isinstance(value_type.encoding, graph.Fp8ScaleAttr)
        else 0,
    )


def current_format(value: SSAValue) -> mid.TensorFormatAttr | None:
    """The format a tensor value already has, its type's `#mid.format` encoding (a lowered
    producer's), or None (a fresh graph value). The other accessors of a value's format are
    this one: `tensor_format_of`, `is_graph_tensor`, `base.format_of` (with formats assumed
    for operands not lowered yet) and `tile_maps.tensor_format` (mid-to-tile's diagnostic)."""
    assert isinstance(value.type, TensorType)
    encoding = value.type.encoding
    return encoding if isinstance(encoding, mid.TensorFormatAttr) else None


def tensor_format_of(value: SSAValue) -> mid.TensorFormatAttr:
    """The format of a value lowered already."""
    fmt = current_format(value)
    assert fmt is not None
    return fmt


def is_graph_tensor(value: SSAValue) -> bool:
    """A tensor value without a format yet."""
    return isinstance(value.type, TensorType) and current_format(value) is None


def with_format(value_type: TensorType, fmt: mid.TensorFormatAttr) -> TensorType:
    return TensorType(value_type.get_element_type(), value_type.get_shape(), fmt)
