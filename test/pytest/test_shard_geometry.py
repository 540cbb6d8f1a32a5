"""Shard geometry of a TensorFormat: padding, shards, tiles (planning/shard_geometry.py)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipu_dialects.mid import AxisTilingAttr, TensorFormatAttr
from planning.shard_geometry import ShardGeometry, axis_chunk, padded_extent


@st.composite
def geometries(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 40)) for _ in range(rank))
    blocks = tuple(draw(st.integers(1, 9)) for _ in range(rank))
    partitions = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    pads = tuple(draw(st.booleans()) for _ in range(rank))
    replication = draw(st.integers(1, 3))
    return ShardGeometry(shape, blocks, partitions, pads, replication,
                         replication * math.prod(partitions), "f16")


def test_chunk_formula_from_internals():
    # 100 rows, blocks of 16, 4 partitions: 7 blocks -> 2 blocks per chunk -> 32 rows, padded 128
    assert axis_chunk(100, 16, 4) == 32
    assert padded_extent(100, 16, 4) == 128
    # more partitions than blocks: the trailing partitions hold only padding
    assert axis_chunk(64, 16, 8) == 16 and padded_extent(64, 16, 8) == 128


@settings(max_examples=60, deadline=None)
@given(geometries())
def test_every_padded_element_is_in_exactly_one_shard(g: ShardGeometry):
    owner = np.full(g.padded_shape, -1, dtype=np.int64)
    for lin, origin in enumerate(g.all_origins()):
        window = tuple(slice(o, o + c) for o, c in zip(origin, g.shard_shape))
        assert (owner[window] == -1).all(), "shards overlap"
        owner[window] = lin
    assert (owner >= 0).all(), "an element belongs to no shard"
    # and the owner agrees with the per-element query on every axis
    for axis in range(g.rank):
        for index in range(g.padded_shape[axis]):
            assert g.partition_of_element(axis, index) == index // g.chunk[axis]
    # padded extents cover the logical ones and are whole numbers of blocks per chunk
    for e, p, c, b, n in zip(g.shape, g.padded_shape, g.chunk, g.blocks, g.partitions):
        assert c % b == 0 and p == c * n
        assert e <= p < e + n * b  # never more than one block of padding per partition


@settings(max_examples=60, deadline=None)
@given(geometries())
def test_tiles_origins_and_partitions_are_consistent(g: ShardGeometry):
    tiles = g.all_tiles()
    assert sorted(tiles.reshape(-1).tolist()) == list(range(g.tiles_used))
    partitions = g.all_partitions()
    for replica in range(g.replication):
        for lin, q in enumerate(partitions):
            q = tuple(int(i) for i in q)
            tile = g.tile_of(q, replica)
            assert tile == tiles[replica, lin]
            assert g.linear_partition(q) == lin and g.partition_index(lin) == q
            assert g.shard_on_tile(tile) == (q, replica)
            assert g.origin(q) == tuple(int(o) for o in g.all_origins()[lin])
    assert g.shard_on_tile(g.tiles_used) is None


@settings(max_examples=60, deadline=None)
@given(geometries())
def test_block_home_and_local_slot_reconstruct_the_block(g: ShardGeometry):
    for axis in range(g.rank):
        count = g.padded_shape[axis] // g.blocks[axis]
        for b in range(count):
            part, slot = g.partition_of_block(axis, b), g.local_block(axis, b)
            start = part * g.chunk[axis] + slot * g.blocks[axis]
            assert start == b * g.blocks[axis]
            assert g.partition_of_element(axis, start) == part
        with pytest.raises(ValueError, match="outside"):
            g.partition_of_block(axis, count)


def test_block_home_tiles_matches_tile_of():
    g = ShardGeometry((2, 192, 256), (1, 64, 64), (1, 2, 3), (True,) * 3, 1, 6, "f16")
    homes = g.block_home_tiles((1, 2))
    assert homes.shape == (g.padded_shape[1] // 64, g.padded_shape[2] // 64)
    for k in range(homes.shape[0]):
        for j in range(homes.shape[1]):
            q = (0, g.partition_of_block(1, k), g.partition_of_block(2, j))
            assert homes[k, j] == g.tile_of(q)


def test_from_format_and_bytes():
    fmt = TensorFormatAttr("f32", "amp_left", [AxisTilingAttr(16, 3), AxisTilingAttr(64, 1)],
                           replication=2, group=8)
    g = ShardGeometry.from_format((40, 100), fmt)
    assert g.shard_shape == (16, 128) and g.padded_shape == (48, 128)
    assert g.shard_bytes() == 16 * 128 * 4
    assert g.tiles_used == 6 and g.tile_of((2, 0), replica=1) == 5
    assert g.rejected_axes() == ()
    rejecting = ShardGeometry.from_format(
        (40, 100), fmt.with_changes(tiling=[AxisTilingAttr(16, 3, "reject"), AxisTilingAttr(64, 1)]))
    assert rejecting.rejected_axes() == (0,) and rejecting.indivisible_axes() == (0, 1)


def test_bad_queries_are_rejected():
    g = ShardGeometry((8, 8), (4, 4), (2, 2), (True, True), 1, 4)
    with pytest.raises(ValueError, match="outside the grid"):
        g.tile_of((2, 0))
    with pytest.raises(ValueError, match="replica"):
        g.tile_of((0, 0), replica=1)
    with pytest.raises(ValueError, match="rank"):
        ShardGeometry((8,), (4, 4), (2, 2), (True, True))


GRID = ShardGeometry((4, 4), (2, 2), (2, 2), (False, False))


@pytest.mark.parametrize("call, message", [
    (lambda: ShardGeometry((4, 4), (2,), (2, 2), (False, False)),
     "shape (4, 4) has rank 2 but the tiling has 1 blocks, 2 partition counts, 2 pad flags"),
    (lambda: ShardGeometry((4, 4), (0, 2), (2, 2), (False, False)),
     "blocks (0, 2) and partitions (2, 2) must be >= 1"),
    (lambda: GRID.partition_index(4), "partition 4 is outside 0..3"),
    (lambda: GRID.tile_of((0, 0), 1), "replica 1 is outside 0..0"),
    (lambda: GRID.partition_of_element(0, 4), "element 4 is outside the padded extent 4 of axis 0"),
    (lambda: GRID.linear_partition((2, 0)), "partition index (2, 0) is outside the grid (2, 2)"),
])
def test_geometry_queries_outside_the_grid_are_errors(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message
