"""The arithmetic of a `TensorFormat`: chunks, padding, shards and the tiles that hold them.

One place used by lowering (`mid-to-tile`), placement, the host metadata and the kernels of
the executable model, so that the shard of a tile can only be computed one way
(docs/internals.md, "mid level"). The device layer owns it; `planning/shard_geometry.py`
re-exports it next to the adapter from a `#mid.format`.

- axis `i` of extent `E` with tiling `block x partitions` is cut into `partitions` contiguous
  chunks of `chunk = ceil(ceil(E / block) / partitions) * block` elements; the padded extent
  is `chunk * partitions` (`pad` zero-fills the tail, `reject` requires `E % block == 0`);
- a partition index vector `q` is linearized row-major over the partition counts;
- replica `r` of partition `q` lives on tile `first_tile + r * prod(partitions) + lin(q)`:
  a format's shards sit on the consecutive tiles `first_tile .. first_tile + tiles_used - 1`
  (`first_tile` 0 unless a placement spreads values over the chip);
- a shard is the padded chunk rectangle `chunk_0 x chunk_1 x ...`, starting at element
  `q_i * chunk_i` of each axis of the padded tensor.

Everything here is a pure function of ints and tuples; the "all shards" queries return NumPy
arrays so that asking about 1472 tiles stays cheap.

Descriptors. A kernel specialized on its operands' formats (as a Poplar codelet is templated
on types and carries vertex fields) receives each operand's format as a list of 32-bit words,
`ShardGeometry.encode()`:

    rank + RANK_LIMIT * first_tile, shape[rank], blocks[rank], partitions[rank],
    pads[rank] (0/1), replication, group, precision code (PRECISION_CODES index),
    order code (ORDERS index),
    scale (signed; 0 unless f8f143, or f16 FP8 GEMM partials: value = stored * 2**scale)

that is 4 * rank + 6 words (RANK_LIMIT = 256: the first tile shares the rank's word, so a
format that starts at tile 0 has the words it had before formats had a first tile).
`decode_descriptor(words, position)` reads one back and raises `DescriptorError` for a
malformed one; the kernel then finds its own shard with `shard_box(tile)` (`tile` the
physical tile it runs on).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Protocol, TypeVar

import numpy as np

from device.layouts import (
    AMP_BLOCK,
    FP8_SCALE_RANGE,
    ORDERS,
    SCALED_PRECISIONS,
    TRANSPOSED_SUFFIX,
    element_bytes,
    swap_last_axes,
)
from device.target import Precision

# Descriptor precision codes (index = code).
PRECISION_CODES = (Precision.F32, Precision.F16, Precision.F8F143, Precision.I32)
# Words of a descriptor besides the 4 per axis: rank, replication, group, precision, order, scale.
DESCRIPTOR_FIXED_WORDS = 6
# The rank word holds rank + RANK_LIMIT * first_tile (ranks are far below it).
RANK_LIMIT = 256


class DescriptorError(ValueError):
    """A format descriptor that does not decode to a valid geometry, or a shard query that the
    geometry cannot answer (a tile outside its tiles)."""


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def axis_chunk(extent: int, block: int, partitions: int) -> int:
    """Elements of one partition's chunk of an axis (a multiple of `block`)."""
    return ceil_div(ceil_div(extent, block), partitions) * block


def padded_extent(extent: int, block: int, partitions: int) -> int:
    return axis_chunk(extent, block, partitions) * partitions


_Value = TypeVar("_Value", covariant=True)


class _Data(Protocol[_Value]):
    @property
    def data(self) -> _Value: ...


class FormatParts(Protocol):
    """What `ShardGeometry.from_format` reads of a `mid.TensorFormatAttr`, spelled here so
    that the device layer does not import the dialects."""

    @property
    def blocks(self) -> tuple[int, ...]: ...
    @property
    def partitions(self) -> tuple[int, ...]: ...
    @property
    def pads(self) -> tuple[bool, ...]: ...
    @property
    def replication(self) -> _Data[int]: ...
    @property
    def group(self) -> _Data[int]: ...
    @property
    def precision(self) -> _Data[str]: ...
    @property
    def order(self) -> _Data[str]: ...
    @property
    def scale(self) -> _Data[int]: ...
    @property
    def first_tile(self) -> _Data[int]: ...


