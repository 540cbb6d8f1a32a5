"""What a view kernel (`view_shard`, `gather_view`) moves on each tile of a step, for all the
step's tiles at once (`view_step`): the one description of those elements, which the batched
runs copy (`kernels_views`) and the cycle functions count (`cycles.view_cycles` for one call,
`cycles.view_step_cycles` for a step: the model and the compiler's cost model alike).

A tile's window part of its out box (inside the view's window and out's logical extent) maps
to the source's linear indices `offset + sum((r - starts) * strides)`: a fixed pattern per box
extent (`window_grid`), shifted per tile. An element moves when that source element lies in
the source box: for `gather_view` one box for every tile (the staged shard of
`source_tile`), looked up in one boolean mask over the source's linear indices; for
`view_shard` each tile's own shard of the source, compared axis by axis. Where only the
counts are wanted (the cycle functions) and a source box is few runs of consecutive linear
indices, the elements are counted run by run instead (`count_in_boxes`: two binary searches
in the sorted pattern per run), which is what keeps a layer's compile at seconds: attention's
gathers at batch 8 test 230M elements one by one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from device.index_views import IndexView, row_major_strides
from device.kernel_abi import split_view_words
from device.model.kernel_shards import (
    MOVE_CHUNK_ELEMENTS,
    holds_all,
    origins_on,
    shard_box,
    unique_rows,
)
from device.shard_geometry import ShardGeometry

# (rows of the step's tiles, element index in the window grid, the grid [rank, n]) of the
# elements that move
Moves = tuple[np.ndarray, np.ndarray, np.ndarray]


@lru_cache(maxsize=1024)
def view_words(words: tuple[int, ...]) -> tuple[ShardGeometry, ShardGeometry, IndexView]:
    """`split_view_words`, once per distinct words (a bad one raises each time)."""
    return split_view_words(words)


# Count a window's moved elements run by run when a box has at most one run per this many
# window elements (two binary searches a run against one test an element).
RUNS_PER_ELEMENT = 4


@lru_cache(maxsize=256)
def window_grid(extent: tuple[int, ...], strides: tuple[int, ...]
                ) -> tuple[np.ndarray, np.ndarray]:
    """([rank, n] the indices of a box of `extent` from its corner, row-major; [n] their
    offsets along the view's `strides`)."""
    grid = np.indices(extent, dtype=np.int64).reshape(len(extent), math.prod(extent))
    return grid, np.asarray(strides, np.int64) @ grid


@lru_cache(maxsize=256)
def sorted_window_offsets(extent: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """`window_grid`'s offsets, sorted (what `count_in_boxes` searches), read-only: the
    selector counts the same windows for many candidates."""
    offsets = np.sort(window_grid(extent, strides)[1])
    offsets.setflags(write=False)
    return offsets


@dataclass(frozen=True)
class ViewStep:
    """One view step on its tiles ([n] or [n, rank] per tile, in the step's tile order)."""

    out: ShardGeometry
    src: ShardGeometry
    view: IndexView
    box_starts: np.ndarray  # [n, out rank]: each tile's out box origin
    low: np.ndarray  # [n, out rank]: the first element of its window part
    src_starts: np.ndarray  # [n, src rank]: the origin of the source box it reads
    moved: np.ndarray  # [n]: elements it copies (their source is in the source box)
    missing: np.ndarray  # [n]: elements of its window part whose source is elsewhere
    moves: tuple[Moves, ...]  # which elements (with `with_moves`; else empty)


def check_holds(out: ShardGeometry, src: ShardGeometry, tiles: np.ndarray,
                source_tile: int | np.ndarray | None) -> None:
    """DescriptorError, as the calls tile by tile would raise it first, when a tile holds no
    shard of out or the source box's tile (`source_tile`: one for all, or one per tile; else
    the tile itself) none of src."""
    sources = tiles if source_tile is None else np.broadcast_to(source_tile, tiles.shape)
    if holds_all(out, tiles) and holds_all(src, sources):
        return
    for tile, source in zip(tiles.tolist(), sources.tolist(), strict=True):
        shard_box(out, tile)
        shard_box(src, source)


def view_step(out: ShardGeometry, src: ShardGeometry, view: IndexView, tiles: np.ndarray,
              source_tile: int | np.ndarray | None, with_moves: bool = False) -> ViewStep:
    """The elements each of `tiles` (int64 [n], non-empty) moves: from `source_tile`'s shard
    of src (`gather_view`; int64 [n], one source per tile: `gather_view_round`), or with
    None from its own (`view_shard`). DescriptorError when a tile or a source tile holds no
    shard (`check_holds`)."""
    check_holds(out, src, tiles, source_tile)
    box_starts = origins_on(out, tiles).reshape(tiles.size, out.rank)
    if source_tile is None or isinstance(source_tile, np.ndarray):
        sources = tiles if source_tile is None else source_tile
        src_starts = origins_on(src, sources).reshape(tiles.size, src.rank)
    else:
        one = np.asarray(shard_box(src, source_tile)[0], np.int64).reshape(1, src.rank)
        src_starts = np.broadcast_to(one, (tiles.size, src.rank))
    low = np.maximum(np.maximum(box_starts, np.asarray(view.starts, np.int64)), 0)
    high = np.minimum(np.minimum(box_starts + np.asarray(out.chunk, np.int64),
                                 np.asarray(view.stops, np.int64)),
                      np.asarray(out.shape, np.int64))
    extents = np.where((high > low).all(axis=1)[:, None], high - low, 0)
    shift = view.offset + (low - np.asarray(view.starts, np.int64)) @ np.asarray(
        view.strides, np.int64)
    shared = (source_tile is not None and not isinstance(source_tile, np.ndarray)
              and tiles.size > 1)
    resident = _resident_test(src, src_starts, shared)
    moved = np.zeros(tiles.size, dtype=np.int64)
    moves = []
    shapes, group = unique_rows(extents)
    for index, shape in enumerate(shapes.tolist()):
        if 0 in shape:
            continue
        grid, offsets = window_grid(tuple(shape), view.strides)
        members = np.flatnonzero(group == index)
        if not with_moves and box_runs(src) * RUNS_PER_ELEMENT <= offsets.size:
            moved[members] = count_in_boxes(src, src_starts[members], shift[members],
                                            sorted_window_offsets(tuple(shape), view.strides))
            continue
        step = max(1, MOVE_CHUNK_ELEMENTS // offsets.size)
        for first in range(0, members.size, step):
            part = members[first:first + step]
            hits = resident(part, shift[part, None] + offsets[None, :])
            moved[part] = hits.sum(axis=1)
            if with_moves:
                which, element = np.nonzero(hits)
                if which.size:
                    moves.append((part[which], element, grid))
    return ViewStep(out, src, view, box_starts, low, src_starts, moved,
                    extents.prod(axis=1) - moved, tuple(moves))


def innermost_cut(src: ShardGeometry) -> int | None:
    """The last axis whose shards are smaller than the source (None: one shard is whole)."""
    cut = [axis for axis in range(src.rank) if src.chunk[axis] < src.shape[axis]]
    return cut[-1] if cut else None


def box_runs(src: ShardGeometry) -> int:
    """The most runs of consecutive linear indices one source box covers: one per index of
    the axes before the innermost axis the source cuts (the axes after it are whole)."""
    inner = innermost_cut(src)
    return 1 if inner is None else math.prod(src.chunk[:inner])


def count_in_boxes(src: ShardGeometry, src_starts: np.ndarray, shifts: np.ndarray,
                   offsets: np.ndarray) -> np.ndarray:
    """[m]: how many of the source linear indices `shifts[i] + offsets` (`offsets` sorted)
    lie in the source box at `src_starts[i]`, counted run by run (`box_runs`) with two
    binary searches each, instead of testing every element: what `moved` needs when the
    moves themselves are not asked for."""
    inner = innermost_cut(src)
    if inner is None:  # one box is the whole source: every element is in it
        return np.full(shifts.shape, offsets.size, dtype=np.int64)
    shape = np.asarray(src.shape, np.int64)
    axis_strides = np.asarray(row_major_strides(src.shape), np.int64)
    # boxes clipped to the source (a padded last shard may even start past its end)
    stops = np.maximum(np.minimum(src_starts + np.asarray(src.chunk, np.int64), shape), src_starts)
    # the runs' first linear indices, from every index of the leading axes ([m, runs])
    bases = np.zeros((shifts.size, 1), dtype=np.int64)
    valid = np.ones((shifts.size, 1), dtype=bool)
    for axis in range(inner):
        steps = np.arange(src.chunk[axis], dtype=np.int64)
        index = src_starts[:, axis, None] + steps[None, :]
        bases = (bases[:, :, None] + (index * axis_strides[axis])[:, None, :]).reshape(
            shifts.size, -1)
        valid = (valid[:, :, None] & (index < stops[:, axis, None])[:, None, :]).reshape(
            shifts.size, -1)
    low = bases + (src_starts[:, inner] * axis_strides[inner])[:, None] - shifts[:, None]
    high = bases + (stops[:, inner] * axis_strides[inner])[:, None] - shifts[:, None]
    inside = np.searchsorted(offsets, high) - np.searchsorted(offsets, low)
    return np.where(valid, inside, 0).sum(axis=1)


def _resident_test(src: ShardGeometry, src_starts: np.ndarray, shared: bool):
    """A function of (rows [m], source linear indices [m, w]) -> [m, w] bool: whether each
    source element lies in the source box of its row's tile. `shared` (one box for all, on
    many tiles): one lookup in a mask of the source; else a comparison axis by axis, whose
    cost is the window's, not the source's."""
    shape = np.asarray(src.shape, np.int64)
    if shared:  # one mask over the source's linear indices
        mask = np.zeros(src.shape, dtype=bool)
        start = src_starts[0]
        mask[tuple(slice(a, a + c) for a, c in zip(start.tolist(), src.chunk))] = True
        flat = mask.reshape(-1)
        return lambda rows, linear: flat[linear]
    chunk = np.asarray(src.chunk, np.int64)

    def per_tile(rows: np.ndarray, linear: np.ndarray) -> np.ndarray:
        inside = np.ones(linear.shape, dtype=bool)
        rest = linear
        for axis in reversed(range(src.rank)):  # unravel, last axis first
            rest, index = np.divmod(rest, shape[axis])
            offset = index - src_starts[rows, axis][:, None]
            inside &= (offset >= 0) & (offset < chunk[axis])
        return inside

    return per_tile
