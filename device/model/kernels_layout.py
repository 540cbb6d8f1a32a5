"""Word and layout kernels: `copy_words` and `fill_zero` (words), `convert_shard` (cast and
tile-local rearrange), `gather_shard` (one source shard's part of this tile's shard) and
`gather_round` (the same from the shard this tile received in a round of a concurrent gather,
found from its tile id: `kernel_shards.round_sources`).

`convert_shard` rounds once from the source values to the destination precision: to f16
round-to-nearest-even with overflow to inf, to FP8 saturating at +-240 * 2**scale
(`device.layouts`), widening exactly. `gather_shard` moves storage codes bit-exactly (the two
formats share precision and scale) and leaves every element outside the intersection of the
source box, this tile's box and the logical extent as it was: the compiler zeroes the
destination first and calls it once per source tile.

`gather_shard`'s batched form runs a step on all its tiles at once: every tile's out box
from the format's origins (`shard_origins`), the intersections with the source box in
NumPy, and the elements of the tiles whose intersection is not empty (a few per step) moved
through the formats' storage positions (`kernel_shards.copy_boxes`), never unpacking a
whole shard.
"""

from __future__ import annotations

import numpy as np

from device.kernel_abi import described, words_abi
from device.model.cycles import (
    convert_shard_cycles,
    copy_cycles,
    fill_zero_cycles,
    gather_boxes_cycles,
    gather_round_cycles,
    gather_shard_cycles,
    gather_step_cycles,
)
from device.model.kernel_call import (
    Kernel,
    KernelBatch,
    KernelCall,
    KernelScalars,
    StepScalars,
    of_formats,
)
from device.model.kernel_shards import (
    ROUND_SCALARS,
    GatherBoxes,
    box_on,
    copy_boxes,
    decoded,
    gather_boxes,
    holds_all,
    is_empty,
    local_slices,
    operand_formats,
    read_codes,
    read_values,
    round_source,
    round_sources,
    round_takers,
    same_box,
    write_codes,
    write_values,
    zero_padding,
)
from device.shard_geometry import DescriptorError, ShardGeometry, cached_descriptors
from device.target import WORD_BYTES


def copy_words(call: KernelCall) -> int:
    words = call.positive_scalar("words", minimum=0)
    out, src = (call.aligned_pointer(n, WORD_BYTES) for n in ("out", "src"))
    nbytes = words * WORD_BYTES
    call.write("out", out, call.read("src", src, nbytes))
    return copy_cycles(nbytes, call.target)


def _copy_words_batched(batch: KernelBatch) -> int | None:
    words = batch.scalars["words"]
    nbytes = words * WORD_BYTES
    if words < 0 or not (batch.aligned("out", WORD_BYTES) and batch.aligned("src", WORD_BYTES)):
        return None
    if not (batch.inside("out", nbytes) and batch.inside("src", nbytes)):
        return None
    batch.write("out", batch.read("src", nbytes))
    return copy_cycles(nbytes, batch.target)


def fill_zero(call: KernelCall) -> int:
    words = call.positive_scalar("words", minimum=0)
    out = call.aligned_pointer("out", WORD_BYTES)
    call.write("out", out, np.zeros(words * WORD_BYTES, dtype=np.uint8))
    return fill_zero_cycles(words, call.target)


def _check_same_tensor(call: KernelCall, first: str, second: str, formats) -> None:
    a, b = formats[first], formats[second]
    if a.shape != b.shape:
        raise call.fail(f"'{first}' has shape {a.shape} but '{second}' has {b.shape}: not "
                        f"one tensor")


def convert_shard(call: KernelCall) -> int:
    formats = operand_formats(call)
    _check_same_tensor(call, "out", "src", formats)
    out, src = formats["out"], formats["src"]
    box = same_box(call, out, "src", src, "; convert_shard converts a shard in place of its box")
    values = read_values(call, "src", src)
    write_values(call, "out", out, zero_padding(values, box, out))
    return convert_shard_cycles(out, src, call.tile, call.target)


