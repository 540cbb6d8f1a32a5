"""Index views: how the layout kernels (`view_shard`, `gather_view`) map an element of their
output to an element of their source.

A view is a window of the output (global logical indices `[starts, stops)`) and an affine
map from the window to the source's row-major linear index:

    source linear index = offset + sum_i (r_i - starts_i) * strides_i

then unravelled in the source's logical shape. Every layout op of the graph is one view (or,
for a concat, one view per input): a reshape keeps the linear index (strides: the output's
row-major strides), a transpose permutes the source's strides, a slice scales them by the
steps and starts at the slice's corner, a concat input is a window of the output along the
joined axis. The kernels get a view as words after their operands' descriptors:

    starts[rank], stops[rank], strides[rank], offset      (rank: the output's)

Everything here is a pure function of ints and the operands' `ShardGeometry`s: the executable
model, its cycle functions and the compiler's locality check use the same arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from device.shard_geometry import DescriptorError, ShardGeometry

Box = tuple[tuple[int, ...], tuple[int, ...]]


@dataclass(frozen=True)
class IndexView:
    starts: tuple[int, ...]
    stops: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int

    def encode(self) -> tuple[int, ...]:
        return (*self.starts, *self.stops, *self.strides, self.offset)

    @classmethod
    def decode(cls, words: tuple[int, ...], out: ShardGeometry,
               src: ShardGeometry) -> IndexView:
        """The view in `words` (all of them) for an output `out` and source `src`;
        DescriptorError if it has the wrong length or leaves either tensor."""
        rank = out.rank
        if len(words) != 3 * rank + 1:
            raise DescriptorError(f"the index view of a rank-{rank} output takes {3 * rank + 1} "
                                  f"words, got {len(words)}")
        starts, stops, strides = (tuple(int(w) for w in words[k * rank:(k + 1) * rank])
                                  for k in range(3))
        view = cls(starts, stops, strides, int(words[-1]))
        if any(not 0 <= a < b <= e for a, b, e in zip(starts, stops, out.shape)):
            raise DescriptorError(f"index view window {starts}..{stops} is not a non-empty box "
                                  f"of the output {out.shape}")
        low, high = view.source_range()
        if low < 0 or high >= math.prod(src.shape):
            raise DescriptorError(f"index view reaches source elements {low}..{high}, outside "
                                  f"the {math.prod(src.shape)} of the source {src.shape}")
        return view

    def source_range(self) -> tuple[int, int]:
        """Smallest and largest source linear index the window maps to."""
        spans = [(b - a - 1) * s for a, b, s in zip(self.starts, self.stops, self.strides)]
        return (self.offset + sum(min(0, x) for x in spans),
                self.offset + sum(max(0, x) for x in spans))


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def view_moves(view: IndexView, out: ShardGeometry, out_box: Box, src: ShardGeometry,
               src_box: Box) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], int]:
    """The elements of `out_box` (within the view's window and out's logical extent) whose
    source lies in `src_box`: (their indices local to out's shard, the source's indices local
    to src's shard, how many elements of the window's part of `out_box` are NOT there)."""
    starts = tuple(max(a, w, 0) for a, w in zip(out_box[0], view.starts))
    stops = tuple(min(b, w, e) for b, w, e in zip(out_box[1], view.stops, out.shape))
    empty = tuple(np.zeros(0, np.int64) for _ in range(out.rank))
    if any(b <= a for a, b in zip(starts, stops)):
        return empty, tuple(np.zeros(0, np.int64) for _ in range(src.rank)), 0
    grid = np.indices(tuple(b - a for a, b in zip(starts, stops)), dtype=np.int64)
    index = grid.reshape(out.rank, -1) + np.asarray(starts, np.int64)[:, None]
    linear = view.offset + ((index - np.asarray(view.starts, np.int64)[:, None])
                            * np.asarray(view.strides, np.int64)[:, None]).sum(axis=0)
    source = np.stack(np.unravel_index(linear, src.shape)) if src.rank else index[:0]
    lo, hi = (np.asarray(b, np.int64)[:, None] for b in src_box)
    resident = ((source >= lo) & (source < hi)).all(axis=0)
    out_local = tuple(index[i, resident] - out_box[0][i] for i in range(out.rank))
    src_local = tuple(source[i, resident] - src_box[0][i] for i in range(src.rank))
    return out_local, src_local, int((~resident).sum())
