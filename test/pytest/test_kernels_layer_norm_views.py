"""layer_norm and the layout-op kernels view_shard / gather_view on the device model
(device/model/kernels_layer_norm.py, device/model/kernels_views.py), against NumPy."""

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
    random_values,
    round_to,
    run,
)

from device.index_views import IndexView
from device.kernels import f32_bits, get_kernel
from device.model import ModelError
from device.model.memory import TileMemory

RNG = np.random.default_rng(14)


def reference_layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


LAYER_NORMS = [
    # shape, out blocks, partitions, src precision, out (precision, order), eps
    ((5, 3, 40), (1, 1, 64), (3, 1, 1), "f32", ("f16", "amp_output"), 1e-5),
    ((7, 24), (1, 1), (4, 1), "f16", ("f32", "row_major"), 1e-3),
    ((16,), (1,), (1,), "f32", ("f32", "row_major"), 1e-5),
]


@pytest.mark.parametrize("shape,blocks,partitions,src_precision,out_spec,eps", LAYER_NORMS)
def test_layer_norm_matches_numpy(shape, blocks, partitions, src_precision, out_spec, eps):
    src = fmt(shape, blocks, partitions, src_precision)
    out = fmt(shape, blocks, partitions, *out_spec)
    tiles = src.tiles_used
    width = shape[-1]
    vector = fmt((width,), (1,), (1,), src_precision, replication=tiles)
    x = round_to(random_values(RNG, shape, src_precision, spread=3.0) + 2.0, src_precision)
    weight = random_values(RNG, (width,), src_precision)
    bias = random_values(RNG, (width,), src_precision)
    memory = TileMemory(T, tiles)
    for values, area, g in ((x, AREAS[0], src), (weight, AREAS[2], vector),
                            (bias, AREAS[3], vector)):
        place(memory, g, values, area)
    run(memory, "layer_norm", range(tiles), [AREAS[1], AREAS[0], AREAS[2], AREAS[3]],
        [f32_bits(eps), *descriptors(out, src, vector, vector)])
    result = collect(memory, out, AREAS[1])
    expected = reference_layer_norm(x, weight, bias, np.float32(eps))
    # FP32 statistics, one rounding: within one unit of the output precision's last place
    tolerance = {"f32": 1e-5, "f16": 2.0 ** -10}[out.precision]
    np.testing.assert_allclose(logical(out, result), expected, rtol=tolerance,
                               atol=tolerance * np.abs(expected).max())
    assert padding_is_zero(out, result)


def test_layer_norm_errors():
    src = fmt((4, 8), (1, 1), (1, 2), "f32")  # the last axis cut in two
    vector = fmt((8,), (1,), (1,), "f32", replication=2)
    memory = TileMemory(T, 2)
    pointers = [AREAS[1], AREAS[0], AREAS[2], AREAS[3]]
    with pytest.raises(ModelError) as info:
        run(memory, "layer_norm", [0], pointers,
            [f32_bits(1e-5), *descriptors(src, src, vector, vector)])
    assert str(info.value) == ("step 0: kernel layer_norm on tile 0: this tile's box ((0, 0), "
                               "(4, 4)) splits the normalized last axis (8); layer_norm needs "
                               "whole rows")
    rows = fmt((4, 8), (1, 1), (2, 1), "f32")
    halves = fmt((8,), (1,), (2,), "f32")
    with pytest.raises(ModelError) as info:
        run(memory, "layer_norm", [0], pointers,
            [f32_bits(1e-5), *descriptors(rows, rows, halves, vector)])
    assert str(info.value) == ("step 0: kernel layer_norm on tile 0: 'weight': its shard [0:4] "
                               "on this tile does not hold all 8 entries")
    with pytest.raises(ModelError) as info:
        run(memory, "layer_norm", [0], pointers,
            [f32_bits(1e-5), *descriptors(rows, rows, fmt((4,), (1,), (1,)), vector)])
    assert ("'weight' has shape (4,), expected (8,): one entry per element of the normalized "
            "last axis") in str(info.value)
    with pytest.raises(ModelError) as info:
        run(memory, "layer_norm", [0], pointers, [0, *descriptors(rows, rows, vector, vector)])
    assert "eps_bits 0x0 is not the bit pattern of a finite positive f32" in str(info.value)
    with pytest.raises(ModelError) as info:
        run(memory, "layer_norm", [0], pointers,
            [f32_bits(1e-5), *descriptors(src, rows, vector, vector)])
    assert "out's shard box ((0, 0), (4, 4)) and src's ((0, 0), (2, 8)) differ" in str(info.value)
    with pytest.raises(ModelError) as info:
        run(memory, "layer_norm", [0], pointers,
            [f32_bits(1e-5), *descriptors(fmt((4, 9), (1, 1), (2, 1)), rows, vector, vector)])
    assert ("'out' has shape (4, 9) but 'src' has (4, 8): layer_norm keeps the shape (rank >= 1)"
            in str(info.value))


# ---- views -----------------------------------------------------------------------------------
def whole(shape):
    return (0,) * len(shape), tuple(shape)


def gather(memory, out, src, view, x_area, out_area, slot_area):
    """What the compiler's gather loop does: each source shard staged on every out tile, then
    gather_view there."""
    for source in range(src.partition_count):
        shard = memory.read(source, x_area, src.shard_bytes())
        for tile in range(out.tiles_used):
            memory.write(tile, slot_area, shard)
        run(memory, "gather_view", range(out.tiles_used), [out_area, slot_area],
            [source, *descriptors(out, src), *view.encode()])


