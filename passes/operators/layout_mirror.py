"""Result formats a reshape or transpose can take without moving an element between tiles:
the operand's cut carried through the op (a *mirror* of the operand's format).

A layout op's candidates otherwise cut one result axis across the tiles, row-major. When the
operand is cut on several axes (a batched GEMM's output: batch, row blocks and 64-column
blocks), no such split lines up with it, and the op gathers; the mirror keeps every tile's
elements on that tile, so the copy is one `view_shard` per shard (the element order may still
change inside the shard: the mirror is row-major).

- transpose: the result's axis i takes the tiling of operand axis `permutation[i]`, when the
  cut axes keep their relative order (tiles number the partitions row-major, so reordering cut
  axes would renumber the tiles: that cut is still a candidate, `permuted_format`, whose
  shards each move whole to one tile);
- reshape: per group of axes the reshape re-linearizes (`gather.reshape_groups`), an uncut
  group stays uncut, and a group cut only on its outermost operand axis, into equal chunks,
  cuts the one result axis whose chunk covers the same run of the group's elements (the
  result axes before it of extent 1, those after it whole): `[8, 384, 768]` cut into 64-column
  blocks reshaped to `[8, 384, 12, 64]` cuts the 12 heads one per tile.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from device.index_views import IndexView
from ipu_dialects import mid
from passes.operators.gather import reshape_groups
from planning.shard_geometry import geometry


def row_major_mirror(fmt: mid.TensorFormatAttr,
                     tiling: Sequence[mid.AxisTilingAttr]) -> mid.TensorFormatAttr:
    """`fmt` on the result's axes: the same tiles, partitions and replicas, row-major in
    standard memory (what a layout kernel writes)."""
    return fmt.with_changes(order=mid.ElementOrder.ROW_MAJOR, tiling=list(tiling),
                            memory=mid.MemoryClass.STANDARD)


def transposed_format(fmt: mid.TensorFormatAttr,
                      permutation: Sequence[int]) -> mid.TensorFormatAttr | None:
    cut = [axis for axis in permutation if fmt.partitions[axis] > 1]
    if cut != sorted(cut):
        return None
    return permuted_format(fmt, permutation)


def permuted_format(fmt: mid.TensorFormatAttr,
                    permutation: Sequence[int]) -> mid.TensorFormatAttr:
    """The operand's cut carried through a transpose whatever the order of its cut axes: each
    shard goes whole to one tile, the one its partition's renumbering names (a gather, whose
    batches and heads go at once: `gather.GatherRounds.group_inner`); a mirror when the cut
    axes keep their order."""
    return row_major_mirror(fmt, [fmt.tiling.data[axis] for axis in permutation])


def reshaped_format(fmt: mid.TensorFormatAttr, view: IndexView, src_shape: tuple[int, ...],
                    out_shape: tuple[int, ...]) -> mid.TensorFormatAttr | None:
    groups = reshape_groups(view, src_shape, out_shape)
    if groups is None:
        return None
    chunks = geometry(src_shape, fmt).chunk
    tiling = [mid.AxisTilingAttr(1, 1)] * len(out_shape)
    for result_axes, source_axes in groups:
        cut = [axis for axis in source_axes if fmt.partitions[axis] > 1]
        if not cut:
            continue
        outer = source_axes[0]
        parts = fmt.partitions[outer]
        if cut != [outer] or chunks[outer] * parts != src_shape[outer]:
            return None  # cut inside the group, or into unequal (padded) chunks
        run = chunks[outer] * math.prod(src_shape[a] for a in source_axes[1:])
        found = result_axis_of_run(result_axes, out_shape, run, parts)
        if found is None:
            return None
        axis, block = found
        tiling[axis] = mid.AxisTilingAttr(block, parts)
    return row_major_mirror(fmt, tiling)


def result_axis_of_run(axes: Sequence[int], shape: tuple[int, ...], run: int,
                       parts: int) -> tuple[int, int] | None:
    """(axis, chunk) of the result axis among `axes` (one reshape group, outermost first) that,
    cut into `parts` chunks, gives each partition `run` consecutive elements of the group."""
    for position, axis in enumerate(axes):
        inner = math.prod(shape[a] for a in axes[position + 1:])
        if run % inner == 0 and (run // inner) * parts == shape[axis]:
            return axis, run // inner
        if shape[axis] != 1:
            return None
    return None
