"""What the descriptor kernels share: decoding their operands' formats, finding this tile's
shard box, and reading/writing a whole shard in its format (`device.layouts`).

A descriptor kernel gets one format descriptor per pointer operand, in pointer order
(`device/kernels.py`); a malformed descriptor, or a tile outside an operand's format, is a
`ModelError` naming the kernel, tile and operand.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from device.layouts import element_bytes, from_order, pack, to_order, unpack
from device.shard_geometry import DescriptorError, ShardGeometry, cached_descriptors

if TYPE_CHECKING:
    from device.model.kernel_call import KernelBatch, KernelCall

Box = tuple[tuple[int, ...], tuple[int, ...]]

_CODE_DTYPES: dict[int, np.dtype[np.unsignedinteger[Any]]] = {1: np.dtype("u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4")}


def decoded(words: tuple[int, ...], count: int) -> tuple[ShardGeometry, ...]:
    """`decode_descriptors`, once per distinct descriptor words
    (`shard_geometry.cached_descriptors`): a layout step calls its kernel on every tile (a
    gather once per source tile too) with the same descriptors, and decoding them was most
    of a large model's run time. A bad descriptor raises each time."""
    return cached_descriptors(words, count)


@lru_cache(maxsize=1 << 16)
def shard_box(fmt: ShardGeometry, tile: int) -> Box:
    """`fmt.shard_box(tile)`, remembered (the geometries are frozen; see `decoded`)."""
    return fmt.shard_box(tile)


@lru_cache(maxsize=1024)
def storage_positions(fmt: ShardGeometry) -> np.ndarray:
    """[chunk] int64: the element position (in `fmt`'s order, from the shard's first byte,
    in elements) of each logical element of a shard of `fmt`: `from_order` of 0, 1, 2, ...
    A batched kernel that moves part of a shard finds its elements' bytes through this
    instead of unpacking the whole shard on each tile (read-only: it is shared)."""
    positions = from_order(np.arange(fmt.shard_elements, dtype=np.int64), fmt.chunk,
                           fmt.order, fmt.precision)
    positions = np.ascontiguousarray(positions)
    positions.flags.writeable = False
    return positions


def origins_on(fmt: ShardGeometry, tiles: np.ndarray) -> np.ndarray:
    """[len(tiles), rank]: `shard_origins` of physical `tiles` (each holds a shard of fmt)."""
    return shard_origins(fmt)[tiles - fmt.first_tile]


def holds_all(fmt: ShardGeometry, tiles: np.ndarray) -> bool:
    """Every tile of `tiles` (non-empty) holds a shard of `fmt`."""
    return fmt.first_tile <= int(tiles.min()) and int(tiles.max()) < fmt.tile_stop


@lru_cache(maxsize=1024)
def shard_origins(fmt: ShardGeometry) -> np.ndarray:
    """[tiles_used, rank] int64: the first element of each tile's shard box (replicas repeat
    the partitions' boxes), `shard_box(fmt, tile)[0]` for every tile at once; row i is tile
    `fmt.first_tile + i` (`origins_on`)."""
    origins = fmt.all_origins()[np.arange(fmt.tiles_used) % fmt.partition_count]
    origins.flags.writeable = False
    return origins


@dataclass(frozen=True)
class GatherBoxes:
    """What one `gather_shard` step moves on each of its tiles: the out box's first element
    (`starts`), the first element of its intersection with the source box and the logical
    extent (`low`) and the intersection's extent (`extents`, 0 on an axis where they do not
    meet); [tiles, rank]. `moved` is each tile's element count."""

    out: ShardGeometry
    staged: ShardGeometry
    source_start: np.ndarray
    starts: np.ndarray
    low: np.ndarray
    extents: np.ndarray

    @property
    def moved(self) -> np.ndarray:
        return self.extents.prod(axis=1)

    def taken_by(self, takes: np.ndarray) -> GatherBoxes:
        """The same boxes where `takes` (bool [tiles]), empty on the other tiles."""
        return dataclasses.replace(self, extents=self.extents * takes[:, None])