@dataclass(frozen=True)
class ShardGeometry:
    """Geometry of a tensor of logical `shape` stored in a format's tiling."""

    shape: tuple[int, ...]
    blocks: tuple[int, ...]
    partitions: tuple[int, ...]
    pads: tuple[bool, ...]
    replication: int = 1
    group: int = 1
    precision: str = "f32"
    order: str = "row_major"
    scale: int = 0  # f8f143 (and f16 FP8 GEMM partials): value = stored * 2**scale
    first_tile: int = 0  # the tile of replica 0's partition 0

    def __post_init__(self) -> None:
        rank = len(self.shape)
        if not (len(self.blocks) == len(self.partitions) == len(self.pads) == rank):
            raise ValueError(
                f"shape {self.shape} has rank {rank} but the tiling has "
                f"{len(self.blocks)} blocks, {len(self.partitions)} partition counts, "
                f"{len(self.pads)} pad flags"
            )
        if min(self.blocks, default=1) < 1 or min(self.partitions, default=1) < 1:
            raise ValueError(f"blocks {self.blocks} and partitions {self.partitions} must be >= 1")
        if self.replication < 1:
            raise ValueError(f"replication {self.replication} must be >= 1")
        if self.first_tile < 0:
            raise ValueError(f"first tile {self.first_tile} must be >= 0")

    @classmethod
    def from_format(cls, shape: Sequence[int], fmt: FormatParts) -> ShardGeometry:
        """From a logical shape and a `mid.TensorFormatAttr`, read through its attributes so
        that the device layer does not import the dialects (`planning.shard_geometry.geometry`
        is the typed spelling passes use)."""
        return cls(
            tuple(shape),
            fmt.blocks,
            fmt.partitions,
            fmt.pads,
            fmt.replication.data,
            fmt.group.data,
            fmt.precision.data,
            fmt.order.data,
            fmt.scale.data,
            fmt.first_tile.data,
        )

    # ---- per axis -------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.shape)

    @cached_property
    def chunk(self) -> tuple[int, ...]:
        """Per-axis chunk (= shard extent) in elements."""
        return tuple(
            axis_chunk(e, b, p) for e, b, p in zip(self.shape, self.blocks, self.partitions)
        )

    @cached_property
    def padded_shape(self) -> tuple[int, ...]:
        return tuple(c * p for c, p in zip(self.chunk, self.partitions))

    @property
    def shard_shape(self) -> tuple[int, ...]:
        return self.chunk

    def blocks_per_chunk(self, axis: int) -> int:
        return self.chunk[axis] // self.blocks[axis]

    def indivisible_axes(self) -> tuple[int, ...]:
        """Axes whose extent is not a multiple of their block size (any mode)."""
        return tuple(a for a, (e, b) in enumerate(zip(self.shape, self.blocks)) if e % b)

    def rejected_axes(self) -> tuple[int, ...]:
        """Axes tiled `reject` whose extent is not a multiple of the block: invalid."""
        return tuple(a for a in self.indivisible_axes() if not self.pads[a])

    # ---- partitions and tiles -------------------------------------------------------------
    @property
    def partition_count(self) -> int:
        return math.prod(self.partitions)

    @property
    def tiles_used(self) -> int:
        """How many tiles hold a shard (they are `first_tile .. tile_stop - 1`)."""
        return self.replication * self.partition_count

    @property
    def tile_stop(self) -> int:
        """One past the last tile that holds a shard."""
        return self.first_tile + self.tiles_used

    def holds(self, tile: int) -> bool:
        """`tile` stores a shard of this format."""
        return self.first_tile <= tile < self.tile_stop

    def tile_span(self) -> str:
        """The tiles in words, for diagnostics."""
        if self.tiles_used == 1:
            return f"tile {self.first_tile}"
        return f"tiles {self.first_tile}..{self.tile_stop - 1}"

    def linear_partition(self, q: Sequence[int]) -> int:
        self._check_partition(q)
        lin = 0
        for index, count in zip(q, self.partitions):
            lin = lin * count + index
        return lin

    def partition_index(self, lin: int) -> tuple[int, ...]:
        if not 0 <= lin < self.partition_count:
            raise ValueError(f"partition {lin} is outside 0..{self.partition_count - 1}")
        return tuple(int(i) for i in np.unravel_index(lin, self.partitions)) if self.rank else ()

    def tile_of(self, q: Sequence[int], replica: int = 0) -> int:
        if not 0 <= replica < self.replication:
            raise ValueError(f"replica {replica} is outside 0..{self.replication - 1}")
        return self.first_tile + replica * self.partition_count + self.linear_partition(q)

    def shard_on_tile(self, tile: int) -> tuple[tuple[int, ...], int] | None:
        """(partition index, replica) stored on `tile`, or None if the tile holds no shard."""
        if not self.holds(tile):
            return None
        replica, lin = divmod(tile - self.first_tile, self.partition_count)
        return self.partition_index(lin), replica

    def origin(self, q: Sequence[int]) -> tuple[int, ...]:
        """Element offset of partition `q`'s shard in the padded tensor."""
        self._check_partition(q)
        return tuple(i * c for i, c in zip(q, self.chunk))

    def partition_of_block(self, axis: int, block_index: int) -> int:
        """Partition (along `axis`) holding block `block_index` (in units of the axis block)."""
        self._check_block(axis, block_index)
        return block_index // self.blocks_per_chunk(axis)

    def local_block(self, axis: int, block_index: int) -> int:
        """Slot of block `block_index` inside its shard along `axis`."""
        self._check_block(axis, block_index)
        return block_index % self.blocks_per_chunk(axis)

    def partition_of_element(self, axis: int, index: int) -> int:
        if not 0 <= index < self.padded_shape[axis]:
            raise ValueError(
                f"element {index} is outside the padded extent {self.padded_shape[axis]} "
                f"of axis {axis}"
            )
        return index // self.chunk[axis]

    def shard_bytes(self) -> int:
        return math.prod(self.chunk) * element_bytes(self.precision)

    @property
    def shard_elements(self) -> int:
        return math.prod(self.chunk)

    def shard_box(self, tile: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(starts, stops): the box of the padded tensor that `tile` stores (replica
        `(tile - first_tile) // partition_count` holds the same box as replica 0)."""
        if not self.holds(tile):
            raise DescriptorError(
                f"tile {tile} holds no shard of this format (its shards are on tiles "
                f"{self.first_tile}..{self.tile_stop - 1})"
            )
        start = self.origin(self.partition_index((tile - self.first_tile) % self.partition_count))
        return start, tuple(s + c for s, c in zip(start, self.chunk))

    # ---- descriptors ----------------------------------------------------------------------
    def encode(self) -> tuple[int, ...]:
        """The descriptor words of this format (layout: module doc)."""
        if self.rank >= RANK_LIMIT:
            raise DescriptorError(f"cannot encode rank {self.rank} (at most {RANK_LIMIT - 1})")
        if self.precision not in PRECISION_CODES or self.order not in ORDERS:
            raise DescriptorError(
                f"cannot encode precision '{self.precision}' / order '{self.order}'"
            )
        return (
            self.rank + RANK_LIMIT * self.first_tile, *self.shape, *self.blocks, *self.partitions,
            *(int(bool(p)) for p in self.pads), self.replication, self.group,
            PRECISION_CODES.index(self.precision), ORDERS.index(self.order), self.scale,
        )

    # ---- all shards at once (NumPy) ---------------------------------------------------------
    def all_partitions(self) -> np.ndarray:
        """[P, rank] int64: partition index vectors in linear order."""
        if self.rank == 0:
            return np.zeros((1, 0), dtype=np.int64)
        grids = np.indices(self.partitions, dtype=np.int64).reshape(self.rank, -1)
        return grids.T.copy()

    def all_origins(self) -> np.ndarray:
        """[P, rank] int64: padded-tensor origin of every partition's shard, linear order."""
        return self.all_partitions() * np.asarray(self.chunk, dtype=np.int64)

    def all_tiles(self) -> np.ndarray:
        """[replication, P] int64: tile of every (replica, partition)."""
        return np.arange(self.first_tile, self.tile_stop, dtype=np.int64).reshape(
            self.replication, self.partition_count
        )

    def block_home_tiles(self, axes: Sequence[int], replica: int = 0) -> np.ndarray:
        """Tile holding each block along `axes` (other axes at partition 0).

        Returns an int64 array of shape [blocks along axes[0], blocks along axes[1], ...]
        where the block count of an axis is `padded extent / block`.
        """
        counts = [self.padded_shape[a] // self.blocks[a] for a in axes]
        q = np.zeros((*counts, self.rank), dtype=np.int64)
        for position, axis in enumerate(axes):
            shape = [1] * len(axes)
            shape[position] = counts[position]
            index = np.arange(counts[position]).reshape(shape) // self.blocks_per_chunk(axis)
            q[..., axis] = index
        strides = np.ones(self.rank, dtype=np.int64)
        for axis in range(self.rank - 2, -1, -1):
            strides[axis] = strides[axis + 1] * self.partitions[axis + 1]
        return self.first_tile + replica * self.partition_count + q @ strides

    # ---- checks ---------------------------------------------------------------------------
    def _check_partition(self, q: Sequence[int]) -> None:
        if len(q) != self.rank or any(not 0 <= i < p for i, p in zip(q, self.partitions)):
            raise ValueError(f"partition index {tuple(q)} is outside the grid {self.partitions}")

    def _check_block(self, axis: int, block_index: int) -> None:
        count = self.padded_shape[axis] // self.blocks[axis]
        if not 0 <= block_index < count:
            raise ValueError(
                f"block {block_index} is outside 0..{count - 1} of axis {axis} "
                f"(block {self.blocks[axis]}, padded extent {self.padded_shape[axis]})"
            )


def _code(value: int, codes: Sequence[str], what: str) -> str:
    if not 0 <= value < len(codes):
        raise DescriptorError(
            f"{what} code {value} is unknown (codes 0..{len(codes) - 1}: {', '.join(codes)})"
        )
    return codes[value]


def _check_descriptor_values(geometry: ShardGeometry) -> None:
    if geometry.group < geometry.tiles_used:
        raise DescriptorError(
            f"group {geometry.group} is smaller than the {geometry.tiles_used} tiles the "
            f"format uses"
        )
    if geometry.precision in SCALED_PRECISIONS:
        if geometry.scale not in FP8_SCALE_RANGE:
            raise DescriptorError(f"{geometry.precision} scale {geometry.scale} is outside "
                                  f"{FP8_SCALE_RANGE.start}..{FP8_SCALE_RANGE.stop - 1}")
    elif geometry.scale != 0:
        raise DescriptorError(f"only f8f143 and f16 have a scale, {geometry.precision} has "
                              f"{geometry.scale}")
    if geometry.order != "row_major":
        chunk = stored = geometry.chunk
        base = geometry.order.removesuffix(TRANSPOSED_SUFFIX)
        if base != geometry.order and geometry.rank >= 2:  # stored as its transpose
            stored = swap_last_axes(chunk)
        rows_block = AMP_BLOCK if base == "amp_right" else 1
        if geometry.rank < 2 or stored[-1] % AMP_BLOCK or stored[-2] % rows_block:
            raise DescriptorError(
                f"order {geometry.order} needs a shard of at least two axes padded to "
                f"{AMP_BLOCK}-blocks, got shard shape {chunk}"
            )


def _geometry_from_fields(rank: int, first_tile: int, fields: list[int]) -> ShardGeometry:
    shape, blocks, partitions, pads = (tuple(fields[k * rank:(k + 1) * rank]) for k in range(4))
    replication, group, precision, order, scale = fields[4 * rank:]
    if min(shape, default=0) < 0:
        raise DescriptorError(f"shape {shape} has a negative extent")
    if any(p not in (0, 1) for p in pads):
        raise DescriptorError(f"pad flags {pads} must be 0 or 1")
    geometry = ShardGeometry(
        shape, blocks, partitions, tuple(bool(p) for p in pads), replication, group,
        _code(precision, PRECISION_CODES, "precision"), _code(order, ORDERS, "order"), scale,
        first_tile,
    )
    _check_descriptor_values(geometry)
    return geometry


def decode_descriptor(words: Sequence[int], position: int = 0) -> tuple[ShardGeometry, int]:
    """The geometry encoded at `words[position:]` and the position after it."""
    if position >= len(words):
        raise DescriptorError(f"descriptor expected at word {position}, but there are only "
                              f"{len(words)} words")
    word = int(words[position])
    first_tile, rank = divmod(word, RANK_LIMIT) if word >= 0 else (0, word)
    end = position + 4 * rank + DESCRIPTOR_FIXED_WORDS
    if rank < 0 or end > len(words):
        raise DescriptorError(
            f"descriptor at word {position} has rank {rank} and needs "
            f"{4 * max(rank, 0) + DESCRIPTOR_FIXED_WORDS} words; {len(words) - position} remain"
        )
    try:
        geometry = _geometry_from_fields(rank, first_tile, [int(w) for w in words[position + 1:end]])
    except ValueError as error:  # DescriptorError or ShardGeometry's own checks
        raise DescriptorError(f"descriptor at word {position}: {error}") from None
    return geometry, end


@lru_cache(maxsize=4096)
def cached_descriptors(words: tuple[int, ...], count: int) -> tuple[ShardGeometry, ...]:
    """`decode_descriptors`, once per distinct words: a layout step calls its kernel (and a
    cost model its cycles) on every tile with the same descriptors. A bad descriptor raises
    each time (exceptions are not cached)."""
    return tuple(decode_descriptors(words, count))


def decode_descriptors(words: Sequence[int], count: int) -> list[ShardGeometry]:
    """Exactly `count` descriptors making up all of `words`."""
    geometries, position = [], 0
    for _ in range(count):
        geometry, position = decode_descriptor(words, position)
        geometries.append(geometry)
    if position != len(words):
        raise DescriptorError(
            f"{len(words) - position} word(s) left after the {count} descriptor(s)"
        )
    return geometries
