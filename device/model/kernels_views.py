"""The layout-op kernels: `view_shard` (tile-local) and `gather_view` (one staged source
shard), which copy elements through an index view (`device/index_views.py`).

Both move storage codes bit-exactly (out and source share precision and scale) and write only
the elements of this tile's out box, inside the view's window and out's logical extent, whose
source they hold: the compiler zeroes out's padding first and, for a concat, calls them once
per input (each input a window of out). `view_shard` requires every such element's source in
the source shard on this tile.

`gather_view` has a batched form (`_gather_view_batched`): one step's tiles all read the
shard of one source tile, so whether a source element is there is one boolean mask over the
source's linear indices, and each tile's window is a fixed pattern of linear indices shifted
by a per-tile offset: one lookup for all tiles finds what each moves, and only those
elements are copied (`TileMemory.copy_elements`). `view_shard` runs tile by tile.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from device.index_views import IndexView, view_moves
from device.kernel_abi import split_view_words, viewed
from device.layouts import element_bytes
from device.model.cycles import view_cycles, view_moved_cycles
from device.model.kernel_call import Kernel, KernelBatch, KernelCall
from device.model.kernel_shards import (
    MOVE_CHUNK_ELEMENTS,
    box_on,
    holds_all,
    origins_on,
    read_codes,
    shard_box,
    storage_positions,
    unique_rows,
    write_codes,
)
from device.shard_geometry import DescriptorError, ShardGeometry


def _operands(call: KernelCall, source: str) -> tuple[ShardGeometry, ShardGeometry, IndexView]:
    try:
        out, src, view = _view_words(tuple(call.variadic))
    except DescriptorError as error:
        raise call.fail(f"bad descriptors or index view: {error}") from None
    for name, fmt in (("out", out), (source, src)):
        call.memory.check_range(call.tile, call.pointers[name], fmt.shard_bytes(),
                                f"{call.describe()}, operand '{name}'")
    if (out.precision, out.scale) != (src.precision, src.scale):
        raise call.fail(f"out is {out.precision} (scale {out.scale}) but {source} is "
                        f"{src.precision} (scale {src.scale}); {call.abi.symbol} moves elements "
                        f"without converting them")
    return out, src, view


def _copy(call: KernelCall, source: str, source_tile: int | None, local: bool) -> int:
    out, src, view = _operands(call, source)
    box = box_on(call, "out", out)
    src_box = box_on(call, source, src, source_tile)
    out_index, src_index, missing = view_moves(view, out, box, src, src_box)
    if local and missing:
        raise call.fail(f"{missing} element(s) of out's box {box} take their source outside "
                        f"{source}'s shard {src_box} on this tile; view_shard is tile-local")
    if out_index and out_index[0].size:
        codes = read_codes(call, "out", out)
        codes[out_index] = read_codes(call, source, src)[src_index]
        write_codes(call, "out", out, codes)
    # view_cycles(call.variadic, source_tile, ...), from the moves found above
    return view_moved_cycles(out_index[0].size if out_index else 1, out, src, call.target)


def view_shard(call: KernelCall) -> int:
    return _copy(call, "src", None, local=True)


def gather_view(call: KernelCall) -> int:
    return _copy(call, "staged", call.scalars["source_tile"], local=False)


@lru_cache(maxsize=1024)
def _view_words(words: tuple[int, ...]) -> tuple[ShardGeometry, ShardGeometry, IndexView]:
    """`split_view_words`, once per distinct words (a bad one raises each time)."""
    return split_view_words(words)


@lru_cache(maxsize=256)
def _window_grid(extent: tuple[int, ...], strides: tuple[int, ...]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """([rank, n] the indices of a box of `extent` from its corner, row-major; [n] their
    offsets along the view's `strides`)."""
    grid = np.indices(extent, dtype=np.int64).reshape(len(extent), -1)
    return grid, np.asarray(strides, np.int64) @ grid


def _gather_view_batched(batch: KernelBatch) -> int | None:
    """`gather_view` on every tile of a step at once. All tiles read one source shard (on
    `source_tile`), so which source elements are in it is one boolean mask over the source's
    linear indices; each tile's window part of its out box maps to the linear indices
    `offset + sum((r - starts) * strides)`, a fixed pattern shifted per tile, looked up in
    the mask for all tiles together. None (the step runs tile by tile, which names the
    failing tile) when any tile would fail a check of the per-tile form."""
    try:
        out, src, view = _view_words(batch.variadic)
    except DescriptorError:
        return None
    source_tile, tiles = batch.scalars["source_tile"], batch.tiles
    if (out.rank == 0 or src.rank == 0
            or (out.precision, out.scale) != (src.precision, src.scale)
            or not src.holds(source_tile) or not holds_all(out, tiles)
            or not batch.inside("out", out.shard_bytes())
            or not batch.inside("staged", src.shard_bytes())):
        return None
    src_start, src_stop = shard_box(src, source_tile)
    resident = np.zeros(src.shape, dtype=bool)  # source elements in the staged shard
    resident[tuple(slice(a, b) for a, b in zip(src_start, src_stop))] = True
    resident = resident.reshape(-1)
    box_starts = origins_on(out, tiles)
    low = np.maximum(np.maximum(box_starts, np.asarray(view.starts, np.int64)), 0)
    high = np.minimum(np.minimum(box_starts + np.asarray(out.chunk, np.int64),
                                 np.asarray(view.stops, np.int64)),
                      np.asarray(out.shape, np.int64))
    extents = np.where((high > low).all(axis=1)[:, None], high - low, 0)
    shift = view.offset + (low - np.asarray(view.starts, np.int64)) @ np.asarray(
        view.strides, np.int64)
    moved = np.zeros(tiles.size, dtype=np.int64)
    moves = []  # (rows, element index in the window grid, the grid) of resident elements
    shapes, group = unique_rows(extents)
    for index, shape in enumerate(shapes.tolist()):
        if 0 in shape:
            continue
        grid, offsets = _window_grid(tuple(shape), view.strides)
        members = np.flatnonzero(group == index)
        step = max(1, MOVE_CHUNK_ELEMENTS // offsets.size)
        for first in range(0, members.size, step):
            part = members[first:first + step]
            hits = resident[shift[part, None] + offsets[None, :]]
            moved[part] = hits.sum(axis=1)
            which, element = np.nonzero(hits)
            if which.size:
                moves.append((part[which], element, grid))
    if moves:
        rows = np.unique(np.concatenate([m[0] for m in moves]))
        alignment = batch.target.vector_alignment
        if (np.any(batch.pointers["out"][rows] % alignment)
                or np.any(batch.pointers["staged"][rows] % alignment)):
            return None
        _move_viewed(batch, out, src, view, src_start, box_starts, low, moves)
    return view_moved_cycles(int(moved.max()), out, src, batch.target)


def _move_viewed(batch: KernelBatch, out: ShardGeometry, src: ShardGeometry, view: IndexView,
                 src_start: tuple[int, ...], box_starts: np.ndarray, low: np.ndarray,
                 moves: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Copy the resident elements found by `_gather_view_batched`, storage codes bit-exactly."""
    itemsize = element_bytes(out.precision)
    memory = batch.memory
    out_positions, src_positions = storage_positions(out), storage_positions(src)
    strides = np.asarray(view.strides, np.int64)
    for rows, element, grid in moves:
        index = low[rows] + grid[:, element].T  # [m, rank] global out indices
        linear = view.offset + (index - np.asarray(view.starts, np.int64)) @ strides
        source = np.stack(np.unravel_index(linear, src.shape), axis=1)
        out_local = tuple((index - box_starts[rows]).T)
        src_local = tuple((source - np.asarray(src_start, np.int64)).T)
        targets = out_positions[out_local] + (batch.pointers["out"][rows] - memory.base) // itemsize
        sources = (src_positions[src_local]
                   + (batch.pointers["staged"][rows] - memory.base) // itemsize)
        memory.copy_elements(batch.tiles[rows], targets, sources, itemsize)


RECORDS: tuple[Kernel, ...] = (
    Kernel(
        viewed(
            "view_shard", ("out", "src"), (),
            "For every element r of out's box on this tile within the view's window and out's "
            "logical extent: out[r] = src[unravel(offset + sum((r - starts) * strides))], "
            "which must be in src's shard on this tile (variadic: out's and src's descriptors, "
            "then the view, device/index_views.py). Moves storage codes bit-exactly (same "
            "precision and scale); other elements of out are left as they are. Layout ops, "
            "tile-local.",
        ),
        view_shard,
        lambda call: view_cycles(call.words, None, call.tile, call.target),
    ),
    Kernel(
        viewed(
            "gather_view", ("out", "staged"), ("source_tile",),
            "staged holds the whole shard that tile `source_tile` stores in the staged format; "
            "as view_shard, but only the elements whose source is in that shard are written "
            "(others of out are left as they are). Layout ops, one call per source shard.",
            checked=("source_tile",),
        ),
        gather_view,
        lambda call: view_cycles(call.words, call.scalars["source_tile"], call.tile,
                                 call.target),
        _gather_view_batched,
    ),
)