GATHERS = [
    # name, source shape, source blocks/partitions, out shape, out partitions, view, numpy
    ("reshape", (6, 10), (1, 1), (3, 1), (3, 4, 5), (1, 2, 1),
     IndexView(*whole((3, 4, 5)), (20, 5, 1), 0), lambda x: x.reshape(3, 4, 5)),
    ("transpose", (2, 3, 8), (1, 1, 1), (1, 3, 1), (8, 2, 3), (3, 1, 1),
     IndexView(*whole((8, 2, 3)), (1, 24, 8), 0), lambda x: x.transpose(2, 0, 1)),
    ("slice", (9, 12), (1, 1), (2, 2), (4, 5), (1, 3),
     IndexView(*whole((4, 5)), (24, 2), 12 + 1), lambda x: x[1:9:2, 1:10:2]),
]


@pytest.mark.parametrize("name,src_shape,src_blocks,src_parts,out_shape,out_parts,view,numpy",
                         GATHERS, ids=[g[0] for g in GATHERS])
def test_gather_view_is_the_numpy_layout_op(name, src_shape, src_blocks, src_parts, out_shape,
                                             out_parts, view, numpy):
    src = fmt(src_shape, src_blocks, src_parts, "f16")
    out = fmt(out_shape, (1,) * len(out_shape), out_parts, "f16")
    x = random_values(RNG, src_shape, "f16")
    memory = TileMemory(T, max(src.tiles_used, out.tiles_used))
    place(memory, src, x, AREAS[0])
    place(memory, out, np.zeros(out_shape), AREAS[1])  # the compiler zeroes padding first
    gather(memory, out, src, view, AREAS[0], AREAS[1], AREAS[2])
    result = collect(memory, out, AREAS[1])
    np.testing.assert_array_equal(logical(out, result), numpy(x))
    assert padding_is_zero(out, result)


def test_view_shard_concat_windows_are_tile_local():
    """Two inputs of a row-split concat along the columns: each writes its window only."""
    a_fmt, b_fmt = fmt((6, 3), (1, 1), (3, 1)), fmt((6, 5), (1, 1), (3, 1))
    out = fmt((6, 8), (1, 1), (3, 1), "f32", "row_major")
    a, b = random_values(RNG, (6, 3), "f32"), random_values(RNG, (6, 5), "f32")
    memory = TileMemory(T, 3)
    place(memory, a_fmt, a, AREAS[0])
    place(memory, b_fmt, b, AREAS[1])
    place(memory, out, np.full((6, 8), 7.0), AREAS[2])
    run(memory, "view_shard", range(3), [AREAS[2], AREAS[0]],
        [*descriptors(out, a_fmt), *IndexView((0, 0), (6, 3), (3, 1), 0).encode()])
    partial = logical(out, collect(memory, out, AREAS[2]))
    assert (partial[:, 3:] == 7.0).all()  # outside the window: left as it was
    run(memory, "view_shard", range(3), [AREAS[2], AREAS[1]],
        [*descriptors(out, b_fmt), *IndexView((0, 3), (6, 8), (5, 1), 0).encode()])
    np.testing.assert_array_equal(logical(out, collect(memory, out, AREAS[2])),
                                  np.concatenate([a, b], axis=1))


def test_view_kernels_errors():
    src = fmt((4, 6), (1, 1), (2, 1))
    out = fmt((6, 4), (1, 1), (2, 1))
    transpose = IndexView(*whole((6, 4)), (1, 6), 0)
    memory = TileMemory(T, 2)
    with pytest.raises(ModelError) as info:
        run(memory, "view_shard", [0], [AREAS[1], AREAS[0]],
            [*descriptors(out, src), *transpose.encode()])
    assert str(info.value) == ("step 0: kernel view_shard on tile 0: 6 element(s) of out's box "
                               "((0, 0), (3, 4)) take their source outside src's shard ((0, 0), "
                               "(2, 6)) on this tile; view_shard is tile-local")
    with pytest.raises(ModelError) as info:
        run(memory, "gather_view", [0], [AREAS[1], AREAS[0]],
            [0, *descriptors(fmt((6, 4), (1, 1), (2, 1), "f16"), src), *transpose.encode()])
    assert ("out is f16 (scale 0) but staged is f32 (scale 0); gather_view moves elements "
            "without converting them") in str(info.value)
    with pytest.raises(ModelError) as info:
        run(memory, "view_shard", [0], [AREAS[1], AREAS[0]], descriptors(out, src))
    assert ("bad descriptors or index view: the index view of a rank-2 output takes 7 words, "
            "got 0") in str(info.value)
    with pytest.raises(ValueError) as error:
        get_kernel("view_shard").footprint_of(
            [*descriptors(out, src), *IndexView((0, 0), (7, 4), (1, 6), 0).encode()])
    assert str(error.value) == ("index view window (0, 0)..(7, 4) is not a non-empty box of the "
                                "output (6, 4)")
    with pytest.raises(ValueError) as error:
        get_kernel("gather_view").footprint_of(
            [0, *descriptors(out, src), *IndexView(*whole((6, 4)), (1, 6), 1).encode()])
    assert str(error.value) == ("index view reaches source elements 1..24, outside the 24 of the "
                                "source (4, 6)")
    footprint = get_kernel("gather_view").footprint_of(
        [1, *descriptors(out, src), *transpose.encode()])
    assert footprint == {"out": 3 * 4 * 4, "staged": 2 * 6 * 4}
