"""Where a repeat's sequence is stored when its elements' own formats would pile it onto the
tiles of their consumers' plans: spread over the chip, each iteration's element fetched into
the format its consumers' plans chose (`passes/operators/repeat.py`, `spread_sequences`; GEMM
selection prices the fetch, `passes/operators/gemm.py`).

Two spread formats are offered, and the one fetched in fewer estimated cycles is taken
(`cheapest_spread`): the consumer's own cut, finer (`aligned_spread_format`), or whole rows
over as many tiles as there are for (`spread_format`). Where it fits and is fetched in fewer
cycles still, the sequence is stored instead as whole pieces of the consumer's shards on the
least-loaded window of tiles (`whole_shard_window`), chosen when the consumer's plan takes it
spread, so that the ops selected after it see it where it will be placed.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType

from device.target import Target
from ipu_dialects import mid
from passes.operators.costs import conversion_type_cycles
from passes.operators.formats import row_major_format, split_format, with_format
from passes.operators.gather import piece_rounds, pieces_contiguous
from passes.operators.resident import SpreadStorage, selection_room
from planning.shard_geometry import ShardGeometry, geometry
from planning.target_memo import TargetMemo
from planning.tile_loads import on_tiles

SPREAD_SHARD_BYTES = 256  # a spread element's shards are at least this big (fewer gathers)


def spread_format(arg_type: TensorType, tiles: int, indivisible: str) -> mid.TensorFormatAttr:
    """An element format that cuts its leading axis into as many equal shards as there are
    tiles for, each at least `SPREAD_SHARD_BYTES` (a sequence stored in it holds little on
    any one tile)."""
    shape = arg_type.get_shape()
    element = geometry(shape, row_major_format(arg_type, indivisible))
    if not shape:
        return row_major_format(arg_type, indivisible)
    most = max(1, min(tiles, shape[0], element.shard_bytes() // SPREAD_SHARD_BYTES))
    # equal shards of a power-of-two number of rows (they tile the AMP's 64-row blocks), which
    # the fetch's gather sends in few rounds; else any equal shards
    equal = [p for p in range(1, most + 1) if shape[0] % p == 0]
    aligned = [p for p in equal if (shape[0] // p) & (shape[0] // p - 1) == 0]
    parts = max(aligned or equal)
    return split_format(shape, 0, parts, arg_type, indivisible)


def aligned_spread_format(arg_type: TensorType, wanted: mid.TensorFormatAttr,
                          tiles: int) -> mid.TensorFormatAttr | None:
    """A spread element format whose shards are pieces of the shards of `wanted` (the format
    the element is fetched into): `wanted`'s tiling, one copy, with its first cut axis' chunk
    cut k ways more (k the largest power of two that fits the chip and keeps shards of at
    least `SPREAD_SHARD_BYTES`), row-major. Each spread shard then goes whole to one tile of
    `wanted` (its replicas), so the fetch moves every element once, in k rounds, where a
    spread of whole rows sends each tile rows of which it keeps a block's columns. None when
    there is nothing to cut or `wanted` rejects indivisible extents."""
    if not all(axis.pad for axis in wanted.tiling.data):
        return None
    shape = arg_type.get_shape()
    geom = geometry(shape, wanted)
    # the partitions that hold elements (a plan's grid may cut an axis into more chunks than
    # the extent fills: the rest are padding, and a spread copy leaves them out)
    filled = [-(-extent // chunk) for extent, chunk in zip(shape, geom.chunk, strict=True)]
    used = math.prod(filled)
    axes = [a for a in range(geom.rank) if geom.chunk[a] > 1]
    if not axes:
        return None
    axis, chunk = axes[0], geom.chunk[axes[0]]
    k = 1
    while (chunk % (2 * k) == 0 and used * 2 * k <= tiles
           and geom.shard_bytes() // (2 * k) >= SPREAD_SHARD_BYTES):
        k *= 2
    if k == 1:
        return None
    tiling = [mid.AxisTilingAttr(c // k, p * k) if a == axis else mid.AxisTilingAttr(c, p)
              for a, (c, p) in enumerate(zip(geom.chunk, filled, strict=True))]
    return wanted.with_changes(order=mid.ElementOrder.ROW_MAJOR, tiling=tiling, replication=1,
                               group=used * k, first_tile=0)


def whole_shard_spread_format(arg_type: TensorType, wanted: mid.TensorFormatAttr,
                              first_tile: int, pieces: int = 1) -> mid.TensorFormatAttr | None:
    """`wanted` as a spread format of its shards, each cut along its leading axis into
    `pieces` contiguous pieces: one copy, without the all-padding tail of its leading
    partitions, from `first_tile` on. Each of its shards holds the bytes of one piece of a
    shard of `wanted`, so the fetch sends every piece once to the result tiles that hold it,
    into the fetched element itself (`gather.piece_plan`): a phase per piece, no take. None
    when an axis past the first has all-padding partitions or the pieces do not cut the
    shard into consecutive byte ranges."""
    shape = arg_type.get_shape()
    if not shape:
        return None
    geom = geometry(shape, wanted)
    filled = [-(-extent // chunk) for extent, chunk in zip(shape, geom.chunk, strict=True)]
    if tuple(filled[1:]) != geom.partitions[1:] or geom.chunk[0] % pieces:
        return None
    if not pieces_contiguous(geom.shard_shape, pieces, geom.order, geom.precision):
        return None
    piece = geom.chunk[0] // pieces
    tiling = [mid.AxisTilingAttr(piece, filled[0] * pieces, axis.indivisible.data)
              if a == 0 else axis for a, axis in enumerate(wanted.tiling.data)]
    spread = wanted.with_changes(tiling=tiling, replication=1,
                                 group=math.prod(filled) * pieces, first_tile=first_tile)
    if geometry(shape, spread).chunk != (piece, *geom.chunk[1:]):
        return None
    return spread


def cheapest_spread(arg_type: TensorType, wanted: mid.TensorFormatAttr, tiles: int,
                    indivisible: str, target: Target) -> tuple[mid.TensorFormatAttr, int]:
    """Of `aligned_spread_format` and `spread_format`, the one whose element is fetched into
    `wanted` in the fewest estimated cycles (`conversion_type_cycles`, what selection prices
    a gather at; the aligned one on ties), with those cycles. Remembered: GEMM selection asks
    it of every cut that reads a sequence spread."""
    def cheapest() -> tuple[mid.TensorFormatAttr, int]:
        spreads = [aligned_spread_format(arg_type, wanted, tiles),
                   spread_format(arg_type, tiles, indivisible)]
        priced = [(spread, conversion_type_cycles(with_format(arg_type, spread),
                                                  with_format(arg_type, wanted), target))
                  for spread in spreads if spread is not None]
        return min(priced, key=lambda found: found[1])

    return CHEAPEST.get((arg_type, wanted, tiles, indivisible), target, cheapest)


# `cheapest_spread` by element type, wanted format, tiles, indivisible and target
CHEAPEST: TargetMemo[tuple[mid.TensorFormatAttr, int]] = TargetMemo(4096)


def spread_storage(arg_type: TensorType, wanted: mid.TensorFormatAttr, count: int,
                   loads: np.ndarray, indivisible: str, target: Target) -> SpreadStorage:
    """How a sequence of `count` elements fetched into `wanted` is stored spread: as whole
    shards on the least-loaded window of `loads` (bytes per tile so far) where they fit and
    are fetched cheaper (`whole_shard_window`), else in the spread format fetched cheapest
    (`cheapest_spread`; normalize-repeats: every tile of the format holds its shard of every
    element)."""
    tiles = len(loads)
    spread, cycles = cheapest_spread(arg_type, wanted, tiles, indivisible, target)
    window = whole_shard_window(arg_type, wanted, count, loads, cycles, target)
    if window is not None:
        shards, tile_bytes, saved = window
        return SpreadStorage(tile_bytes, (shards, saved))
    geom = geometry(arg_type.get_shape(), spread)
    return SpreadStorage(on_tiles(geom, tiles, count * geom.shard_bytes()))


def whole_shard_window(arg_type: TensorType, wanted: mid.TensorFormatAttr, count: int,
                       loads: np.ndarray, cycles: int, target: Target
                       ) -> tuple[mid.TensorFormatAttr, np.ndarray, int] | None:
    """A sequence of `count` elements fetched into `wanted` stored as whole pieces of
    `wanted`'s shards (`whole_shard_spread_format`: the fewest pieces, 1, 2, 4, ..., that
    fit) on the window of tiles where no tile is sent its own piece (`gather.piece_plan`)
    whose fullest holds least of `loads` (bytes per tile so far), when the elements fit
    there and their fetch costs less than `cycles` (the cheapest spread's): (its element
    format, its bytes on each tile, the fetch cycles it saves). None when it does not pay or
    fit."""
    shape = arg_type.get_shape()
    taken = geometry(shape, wanted)
    pieces = 1
    while shape and pieces <= taken.chunk[0]:
        unplaced = whole_shard_spread_format(arg_type, wanted, 0, pieces)
        pieces *= 2
        if unplaced is None:
            continue
        geom = geometry(shape, unplaced)
        need = count * geom.shard_bytes()
        if need + geom.shard_bytes() > target.standard_bytes:  # one range, and its staging
            continue
        starts = piece_plan_starts(geom, taken, len(loads))
        start = least_loaded_window(loads, geom.tiles_used, starts,
                                    selection_room(target) - need)
        if start is None:
            continue
        shards = unplaced.with_changes(first_tile=start)
        saved = cycles - conversion_type_cycles(with_format(arg_type, shards),
                                                with_format(arg_type, wanted), target)
        if saved <= 0:
            return None
        return shards, on_tiles(geometry(shape, shards), len(loads), need), saved
    return None


@functools.lru_cache(maxsize=256)
def piece_plan_starts(geom: ShardGeometry, taken: ShardGeometry, tiles: int) -> tuple[int, ...]:
    """The first tiles of `tiles` from which `geom`'s shards are fetched into `taken` as
    whole pieces (`gather.piece_plan`: no tile sent its own piece). A round's senders move
    with `geom`'s first tile and its receivers stay, so the starts left out are those that
    put a sender on one of its receivers. Remembered: every plan that reads a sequence
    spread asks it."""
    rounds = piece_rounds(dataclasses.replace(geom, first_tile=0), taken)
    if rounds is None:
        return ()
    senders, receivers = rounds.round_tiles()
    own = set(np.unique(receivers - senders[..., None]).tolist())
    return tuple(start for start in range(tiles - geom.tiles_used + 1) if start not in own)


def least_loaded_window(loads: np.ndarray, span: int, starts: Sequence[int],
                        most: int) -> int | None:
    """Of the windows of `span` consecutive tiles from `starts`, the first tile of the one
    whose fullest tile holds least, if that is at most `most` bytes: on ties the last, as
    far from tile 0 as it goes (every format starts there by default, so the chip's end is
    what later ops use least)."""
    if not starts:
        return None
    fullest = np.lib.stride_tricks.sliding_window_view(loads, span).max(axis=1)[list(starts)]
    least = fullest.min()
    best = int(np.asarray(starts)[fullest == least][-1])
    return best if least <= most else None
