"""The gather_rows kernel on the model: rows copied bit-exactly by i32 indices, a masked
select (zeros) for rows another tile's table shard holds, errors for bad indices and formats."""

from __future__ import annotations

import numpy as np
import pytest
from kernels_support import (
    AREAS,
    T,
    collect,
    descriptors,
    fmt,
    logical,
    padding_is_zero,
    place,
    read_shard,
    run,
)

from device.model import ModelError
from device.model.memory import TileMemory

RNG = np.random.default_rng(7)




def run_gather(out, table, indices, table_values, ids, tiles):
    memory = TileMemory(T, max(max(tiles) + 1, table.tiles_used, indices.tiles_used))
    place(memory, table, table_values, AREAS[0])
    place(memory, indices, ids, AREAS[1])
    run(memory, "gather_rows", tiles, [AREAS[2], AREAS[0], AREAS[1]],
        descriptors(out, table, indices))
    return collect(memory, out, AREAS[2])


@pytest.mark.parametrize("precision", ["f16", "f32"])
def test_columns_cut_every_row_copied_bit_exactly(precision):
    # table [9, 10] cut into 4 column shards (3, 3, 3, 1 columns), indices [2, 3] on each tile
    table = fmt((9, 10), (1, 1), (1, 4), precision)
    out = fmt((2, 3, 10), (1, 1, 1), (1, 1, 4), precision)
    indices = fmt((2, 3), (1, 1), (1, 1), "i32", replication=4)
    values = RNG.uniform(-1, 1, (9, 10)).astype(precision.replace("f", "float"))
    ids = np.array([[0, 8, 3], [3, 0, 8]])  # both boundaries, repeats
    result = run_gather(out, table, indices, values, ids, range(4))
    np.testing.assert_array_equal(logical(out, result), values[ids])
    assert padding_is_zero(out, result)


def test_rows_another_tile_holds_are_zeros():
    # the table cut by rows (5 + 4): each tile's partial output holds its own rows only, and
    # the partials sum to the gather (the masked select a row-cut plan would reduce)
    table = fmt((9, 4), (1, 1), (2, 1))
    indices = fmt((5,), (1,), (1,), "i32", replication=2)
    out = fmt((5, 4), (1, 1), (1, 1), replication=2)
    values = RNG.uniform(-1, 1, (9, 4))
    ids = np.array([0, 4, 5, 8, 4])
    memory = TileMemory(T, 2)
    place(memory, table, values, AREAS[0])
    place(memory, indices, ids, AREAS[1])
    run(memory, "gather_rows", range(2), [AREAS[2], AREAS[0], AREAS[1]],
        descriptors(out, table, indices))
    parts = [read_shard(memory, out, tile, AREAS[2]) for tile in range(2)]
    owned = ids < 5
    np.testing.assert_array_equal(parts[0][owned], values.astype(np.float32)[ids[owned]])
    assert (parts[0][~owned] == 0).all() and (parts[1][owned] == 0).all()
    np.testing.assert_array_equal(parts[0] + parts[1], values.astype(np.float32)[ids])


@pytest.mark.parametrize("bad", [9, -1])
def test_an_index_outside_the_table_is_an_error_naming_it(bad):
    table = fmt((9, 4), (1, 1), (1, 1))
    indices = fmt((3,), (1,), (1,), "i32")
    out = fmt((3, 4), (1, 1), (1, 1))
    with pytest.raises(ModelError) as info:
        run_gather(out, table, indices, np.zeros((9, 4)), np.array([0, bad, 2]), [0])
    assert str(info.value) == (f"step 0: kernel gather_rows on tile 0: index {bad} at [1] of "
                               "the indices is outside the table's 9 rows (0 <= index < 9)")


def test_format_errors():
    table = fmt((9, 4), (1, 1), (1, 1))
    out = fmt((3, 4), (1, 1), (1, 1))
    with pytest.raises(ModelError, match="'indices' are stored as f32; they must be i32"):
        run_gather(out, table, fmt((3,), (1,), (1,), "f32"), np.zeros((9, 4)), np.zeros(3), [0])
    with pytest.raises(ModelError, match=r"'out' \(f16, scale 0\) and 'table' \(f32, scale 0\) "
                                         "differ: rows are copied bit-exactly"):
        run_gather(fmt((3, 4), (1, 1), (1, 1), "f16"), table, fmt((3,), (1,), (1,), "i32"),
                   np.zeros((9, 4)), np.zeros(3), [0])
    with pytest.raises(ModelError, match=r"'out' has shape \(3, 5\); the indices' shape \(3,\) "
                                         r"followed by the table's row shape \(4,\) is expected"):
        run_gather(fmt((3, 5), (1, 1), (1, 1)), table, fmt((3,), (1,), (1,), "i32"),
                   np.zeros((9, 4)), np.zeros(3), [0])


def test_rows_not_resident_on_the_tile_are_an_error():
    # out's rows cut in 2, the indices in 4: tile 0 needs positions 0:2 but holds 0:1
    table = fmt((9, 4), (1, 1), (1, 1), replication=4)
    out = fmt((4, 4), (1, 1), (2, 1))
    indices = fmt((4,), (1,), (4,), "i32")
    with pytest.raises(ModelError) as info:
        run_gather(out, table, indices, np.zeros((9, 4)), np.zeros(4), [0])
    assert str(info.value) == ("step 0: kernel gather_rows on tile 0: operand 'indices': out's "
                               "box needs [0:2], its shard on this tile holds [0:1]")
