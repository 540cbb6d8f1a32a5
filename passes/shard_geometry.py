"""The arithmetic of a `TensorFormat`: chunks, padding, shards and the tiles that hold them.

One place used by lowering (`mid-to-tile`), placement and the host metadata, so that the
shard of a tile can only be computed one way (docs/internals.md, "mid level"):

- axis `i` of extent `E` with tiling `block x partitions` is cut into `partitions` contiguous
  chunks of `chunk = ceil(ceil(E / block) / partitions) * block` elements; the padded extent
  is `chunk * partitions` (`pad` zero-fills the tail, `reject` requires `E % block == 0`);
- a partition index vector `q` is linearized row-major over the partition counts;
- replica `r` of partition `q` lives on tile `r * prod(partitions) + lin(q)`;
- a shard is the padded chunk rectangle `chunk_0 x chunk_1 x ...`, starting at element
  `q_i * chunk_i` of each axis of the padded tensor.

Everything here is a pure function of ints and tuples; the "all shards" queries return NumPy
arrays so that asking about 1472 tiles stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from device.layouts import element_bytes


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def axis_chunk(extent: int, block: int, partitions: int) -> int:
    """Elements of one partition's chunk of an axis (a multiple of `block`)."""
    return ceil_div(ceil_div(extent, block), partitions) * block


def padded_extent(extent: int, block: int, partitions: int) -> int:
    return axis_chunk(extent, block, partitions) * partitions


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

    @classmethod
    def from_format(cls, shape: Sequence[int], fmt: object) -> ShardGeometry:
        """From a logical shape and a `mid.TensorFormatAttr`."""
        from ipu_dialects.mid import TensorFormatAttr

        assert isinstance(fmt, TensorFormatAttr)
        return cls(
            tuple(shape),
            fmt.blocks,
            fmt.partitions,
            fmt.pads,
            fmt.replication.data,
            fmt.group.data,
            fmt.precision.data,
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
        return self.replication * self.partition_count

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
        return replica * self.partition_count + self.linear_partition(q)

    def shard_on_tile(self, tile: int) -> tuple[tuple[int, ...], int] | None:
        """(partition index, replica) stored on `tile`, or None if the tile holds no shard."""
        if not 0 <= tile < self.tiles_used:
            return None
        replica, lin = divmod(tile, self.partition_count)
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
        return np.arange(self.tiles_used, dtype=np.int64).reshape(
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
        return replica * self.partition_count + q @ strides

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


def geometry(shape: Sequence[int], fmt: object) -> ShardGeometry:
    """Shorthand for `ShardGeometry.from_format`."""
    return ShardGeometry.from_format(shape, fmt)