def gather_boxes(out: ShardGeometry, staged: ShardGeometry, source_tile: int | np.ndarray,
                 tiles: np.ndarray) -> GatherBoxes:
    """The boxes of a gather step from the staged shard of `source_tile` (an int for every
    tile, or int64 [n], one per tile: a round kernel's `round_sources`) to `tiles` (int64
    [n]), all at once: the one description of what a gather moves, for its batched and
    per-tile runs and its cycles (`cycles.gather_step_cycles`). A source tile or a tile that
    holds no shard raises `DescriptorError` (the first in `tiles`' order), as does a staged
    tensor of another rank."""
    if out.rank != staged.rank:
        raise DescriptorError(f"out has rank {out.rank} but staged has rank {staged.rank}: "
                              f"not one tensor")
    if isinstance(source_tile, np.ndarray):
        if source_tile.size and not holds_all(staged, source_tile):
            shard_box(staged, next(t for t in source_tile.tolist() if not staged.holds(t)))
        source_start = origins_on(staged, source_tile).reshape(tiles.size, staged.rank)
        source_stop = source_start + np.asarray(staged.chunk, np.int64)
    else:
        source_start, source_stop = (np.asarray(b, np.int64)
                                     for b in shard_box(staged, source_tile))
    if tiles.size and not holds_all(out, tiles):
        first = next(t for t in tiles.tolist() if not out.holds(t))
        out.shard_box(first)  # raises, naming the tile
    starts = origins_on(out, tiles).reshape(tiles.size, out.rank)
    low = np.maximum(np.maximum(starts, source_start), 0)
    stops = np.minimum(np.minimum(starts + np.asarray(out.chunk, np.int64), source_stop),
                       np.asarray(out.shape, np.int64))
    return GatherBoxes(out, staged, source_start, starts, low, np.maximum(stops - low, 0))


# The named scalars of a round kernel (`gather_round`, `gather_view_round`): in round r of a
# concurrent gather (passes/operators/gather.py) group g's shard leaves from tile
# first_source + source_step * (g mod group_inner) + outer_step * (g floordiv group_inner)
# (group_inner = groups and outer_step 0 when the group is one digit of the shard index).
# Its receivers find g from their own id: with d = tile - first_dest, g's inner digit is
# (d mod group_span) floordiv dest_step and its outer digit (d mod outer_span) floordiv
# outer_dest_step (outer_span 1 for a one-digit group: the digit is 0), g = outer *
# group_inner + inner; a tile whose inner digit is group_inner or more, or whose g is groups
# or more, lies past the last window: it received nothing and takes nothing. With takes_own 0
# a tile whose source is itself takes nothing (its own shard's elements reach its out in one
# call after the rounds, with takes_own 1 and its input as staged).
ROUND_SCALARS = ("first_source", "first_dest", "source_step", "dest_step", "groups",
                 "takes_own", "group_inner", "outer_step", "group_span", "outer_dest_step",
                 "outer_span")


