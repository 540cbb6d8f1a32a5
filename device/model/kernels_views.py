"""The layout-op kernels: `view_shard` (tile-local), `gather_view` (one staged source shard)
and `gather_view_round` (the shard this tile received in a round of a concurrent gather, found
from its tile id: `kernel_shards.round_sources`), which copy elements through an index view
(`device/index_views.py`).

Both move storage codes bit-exactly (out and source share precision and scale) and write only
the elements of this tile's out box, inside the view's window and out's logical extent, whose
source they hold: the compiler zeroes out's padding first and, for a concat, calls them once
per input (each input a window of out). `view_shard` requires every such element's source in
the source shard on this tile.

Both have a batched form (`_batched`) that runs a step on all its tiles at once: what each
tile moves is `view_steps.view_step` (each tile's window a fixed pattern of source linear
indices shifted per tile, looked up for all tiles together), which is also what their cycle
functions count, and only those elements are copied (`TileMemory.copy_elements`). The
per-tile forms find their elements with `index_views.view_moves`, independently.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from device.index_views import IndexView, view_moves
from device.kernel_abi import viewed
from device.layouts import element_bytes
from device.model.cycles import (
    view_cycles,
    view_moved_cycles,
    view_moves_cycles,
    view_round_cycles,
    view_step_cycles,
)
from device.model.kernel_call import Kernel, KernelBatch, KernelCall, StepScalars
from device.model.kernel_shards import (
    ROUND_SCALARS,
    box_on,
    holds_all,
    read_codes,
    round_source,
    round_sources,
    round_takers,
    storage_positions,
    write_codes,
)
from device.model.view_steps import ViewStep, view_step, view_words
from device.shard_geometry import DescriptorError, ShardGeometry


def _operands(call: KernelCall, source: str) -> tuple[ShardGeometry, ShardGeometry, IndexView]:
    try:
        out, src, view = view_words(tuple(call.variadic))
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


def _copy(call: KernelCall, source: str, source_tile: int | None, local: bool,
          cycles: int | None = None) -> int:
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
    if cycles is not None:
        return cycles
    return view_cycles(tuple(call.variadic), source_tile, call.tile, call.target)


def view_shard(call: KernelCall) -> int:
    return _copy(call, "src", None, local=True)


def gather_view(call: KernelCall) -> int:
    return _copy(call, "staged", call.scalars["source_tile"], local=False)


def gather_view_round(call: KernelCall) -> int:
    source, takes = round_source(call)
    cycles = view_round_cycles(tuple(call.variadic), call.scalars,
                               np.array([call.tile], np.int64), call.target)
    if not takes:
        _operands(call, "staged")
        return cycles
    return _copy(call, "staged", source, local=False, cycles=cycles)


def _round_batched(batch: KernelBatch) -> int | None:
    """`gather_view_round` on every tile of a step at once, each tile from its own source."""
    try:
        sources = round_sources(batch.scalars, batch.tiles)
    except ValueError:
        return None
    takes = round_takers(batch.scalars, batch.tiles, sources)
    if not takes.any():  # a round whose tiles all hold their own shard (round 0 of a loop)
        return _untaken_round(batch, sources)
    takers = dataclasses.replace(batch, tiles=batch.tiles[takes],
                                 pointers={n: p[takes] for n, p in batch.pointers.items()})
    cycles = _batched(takers, "staged", sources[takes])
    if cycles is None:
        return None
    out, src, _ = view_words(batch.variadic)
    if not (holds_all(out, batch.tiles) and holds_all(src, sources)
            and batch.inside("out", out.shard_bytes())
            and batch.inside("staged", src.shard_bytes())):
        return None  # a tile that does not take fails a check of its call: named tile by tile
    # the others move nothing, and a step's cycles are its largest move's
    return cycles + batch.target.round_select_cycles


def _untaken_round(batch: KernelBatch, sources: np.ndarray) -> int | None:
    """A `gather_view_round` step in which no tile takes: every call checks its operands
    and moves nothing, so each costs what `view_round_cycles` charges a call that moves no
    element. None (tile by tile, which names the failing tile) when a check would fail."""
    try:
        out, src, _ = view_words(batch.variadic)
    except DescriptorError:
        return None
    if ((out.precision, out.scale) != (src.precision, src.scale)
            or not (holds_all(out, batch.tiles) and holds_all(src, sources))
            or not batch.inside("out", out.shard_bytes())
            or not batch.inside("staged", src.shard_bytes())):
        return None
    return view_moved_cycles(0, out, src, batch.target) + batch.target.round_select_cycles


def _batched(batch: KernelBatch, source: str,
             source_tile: int | np.ndarray | None) -> int | None:
    """A view step on every tile at once (`view_steps.view_step`): only the elements that
    move are copied (`TileMemory.copy_elements`). None (the step runs tile by tile, which
    names the failing tile) when any tile would fail a check of the per-tile form: bad words,
    other precisions, a tile outside a format, an operand outside memory or misaligned, or
    (`view_shard`) an element whose source is not on its tile."""
    try:
        out, src, view = view_words(batch.variadic)
    except DescriptorError:
        return None
    tiles = batch.tiles
    if (out.rank == 0 or src.rank == 0
            or (out.precision, out.scale) != (src.precision, src.scale)
            or not holds_all(out, tiles)
            or not holds_all(src, tiles if source_tile is None else np.atleast_1d(source_tile))
            or not batch.inside("out", out.shard_bytes())
            or not batch.inside(source, src.shard_bytes())):
        return None
    step = view_step(out, src, view, tiles, source_tile, with_moves=True)
    if source_tile is None and np.any(step.missing):
        return None
    if step.moves:
        rows = np.unique(np.concatenate([m[0] for m in step.moves]))
        alignment = batch.target.vector_alignment
        if (np.any(batch.pointers["out"][rows] % alignment)
                or np.any(batch.pointers[source][rows] % alignment)):
            return None
        _move_viewed(batch, source, step)
    return view_moves_cycles(step, batch.target)


def _move_viewed(batch: KernelBatch, source: str, step: ViewStep) -> None:
    """Copy the elements `step.moves` names, storage codes bit-exactly."""
    out, src, view = step.out, step.src, step.view
    itemsize = element_bytes(out.precision)
    memory = batch.memory
    out_positions, src_positions = storage_positions(out), storage_positions(src)
    strides = np.asarray(view.strides, np.int64)
    for rows, element, grid in step.moves:
        index = step.low[rows] + grid[:, element].T  # [m, rank] global out indices
        linear = view.offset + (index - np.asarray(view.starts, np.int64)) @ strides
        found = np.stack(np.unravel_index(linear, src.shape), axis=1)
        out_local = tuple((index - step.box_starts[rows]).T)
        src_local = tuple((found - step.src_starts[rows]).T)
        targets = out_positions[out_local] + (batch.pointers["out"][rows] - memory.base) // itemsize
        sources = (src_positions[src_local]
                   + (batch.pointers[source][rows] - memory.base) // itemsize)
        memory.copy_elements(batch.tiles[rows], targets, sources, itemsize)


def _view_step_cycles(step: StepScalars) -> int:
    source_tile = step.scalars.get("source_tile")
    return view_step_cycles(step.words, source_tile, step.tiles, step.target)


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
        lambda batch: _batched(batch, "src", None),
        _view_step_cycles,
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
        lambda batch: _batched(batch, "staged", batch.scalars["source_tile"]),
        _view_step_cycles,
    ),
    Kernel(
        viewed(
            "gather_view_round", ("out", "staged"), ROUND_SCALARS,
            "One round of a layout op's concurrent gather: staged holds the shard this tile "
            "received in the round, the one of source tile first_source + source_step * (g "
            "mod group_inner) + outer_step * (g floordiv group_inner), g = (outer digit) * "
            "group_inner + (inner digit), from d = tile - first_dest: inner (d mod group_span) "
            "floordiv dest_step, outer (d mod outer_span) floordiv outer_dest_step; then as "
            "gather_view from that source tile (a digit past its extent takes nothing). With "
            "takes_own 0 a tile whose source is itself "
            "takes nothing (its own shard is taken once, after the rounds, with takes_own 1).",
            checked=("first_source", "source_step"),
        ),
        gather_view_round,
        lambda call: view_round_cycles(call.words, call.scalars, np.array([call.tile], np.int64),
                                       call.target),
        _round_batched,
        lambda step: view_round_cycles(step.words, step.scalars, step.tiles, step.target),
    ),
)
