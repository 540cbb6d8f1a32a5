"""Modeled cycles of each step, from the target's rates only (no constants here).

Every function is pure: kernel cycles come from a kernel's scalars (for descriptor kernels the
decoded `ShardGeometry`s, in pointer order), the tile it runs on and the `Target`, never from
tile memory. The executable model charges exactly these, and the compiler's cost model calls
the same functions, so the selector and the model cannot disagree on a plan's cycles. Each
kernel's record names its function (`Kernel.cycles`); `device.kernels.kernel_cycles(symbol,
scalars, tile, target)` finds it by symbol for either caller.

The layout kernels, called on every tile of a chip once per source shard, have a step-wide
form (`gather_step_cycles`, `view_step_cycles`: the slowest of a step's tiles, from NumPy
boxes of all of them) and their one-call functions are that form on one tile, so a call and
a step are counted by one description (`device.kernels.step_cycles` reads the step-wide
forms; the batched model runs charge them from the same boxes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from device.layouts import AMP_BLOCK, element_bytes
from device.model.kernel_shards import (
    GatherBoxes,
    gather_boxes,
    round_boxes,
    round_sources,
    round_takers,
)
from device.model.view_steps import ViewStep, check_holds, view_step
from device.model.view_steps import view_words as cached_view_words
from device.shard_geometry import ShardGeometry
from device.target import WORD_BYTES, Precision, Target


def exchange_step_cycles(phase_events: int, target: Target) -> int:
    """A sync, then one exchange event per cycle for the whole phase."""
    return target.sync_cycles + phase_events


def gemm_cycles(rows: int, precision: str, target: Target) -> int:
    """One `rows` x 64 panel times one 64x64 block on the AMP (`precision`: the inputs')."""
    return target.amp_cycles(rows * AMP_BLOCK * AMP_BLOCK, precision)


def copy_cycles(nbytes: int, target: Target) -> int:
    return target.vector_cycles(nbytes)


def fill_zero_cycles(words: int, target: Target) -> int:
    return target.vector_cycles(words * WORD_BYTES)


def kernel_step_cycles(per_tile_cycles: list[int]) -> int:
    """Tiles run their kernels in parallel; the step lasts as long as the slowest tile."""
    return max(per_tile_cycles, default=0)


# ---- descriptor kernels --------------------------------------------------------------------
def _moved_bytes(elements: int, *formats: ShardGeometry) -> int:
    """Bytes a repacking loop streams: each element loaded and stored at the wider width."""
    return elements * max(element_bytes(f.precision) for f in formats)


def _f32_vector_cycles(elements: int, target: Target) -> int:
    return -(-elements // target.vector_f32_lanes)


def convert_shard_cycles(out: ShardGeometry, src: ShardGeometry, tile: int,
                         target: Target) -> int:
    """Repack this tile's shard from src's order/precision/scale into out's."""
    out.shard_box(tile)  # the tile must hold a shard of out
    return target.vector_cycles(_moved_bytes(out.shard_elements, out, src))


def gather_shard_cycles(out: ShardGeometry, staged: ShardGeometry, source_tile: int,
                        tile: int, target: Target) -> int:
    """Copy the elements of source_tile's staged shard that this tile's out shard holds: the
    step-wide form on one tile, so that one call and a whole step count alike."""
    return gather_step_cycles(out, staged, source_tile, np.array([tile], np.int64), target)


def gather_step_cycles(out: ShardGeometry, staged: ShardGeometry, source_tile: int,
                       tiles: np.ndarray, target: Target) -> int:
    """A `gather_shard` step on `tiles` (int64 [n]; 0 for none): the cycles of its slowest tile, the one
    that moves most (`gather_boxes` of all tiles at once)."""
    if tiles.size == 0:
        return 0
    return gather_boxes_cycles(gather_boxes(out, staged, source_tile, tiles), target)


def gather_round_cycles(out: ShardGeometry, staged: ShardGeometry,
                        scalars: Mapping[str, int], tiles: np.ndarray, target: Target) -> int:
    """A `gather_round` step on `tiles` (int64 [n]; 0 for none): each tile finds its source
    tile (`round_sources`, `Target.round_select_cycles`), then moves as `gather_shard` does;
    the slowest tile's cycles."""
    if tiles.size == 0:
        return 0
    return gather_boxes_cycles(round_boxes(out, staged, scalars, tiles), target) + \
        target.round_select_cycles


def gather_boxes_cycles(boxes: GatherBoxes, target: Target) -> int:
    """The slowest of the tiles of `boxes` (0 for none): the largest move's cycles."""
    return gather_moved_cycles(int(boxes.moved.max(initial=0)), boxes.out, boxes.staged, target)


def gather_moved_cycles(elements: int, out: ShardGeometry, staged: ShardGeometry,
                        target: Target) -> int:
    """A `gather_shard` call that moves `elements` elements. Non-decreasing in `elements`:
    the batched model charges a step the cycles of its largest move, which is the slowest
    tile's (`kernel_step_cycles`)."""
    return target.vector_cycles(_moved_bytes(elements, out, staged))


def pointwise_cycles(formats: Sequence[ShardGeometry], tile: int, target: Target,
                     per_element: int = 0, f32_passes: int = 1) -> int:
    """A pointwise kernel over this tile's shard of out (`formats[0]`; the rest its operands):
    every element streamed at the widest of the formats' widths, `per_element` cycles of a
    special function (erf, tanh; from the `Target`), then `f32_passes` FP32 vector passes."""
    out = formats[0]
    out.shard_box(tile)  # the tile must hold a shard of out
    elements = out.shard_elements
    return (target.vector_cycles(_moved_bytes(elements, *formats)) + elements * per_element
            + _f32_vector_cycles(f32_passes * elements, target))


def add_cycles(out: ShardGeometry, lhs: ShardGeometry, rhs: ShardGeometry, tile: int,
               target: Target) -> int:
    """One FP32 add per element of this tile's out shard (operands read, out stored)."""
    return pointwise_cycles((out, lhs, rhs), tile, target)


def gather_rows_cycles(out: ShardGeometry, table: ShardGeometry, indices: ShardGeometry,
                       tile: int, target: Target) -> int:
    """Per output row of this tile's out box: its index loaded and checked
    (`gather_row_cycles`), then its slice of the table row copied (or zeros stored)."""
    starts, stops = out.shard_box(tile)
    lead = indices.rank
    rows = math.prod(b - a for a, b in zip(starts[:lead], stops[:lead]))
    row_elements = math.prod(b - a for a, b in zip(starts[lead:], stops[lead:]))
    return (target.vector_cycles(rows * row_elements * element_bytes(out.precision))
            + rows * target.gather_row_cycles)


def attention_cycles(out: ShardGeometry, query: ShardGeometry, key: ShardGeometry,
                     value: ShardGeometry, tile: int, target: Target) -> int:
    """For this tile's query box: scores and P @ V on the AMP, softmax on the vector unit.

    Scores run at the query precision's AMP rate (FP8 at the FP16 rate: FP32 partials),
    P @ V at the FP32 rate (P is FP32). Causal masking is not credited: every score of the
    box is computed, the masked ones then set to -inf."""
    starts, stops = out.shard_box(tile)
    heads = math.prod(b - a for a, b in zip(starts[:-2], stops[:-2]))
    query_rows = stops[-2] - starts[-2]
    key_rows, head_dim, value_dim = key.shape[-2], query.shape[-1], value.shape[-1]
    scores = heads * query_rows * key_rows
    score_precision = Precision.F32 if query.precision == Precision.F32 else Precision.F16
    amp = (target.amp_cycles(scores * head_dim, score_precision)
           + target.amp_cycles(scores * value_dim, Precision.F32))
    softmax = scores * target.exp_cycles_per_element + _f32_vector_cycles(3 * scores, target)
    return amp + softmax + target.vector_cycles(_moved_bytes(out.shard_elements, out, query))


def layer_norm_cycles(out: ShardGeometry, src: ShardGeometry, weight: ShardGeometry,
                      bias: ShardGeometry, tile: int, target: Target) -> int:
    """Per row of this tile's shard: two FP32 passes for the statistics, one reciprocal
    square root, one pass to normalize, scale and shift (weight and bias read per row)."""
    out.shard_box(tile)
    elements = out.shard_elements
    rows = elements // max(out.chunk[-1], 1) if out.rank else 1
    return (target.vector_cycles(_moved_bytes(elements, out, src, weight, bias))
            + _f32_vector_cycles(5 * elements, target) + rows * target.rsqrt_cycles)


STATS_PER_ROW = 2  # the column-split layer norm's statistics of a row: mean and M2 (FP32)


def layer_norm_stats_cycles(stats: ShardGeometry, src: ShardGeometry, tile: int,
                            target: Target) -> int:
    """The column-split layer norm's first step (`layer_norm_stats`): per row of this tile's
    columns, an FP32 pass for the mean and one for the squared deviations from it (two FP32
    operations), then its two statistics stored."""
    src.shard_box(tile)
    elements = src.shard_elements
    rows = elements // max(src.chunk[-1], 1) if src.rank else 1
    return (target.vector_cycles(_moved_bytes(elements, src)
                                 + STATS_PER_ROW * rows * element_bytes(stats.precision))
            + _f32_vector_cycles(3 * elements, target))


def layer_norm_apply_cycles(out: ShardGeometry, src: ShardGeometry, weight: ShardGeometry,
                            bias: ShardGeometry, stats: ShardGeometry, tile: int,
                            target: Target) -> int:
    """The column-split layer norm's last step (`layer_norm_apply`): per row the C column
    parts' statistics read and merged (four FP32 operations each), one reciprocal square
    root; per element the normalization, scale and shift (three FP32 operations)."""
    out.shard_box(tile)
    elements = out.shard_elements
    rows = elements // max(out.chunk[-1], 1) if out.rank else 1
    parts = out.partitions[-1] if out.rank else 1
    merged = STATS_PER_ROW * parts * rows
    return (target.vector_cycles(_moved_bytes(elements, out, src, weight, bias)
                                 + merged * element_bytes(stats.precision))
            + _f32_vector_cycles(3 * elements + 2 * merged, target) + rows * target.rsqrt_cycles)


def view_cycles(view_words: tuple[int, ...], source_tile: int | None, tile: int,
                target: Target) -> int:
    """Copy the elements of this tile's out box whose source is in the source shard (on
    `source_tile`, or for a tile-local view on this tile), one element at a time through the
    index map: loads and stores at the wider width. The step-wide form on one tile."""
    return view_step_cycles(view_words, source_tile, np.array([tile], np.int64), target)


def view_step_cycles(words: tuple[int, ...], source_tile: int | np.ndarray | None,
                     tiles: np.ndarray, target: Target) -> int:
    """A view kernel step on `tiles` (int64 [n]; 0 for none): its slowest tile's cycles, from
    what every tile moves (`view_steps.view_step`, all at once)."""
    if tiles.size == 0:
        return 0
    out, src, view = cached_view_words(tuple(words))
    return view_moves_cycles(view_step(out, src, view, tiles, source_tile), target)


def view_round_cycles(words: tuple[int, ...], scalars: Mapping[str, int], tiles: np.ndarray,
                      target: Target) -> int:
    """A `gather_view_round` step on `tiles` (int64 [n]; 0 for none): each tile finds its
    source tile (`round_sources`, `Target.round_select_cycles`), then moves as `gather_view`
    does; the slowest tile's cycles."""
    if tiles.size == 0:
        return 0
    out, src, view = cached_view_words(tuple(words))
    sources = round_sources(scalars, tiles)
    check_holds(out, src, tiles, sources)
    takes = round_takers(scalars, tiles, sources)
    moved = (view_step(out, src, view, tiles[takes], sources[takes]).moved if takes.any()
             else np.zeros(1, np.int64))
    return view_moved_cycles(int(moved.max(initial=0)), out, src, target) + \
        target.round_select_cycles


def view_moves_cycles(step: ViewStep, target: Target) -> int:
    """The cycles of the tile of `step` that moves most."""
    return view_moved_cycles(int(step.moved.max(initial=0)), step.out, step.src, target)


def view_moved_cycles(elements: int, out: ShardGeometry, src: ShardGeometry,
                      target: Target) -> int:
    """A view kernel call that moves `elements` elements. Non-decreasing
    in `elements`: the batched model charges a step its largest move's cycles."""
    return target.vector_cycles(_moved_bytes(elements, out, src))
