"""Modeled cycles of each step, from the target's rates only (no constants here).

Every function is pure: kernel cycles come from a kernel's scalars (for descriptor kernels the
decoded `ShardGeometry`s, in pointer order), the tile it runs on and the `Target`, never from
tile memory. The executable model charges exactly these, and the compiler's cost model calls
the same functions, so the selector and the model cannot disagree on a plan's cycles. Each
kernel's record names its function (`Kernel.cycles`); `device.kernels.kernel_cycles(symbol,
scalars, tile, target)` finds it by symbol for either caller.
"""

from __future__ import annotations

import math

from device.index_views import view_moves
from device.kernel_abi import split_view_words
from device.layouts import AMP_BLOCK, element_bytes
from device.model.kernel_shards import shard_box
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


def box_overlap(*boxes: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[int, ...]:
    """Per-axis extent of the intersection of boxes (0 where they do not meet)."""
    starts = [max(axis) for axis in zip(*(b[0] for b in boxes))]
    stops = [min(axis) for axis in zip(*(b[1] for b in boxes))]
    return tuple(max(0, stop - start) for start, stop in zip(starts, stops))


def convert_shard_cycles(out: ShardGeometry, src: ShardGeometry, tile: int,
                         target: Target) -> int:
    """Repack this tile's shard from src's order/precision/scale into out's."""
    out.shard_box(tile)  # the tile must hold a shard of out
    return target.vector_cycles(_moved_bytes(out.shard_elements, out, src))


def gather_shard_cycles(out: ShardGeometry, staged: ShardGeometry, source_tile: int,
                        tile: int, target: Target) -> int:
    """Copy the elements of source_tile's staged shard that this tile's out shard holds."""
    logical = (tuple(0 for _ in out.shape), out.shape)
    extent = box_overlap(shard_box(staged, source_tile), shard_box(out, tile), logical)
    return gather_moved_cycles(math.prod(extent), out, staged, target)


def gather_moved_cycles(elements: int, out: ShardGeometry, staged: ShardGeometry,
                        target: Target) -> int:
    """A `gather_shard` call that moves `elements` elements. Non-decreasing in `elements`:
    the batched model charges a step the cycles of its largest move, which is the slowest
    tile's (`kernel_step_cycles`)."""
    return target.vector_cycles(_moved_bytes(elements, out, staged))


def gelu_cycles(out: ShardGeometry, src: ShardGeometry, tile: int, target: Target) -> int:
    """erf per element, then the FP32 multiply-adds, over this tile's whole shard."""
    out.shard_box(tile)
    elements = out.shard_elements
    return (target.vector_cycles(_moved_bytes(elements, out, src))
            + elements * target.erf_cycles_per_element + _f32_vector_cycles(elements, target))


def gelu_tanh_cycles(out: ShardGeometry, src: ShardGeometry, tile: int, target: Target) -> int:
    """tanh per element around the FP32 passes of its cubic and product, over this tile's
    whole shard."""
    out.shard_box(tile)
    elements = out.shard_elements
    return (target.vector_cycles(_moved_bytes(elements, out, src))
            + elements * target.tanh_cycles_per_element
            + _f32_vector_cycles(target.tanh_gelu_f32_passes * elements, target))


def add_cycles(out: ShardGeometry, lhs: ShardGeometry, rhs: ShardGeometry, tile: int,
               target: Target) -> int:
    """One FP32 add per element of this tile's out shard (operands read, out stored)."""
    out.shard_box(tile)
    elements = out.shard_elements
    return (target.vector_cycles(_moved_bytes(elements, out, lhs, rhs))
            + _f32_vector_cycles(elements, target))


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


def view_cycles(view_words: tuple[int, ...], source_tile: int | None, tile: int,
                target: Target) -> int:
    """Copy the elements of this tile's out box whose source is in the source shard (on
    `source_tile`, or for a tile-local view on this tile), one element at a time through the
    index map: loads and stores at the wider width."""
    out, src, view = split_view_words(view_words)
    moved, _, _ = view_moves(view, out, out.shard_box(tile), src,
                             src.shard_box(tile if source_tile is None else source_tile))
    return view_moved_cycles(moved[0].size if moved else 1, out, src, target)


def view_moved_cycles(elements: int, out: ShardGeometry, src: ShardGeometry,
                      target: Target) -> int:
    """A view kernel call that moves `elements` elements (a rank-0 out: 1). Non-decreasing
    in `elements`: the batched model charges a step its largest move's cycles."""
    return target.vector_cycles(_moved_bytes(elements, out, src))