def gather_shard(call: KernelCall) -> int:
    return _gather_from(call, call.scalars["source_tile"])


def gather_round(call: KernelCall) -> int:
    source, takes = round_source(call)
    if takes:
        return _gather_from(call, source) + call.target.round_select_cycles
    out, staged = _checked_formats(call)
    return gather_round_cycles(out, staged, call.scalars, np.array([call.tile], np.int64),
                               call.target)


def _checked_formats(call: KernelCall) -> tuple[ShardGeometry, ShardGeometry]:
    formats = operand_formats(call)
    _check_same_tensor(call, "out", "staged", formats)
    out, staged = formats["out"], formats["staged"]
    if (out.precision, out.scale) != (staged.precision, staged.scale):
        raise call.fail(f"out is {out.precision} (scale {out.scale}) but staged is "
                        f"{staged.precision} (scale {staged.scale}); {call.abi.symbol} moves "
                        f"elements without converting them")
    return out, staged


def _gather_from(call: KernelCall, source_tile: int) -> int:
    out, staged = _checked_formats(call)
    source_box = box_on(call, "staged", staged, source_tile)
    box = box_on(call, "out", out)
    boxes = gather_boxes(out, staged, source_tile, np.array([call.tile], np.int64))
    low = tuple(boxes.low[0].tolist())
    region = (low, tuple(a + e for a, e in zip(low, boxes.extents[0].tolist())))
    if not is_empty(region):
        codes = read_codes(call, "out", out)
        codes[local_slices(region, box[0])] = read_codes(call, "staged", staged)[
            local_slices(region, source_box[0])]
        write_codes(call, "out", out, codes)
    return gather_boxes_cycles(boxes, call.target)


def _gather_shard_batched(batch: KernelBatch) -> int | None:
    """`gather_shard` on every tile of a step at once: the boxes of all tiles in NumPy, the
    elements of the (few) tiles whose box meets the source shard moved in one operation per
    box extent (`copy_boxes`). None (the step then runs tile by tile, which names the
    failing tile) when any tile would fail a check of the per-tile form."""
    return _gather_batched(batch, batch.scalars["source_tile"])


def _gather_round_batched(batch: KernelBatch) -> int | None:
    """`gather_round` on every tile of a step at once, each tile from its own source tile."""
    try:
        sources = round_sources(batch.scalars, batch.tiles)
    except ValueError:
        return None
    cycles = _gather_batched(batch, sources, round_takers(batch.scalars, batch.tiles, sources))
    return None if cycles is None else cycles + batch.target.round_select_cycles


def _gather_batched(batch: KernelBatch, source_tile: int | np.ndarray,
                    takes: np.ndarray | None = None) -> int | None:
    """The batched gather from `source_tile` (one, or one per tile), on the tiles that take
    (`takes`: all when None; the others move nothing)."""
    boxes = _gather_boxes(batch.variadic, source_tile, batch.tiles)
    if boxes is not None and takes is not None:
        boxes = boxes.taken_by(takes)
    if boxes is None or not (batch.inside("out", boxes.out.shard_bytes())
                             and batch.inside("staged", boxes.staged.shard_bytes())):
        return None
    out, staged = boxes.out, boxes.staged
    rows = np.flatnonzero(boxes.moved > 0)
    if rows.size:
        alignment = batch.target.vector_alignment
        if (np.any(batch.pointers["out"][rows] % alignment)
                or np.any(batch.pointers["staged"][rows] % alignment)):
            return None
        copy_boxes(batch, rows, "out", out, boxes.low - boxes.starts, "staged", staged,
                   boxes.low - boxes.source_start, boxes.extents)
    return gather_boxes_cycles(boxes, batch.target)


