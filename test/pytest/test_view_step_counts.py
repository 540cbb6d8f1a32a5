"""A view step's moved-element counts (`device/model/view_steps.py`): when the moves are not
asked for, they are counted run by run of each source box (`count_in_boxes`), and must equal
what the element-by-element test gives (`with_moves=True`) and a plain count over every
element of each tile's window, for transposes, reshapes and stepped slices of padded and
unpadded shards, one source tile per tile or one for all."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from device.index_views import IndexView, row_major_strides
from device.model.view_steps import box_runs, view_step
from planning.shard_geometry import ShardGeometry


def geometry(shape: tuple[int, ...], partitions: tuple[int, ...]) -> ShardGeometry:
    rank = len(shape)
    return ShardGeometry(shape, (1,) * rank, partitions, (True,) * rank, 1, math.prod(partitions))


@st.composite
def view_cases(draw):
    """(source, output, view): a transpose, a reshape or a stepped slice of the source."""
    rank = draw(st.integers(1, 4))
    src_shape = tuple(draw(st.lists(st.integers(1, 7), min_size=rank, max_size=rank)))
    strides = row_major_strides(src_shape)
    kind = draw(st.sampled_from(["transpose", "reshape", "slice"]))
    if kind == "transpose":
        order = draw(st.permutations(range(rank)))
        out_shape = tuple(src_shape[a] for a in order)
        view = IndexView((0,) * rank, out_shape, tuple(strides[a] for a in order), 0)
    elif kind == "reshape":
        total = math.prod(src_shape)
        first = draw(st.sampled_from([d for d in range(1, total + 1) if total % d == 0]))
        out_shape = (first, total // first)
        view = IndexView((0, 0), out_shape, row_major_strides(out_shape), 0)
    else:
        starts = tuple(draw(st.integers(0, e - 1)) for e in src_shape)
        steps = tuple(draw(st.integers(1, 3)) for _ in src_shape)
        out_shape = tuple(-(-(e - s) // k) for e, s, k in zip(src_shape, starts, steps))
        offset = sum(s * m for s, m in zip(starts, strides))
        view = IndexView((0,) * rank, out_shape,
                         tuple(k * m for k, m in zip(steps, strides)), offset)
    src_parts = tuple(draw(st.integers(1, e)) for e in src_shape)
    out_parts = tuple(draw(st.integers(1, e)) for e in out_shape)
    return geometry(src_shape, src_parts), geometry(out_shape, out_parts), view


def plain_counts(out: ShardGeometry, src: ShardGeometry, view: IndexView, tiles: np.ndarray,
                 sources: np.ndarray) -> list[int]:
    """Every element of each tile's out box inside the view's window, looked up one by one."""
    counts = []
    for tile, source in zip(tiles.tolist(), sources.tolist()):
        out_low, out_high = out.shard_box(tile)
        src_low, src_high = src.shard_box(source)
        count = 0
        for index in np.ndindex(*(h - lo for lo, h in zip(out_low, out_high))):
            element = tuple(lo + i for lo, i in zip(out_low, index))
            # inside the view's window and the output's logical extent (not its padding)
            if any(not (a <= e < min(b, s)) for e, a, b, s in zip(element, view.starts,
                                                                  view.stops, out.shape)):
                continue
            linear = view.offset + sum((e - a) * k for e, a, k in zip(element, view.starts,
                                                                        view.strides))
            where = np.unravel_index(linear, src.shape)
            count += all(lo <= w < hi for w, lo, hi in zip(where, src_low, src_high))
        counts.append(count)
    return counts


@settings(max_examples=150, deadline=None)
@given(view_cases(), st.integers(0, 2**16), st.booleans())
def test_counted_runs_equal_every_element_tested(case, seed, shared):
    src, out, view = case
    tiles = np.arange(out.partition_count, dtype=np.int64)
    rng = np.random.default_rng(seed)
    if shared:  # one source box for every tile (`gather_view`)
        source = int(rng.integers(src.partition_count))
        sources = np.full(tiles.shape, source)
        counted = view_step(out, src, view, tiles, source)
        tested = view_step(out, src, view, tiles, source, with_moves=True)
    else:  # one source box per tile (`gather_view_round`)
        sources = rng.integers(src.partition_count, size=tiles.size).astype(np.int64)
        counted = view_step(out, src, view, tiles, sources)
        tested = view_step(out, src, view, tiles, sources, with_moves=True)
    expected = plain_counts(out, src, view, tiles, sources)
    assert counted.moved.tolist() == tested.moved.tolist() == expected
    assert counted.missing.tolist() == tested.missing.tolist()


def test_a_box_has_one_run_per_index_before_its_innermost_cut():
    """The case that made the counting worth it: attention's [batch, heads, seq, head_dim]
    cut on batch, heads and seq (head_dim whole) is one run of consecutive elements per
    shard; a box cut on its last axis is one run per row."""
    assert box_runs(geometry((8, 12, 384, 64), (8, 12, 12, 1))) == 1
    assert box_runs(geometry((8, 384, 768), (1, 1, 768))) == 8 * 384