def round_groups(scalars: Mapping[str, int], tiles: np.ndarray) -> np.ndarray:
    """int64 [n]: the group each of `tiles` received for in a round kernel's call, from its
    two digits (`ROUND_SCALARS`); groups or more for a tile past the last window, which
    received nothing. ValueError for a dest_step, outer_dest_step, groups or group_inner
    below 1, a group_span below group_inner * dest_step or an outer_span below
    ceil(groups / group_inner) * outer_dest_step (two groups' windows would overlap), or a
    takes_own other than 0 or 1."""
    step, groups, inner = scalars["dest_step"], scalars["groups"], scalars["group_inner"]
    outer_step, span, outer_span = (scalars["outer_dest_step"], scalars["group_span"],
                                    scalars["outer_span"])
    if min(step, outer_step, groups, inner) < 1:
        raise ValueError(f"dest_step {step}, outer_dest_step {outer_step}, groups {groups} and "
                         f"group_inner {inner} must be at least 1")
    outers = -(-groups // inner)
    if span < inner * step or outer_span < outers * outer_step:
        raise ValueError(f"group_span {span} is less than group_inner * dest_step ({inner} * "
                         f"{step}) or outer_span {outer_span} less than groups / group_inner "
                         f"* outer_dest_step ({outers} * {outer_step}): two groups' windows "
                         "would overlap")
    if scalars["takes_own"] not in (0, 1):
        raise ValueError(f"takes_own {scalars['takes_own']} must be 0 or 1")
    d = np.asarray(tiles, np.int64) - scalars["first_dest"]
    low, high = d % span // step, d % outer_span // outer_step
    group = high * inner + low
    return np.where((low < inner) & (group < groups), group, groups)


def round_sources(scalars: Mapping[str, int], tiles: np.ndarray) -> np.ndarray:
    """int64 [n]: the source tile each of `tiles` takes from in a round kernel's call,
    first_source + source_step * (g mod group_inner) + outer_step * (g floordiv group_inner)
    with g its `round_groups` group (a tile that received nothing takes from a shard that
    holds nothing for it; one between the windows, from group 0's, and it does not take:
    `round_takers`)."""
    group = round_groups(scalars, tiles)
    group = np.where(group < scalars["groups"], group, 0)
    inner = scalars["group_inner"]
    return (scalars["first_source"] + scalars["source_step"] * (group % inner)
            + scalars["outer_step"] * (group // inner))


def round_takers(scalars: Mapping[str, int], tiles: np.ndarray,
                 sources: np.ndarray) -> np.ndarray:
    """bool [n]: which of `tiles` take in a round kernel's call (`ROUND_SCALARS`): those in a
    group's window, and with takes_own 0 not from themselves."""
    inside = round_groups(scalars, tiles) < scalars["groups"]
    if scalars["takes_own"]:
        return inside
    return inside & (sources != tiles)


def round_boxes(out: ShardGeometry, staged: ShardGeometry, scalars: Mapping[str, int],
                tiles: np.ndarray) -> GatherBoxes:
    """What a `gather_round` step moves on each of `tiles`: `gather_boxes` from each tile's
    source tile, nothing on a tile that does not take."""
    sources = round_sources(scalars, tiles)
    return gather_boxes(out, staged, sources, tiles).taken_by(
        round_takers(scalars, tiles, sources))


def round_source(call: KernelCall) -> tuple[int, bool]:
    """The source tile of this tile's call of a round kernel, and whether it takes
    (`round_sources`, `round_takers`)."""
    tile = np.array([call.tile], np.int64)
    try:
        source = round_sources(call.scalars, tile)
    except ValueError as error:
        raise call.fail(str(error)) from None
    return int(source[0]), bool(round_takers(call.scalars, tile, source)[0])


def operand_formats(call: KernelCall) -> dict[str, ShardGeometry]:
    """Each pointer's decoded descriptor, by pointer name."""
    try:
        formats = decoded(tuple(call.variadic), len(call.abi.pointers))
    except DescriptorError as error:
        raise call.fail(f"bad descriptors: {error}") from None
    named = dict(zip(call.abi.pointers, formats, strict=True))
    for name, fmt in named.items():  # before any shard-sized array is allocated
        call.memory.check_range(call.tile, call.pointers[name], fmt.shard_bytes(),
                                f"{call.describe()}, operand '{name}'")
    return named


def box_on(call: KernelCall, name: str, fmt: ShardGeometry, tile: int | None = None) -> Box:
    """The padded box of `name`'s shard on `tile` (default: the tile the call runs on)."""
    try:
        return shard_box(fmt, call.tile if tile is None else tile)
    except DescriptorError as error:
        raise call.fail(f"operand '{name}': {error}") from None


def same_box(call: KernelCall, out: ShardGeometry, name: str, fmt: ShardGeometry,
             why: str = "") -> Box:
    """Out's padded box on this tile, which the shard of operand `name` must share (a kernel
    that reads it element for element in place of out's); `why` ends the diagnostic."""
    box, other = box_on(call, "out", out), box_on(call, name, fmt)
    if box != other:
        raise call.fail(f"out's shard box {box} and {name}'s {other} differ on this tile{why}")
    return box


def box_text(box: Box) -> str:
    """`a:b, c:d, ...`: a box's extents on its axes, for a diagnostic."""
    return ", ".join(f"{a}:{b}" for a, b in zip(*box))


def check_resident(call: KernelCall, name: str, region: Box, shard: Box, message: str) -> None:
    """Raise unless `shard` (operand `name`'s box on this tile) holds all of `region`; the
    diagnostic is `message` after the operand, its `{need}` and `{held}` the two boxes."""
    if any(a < s or b > t for a, b, s, t in zip(*region, *shard)):
        raise call.fail(f"operand '{name}': "
                        + message.format(need=box_text(region), held=box_text(shard)))


def read_region(call: KernelCall, name: str, fmt: ShardGeometry, region: Box,
                message: str) -> np.ndarray:
    """Operand `name`'s values (float64) over `region` (global padded indices), which its shard
    on this tile must hold (`check_resident`, with `message`)."""
    shard = box_on(call, name, fmt)
    check_resident(call, name, region, shard, message)
    return read_values(call, name, fmt)[local_slices(region, shard[0])]


def positive_f32(call: KernelCall, name: str, what: str = "") -> np.float32:
    """The finite positive f32 whose bit pattern is scalar `name` (a scale, an epsilon)."""
    bits = call.scalars[name]
    value = np.array([bits & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0]
    if not (0 <= bits < 1 << 32 and math.isfinite(value) and value > 0):
        raise call.fail(f"{name} {bits:#x} is not the bit pattern of a finite positive f32{what}")
    return value


def logical_box(box: Box, fmt: ShardGeometry) -> Box:
    """`box` clipped to the tensor's logical (unpadded) extent; may be empty."""
    starts, stops = box
    clipped = tuple(max(a, min(b, e)) for a, b, e in zip(starts, stops, fmt.shape))
    return starts, clipped


def is_empty(box: Box) -> bool:
    return any(b <= a for a, b in zip(*box))


def local_slices(region: Box, origin: tuple[int, ...]) -> tuple[slice, ...]:
    """`region` (global padded indices) as slices of a shard whose box starts at `origin`."""
    return tuple(slice(a - o, b - o) for a, b, o in zip(*region, origin))


def shard_pointer(call: KernelCall, name: str) -> int:
    return call.aligned_pointer(name, call.target.vector_alignment)


def read_values(call: KernelCall, name: str, fmt: ShardGeometry) -> np.ndarray:
    """The whole shard at pointer `name`, as float64 values in logical shard shape."""
    raw = call.read(name, shard_pointer(call, name), fmt.shard_bytes())
    return unpack(raw, fmt.chunk, fmt.order, fmt.precision, fmt.scale)


def write_values(call: KernelCall, name: str, fmt: ShardGeometry, values: np.ndarray) -> None:
    """Round `values` (logical shard shape) once to `fmt`'s precision and store its shard."""
    call.write(name, shard_pointer(call, name), pack(values, fmt.order, fmt.precision, fmt.scale))


def read_codes(call: KernelCall, name: str, fmt: ShardGeometry) -> np.ndarray:
    """The whole shard at pointer `name` as raw storage codes (uint8/16/32), logical shape:
    for moving elements bit-exactly."""
    raw = call.read(name, shard_pointer(call, name), fmt.shard_bytes())
    codes = raw.view(_CODE_DTYPES[element_bytes(fmt.precision)])
    return from_order(codes, fmt.chunk, fmt.order, fmt.precision)


def write_codes(call: KernelCall, name: str, fmt: ShardGeometry, codes: np.ndarray) -> None:
    flat = np.ascontiguousarray(to_order(codes, fmt.order, fmt.precision))
    call.write(name, shard_pointer(call, name), flat.view(np.uint8))


def zero_padding(values: np.ndarray, box: Box, fmt: ShardGeometry) -> np.ndarray:
    """`values` (the shard of `box`) with every element outside the logical extent zeroed:
    a kernel's output padding is zeros, as the host writes it, so a later GEMM that
    contracts over a padded axis adds nothing."""
    keep = np.zeros(values.shape, dtype=bool)
    keep[local_slices(logical_box(box, fmt), box[0])] = True
    return np.where(keep, values, 0.0)


MOVE_CHUNK_ELEMENTS = 1 << 22  # index arrays of one NumPy move: at most this many elements


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows of a 2-D array, each row's index among them): `np.unique(axis=0,
    return_inverse=True)`, without its sort when all rows are equal (most steps)."""
    if rows.shape[0] == 0 or (rows == rows[:1]).all():
        return rows[:1], np.zeros(rows.shape[0], np.int64)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    return unique, inverse.reshape(-1)


def box_positions(fmt: ShardGeometry, local_starts: np.ndarray, extent: tuple[int, ...]
                  ) -> np.ndarray:
    """[n, prod(extent)] int64: for each row of `local_starts` ([n, rank], inside the shard),
    the storage positions (`storage_positions`) of the box of `extent` starting there, its
    elements in row-major order of the box."""
    positions = storage_positions(fmt)
    rank = len(extent)
    index = tuple(
        local_starts[:, axis].reshape(-1, *([1] * rank))
        + np.arange(size, dtype=np.int64).reshape(
            (1,) + tuple(size if a == axis else 1 for a in range(rank)))
        for axis, size in enumerate(extent))
    return positions[index].reshape(local_starts.shape[0], -1)


def copy_boxes(batch: KernelBatch, rows: np.ndarray, out_name: str, out: ShardGeometry,
               out_starts: np.ndarray, src_name: str, src: ShardGeometry,
               src_starts: np.ndarray, extents: np.ndarray) -> None:
    """For each i of `rows` (indices into `batch.tiles`): on that tile, copy the box of
    `extents[i]` at `src_starts[i]` of the shard at pointer `src_name` (local indices) to
    the box at `out_starts[i]` of the shard at `out_name`, storage codes bit-exactly (the
    two share the element size). Tiles whose boxes have one extent move in one NumPy
    operation. The caller checked the pointers (inside memory, aligned) and the boxes."""
    itemsize = element_bytes(out.precision)
    memory = batch.memory
    out_base = (batch.pointers[out_name] - memory.base) // itemsize
    src_base = (batch.pointers[src_name] - memory.base) // itemsize
    shapes, group = unique_rows(extents[rows])
    for index, shape in enumerate(shapes.tolist()):
        members = rows[group == index]
        step = max(1, MOVE_CHUNK_ELEMENTS // max(1, math.prod(shape)))
        for first in range(0, members.size, step):
            part = members[first:first + step]
            targets = box_positions(out, out_starts[part], tuple(shape)) + out_base[part, None]
            sources = box_positions(src, src_starts[part], tuple(shape)) + src_base[part, None]
            memory.copy_elements(batch.tiles[part], targets, sources, itemsize)