def _gather_boxes(words: tuple[int, ...], source_tile: int | np.ndarray,
                  tiles: np.ndarray) -> GatherBoxes | None:
    """The boxes of a `gather_shard` step on `tiles` (`kernel_shards.gather_boxes`), or None
    when a tile's call would be refused (bad descriptors, other tensors or precisions, a tile
    or source tile outside its format, rank 0): the per-tile form then names it."""
    try:
        out, staged = decoded(words, 2)
    except DescriptorError:
        return None
    if (out.shape != staged.shape or out.rank == 0
            or (out.precision, out.scale) != (staged.precision, staged.scale)
            or not holds_all(staged, np.atleast_1d(source_tile)) or not holds_all(out, tiles)):
        return None
    return gather_boxes(out, staged, source_tile, tiles)


def _gather_shard_step_cycles(step: StepScalars) -> int:
    """`gather_step_cycles`: every tile at once (a refused call raises its own error)."""
    out, staged = cached_descriptors(step.words, 2)
    return gather_step_cycles(out, staged, step.scalars["source_tile"], step.tiles, step.target)


def _gather_shard_cycles(call: KernelScalars) -> int:
    out, staged = call.formats()
    return gather_shard_cycles(out, staged, call.scalars["source_tile"], call.tile, call.target)


def _gather_round_step_cycles(step: StepScalars) -> int:
    out, staged = cached_descriptors(step.words, 2)
    return gather_round_cycles(out, staged, step.scalars, step.tiles, step.target)


def _gather_round_cycles(call: KernelScalars) -> int:
    out, staged = call.formats()
    return gather_round_cycles(out, staged, call.scalars, np.array([call.tile], np.int64),
                               call.target)


RECORDS: tuple[Kernel, ...] = (
    Kernel(
        words_abi("copy_words", ("out", "src"),
                  "Copy `words` 32-bit words from src to out (tile-local; both word-aligned)."),
        copy_words,
        lambda call: copy_cycles(call.scalars["words"] * WORD_BYTES, call.target),
        _copy_words_batched,
    ),
    Kernel(
        words_abi("fill_zero", ("out",), "Zero `words` 32-bit words at out (word-aligned)."),
        fill_zero,
        lambda call: fill_zero_cycles(call.scalars["words"], call.target),
    ),
    Kernel(
        described(
            "convert_shard", ("out", "src"), (),
            "out's shard = src's shard in out's order, precision and scale (descriptors: out, "
            "src; the same shard box on every tile). f32 -> f16 rounds to nearest even "
            "(overflow -> inf); to FP8 saturates at +-240 * 2**scale; widening is exact. "
            "mid.cast_precision and a tile-local mid.rearrange.",
        ),
        convert_shard,
        of_formats(convert_shard_cycles),
    ),
    Kernel(
        described(
            "gather_shard", ("out", "staged"), ("source_tile",),
            "staged holds the whole shard that tile `source_tile` stores in the staged format; "
            "write the elements of (staged box of source_tile) & (out box of this tile) & (the "
            "logical extent) into out's shard, in out's order (same precision and scale). "
            "Other elements of out are left as they are.",
            checked=("source_tile",),
        ),
        gather_shard,
        _gather_shard_cycles,
        _gather_shard_batched,
        _gather_shard_step_cycles,
    ),
    Kernel(
        described(
            "gather_round", ("out", "staged"), ROUND_SCALARS,
            "One round of a concurrent gather: staged holds the shard this tile received in the "
            "round, the one of source tile first_source + source_step * (g mod group_inner) + "
            "outer_step * (g floordiv group_inner), g = (outer digit) * group_inner + (inner "
            "digit), from d = tile - first_dest: inner (d mod group_span) floordiv dest_step, outer "
            "(d mod outer_span) floordiv outer_dest_step; then as gather_shard "
            "from that source tile (a digit past its extent takes nothing). With takes_own 0 a "
            "tile whose source is itself "
            "takes nothing (its own shard is taken once, after the rounds, with takes_own 1).",
            checked=("first_source", "source_step"),
        ),
        gather_round,
        _gather_round_cycles,
        _gather_round_batched,
        _gather_round_step_cycles,
    ),
)
