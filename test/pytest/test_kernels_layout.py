"""fill_zero, convert_shard and gather_shard on the device model (device/model/kernels_layout.py)."""

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
    read_shard,
    round_to,
    run,
)

from device.layouts import pack
from device.model import ModelError
from device.model.memory import TileMemory

RNG = np.random.default_rng(8)


def test_fill_zero_zeroes_exactly_its_words():
    memory = TileMemory(T, 2)
    noise = RNG.integers(1, 255, 64, dtype=np.uint8)
    memory.write(1, AREAS[0], noise)
    assert run(memory, "fill_zero", [1], [AREAS[0] + 8], [5]) == T.vector_cycles(20)
    after = memory.read(1, AREAS[0], 64)
    assert (after[8:28] == 0).all()
    np.testing.assert_array_equal(np.r_[after[:8], after[28:]], np.r_[noise[:8], noise[28:]])


def test_fill_zero_needs_a_word_aligned_pointer():
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 1), "fill_zero", [0], [AREAS[0] + 2], [1])
    assert str(info.value) == (f"step 0: kernel fill_zero on tile 0: pointer 'out' = "
                               f"{AREAS[0] + 2:#x} is not 4-byte aligned")


# (shape, blocks, partitions, replication, src (precision, order, scale), out (...))
CONVERSIONS = [
    ((70, 130), (64, 64), (2, 1), 2, ("f32", "row_major", 0), ("f16", "amp_left", 0)),
    ((70, 130), (64, 64), (2, 1), 1, ("f16", "amp_right", 0), ("f32", "amp_output", 0)),
    ((70, 130), (64, 64), (1, 2), 1, ("f32", "amp_left", 0), ("f8f143", "amp_right", -2)),
    ((2, 3, 100), (1, 1, 64), (2, 1, 2), 1, ("f8f143", "amp_left", 3), ("f16", "row_major", 0)),
    ((2, 3, 100), (1, 2, 64), (1, 2, 1), 2, ("f16", "row_major", 0), ("f8f143", "amp_output", 1)),
    ((9, 5), (2, 1), (3, 1), 1, ("f8f143", "row_major", -3), ("f8f143", "row_major", 0)),
]


@pytest.mark.parametrize("shape,blocks,partitions,replication,src_spec,out_spec", CONVERSIONS)
def test_convert_shard_repacks_and_rounds_once(shape, blocks, partitions, replication,
                                               src_spec, out_spec):
    src = fmt(shape, blocks, partitions, src_spec[0], src_spec[1], replication, src_spec[2])
    out = fmt(shape, blocks, partitions, out_spec[0], out_spec[1], replication, out_spec[2])
    values = random_values(RNG, shape, src.precision, src.scale, spread=4.0)
    values.flat[:3] = [1e5, -3000.0, 2.0**-9]  # f16 overflow -> inf, FP8 saturation
    values = round_to(values, src.precision, src.scale)
    memory = TileMemory(T, src.tiles_used)
    place(memory, src, values, AREAS[0])
    memory.write(0, AREAS[1], np.full(out.shard_bytes(), 0x3C, np.uint8))  # stale padding
    run(memory, "convert_shard", range(src.tiles_used), [AREAS[1], AREAS[0]],
        descriptors(out, src))
    result = collect(memory, out, AREAS[1])
    np.testing.assert_array_equal(logical(out, result), round_to(values, out.precision,
                                                                 out.scale))
    assert padding_is_zero(out, result)


def test_convert_shard_saturates_fp8_and_overflows_f16_to_inf():
    src = fmt((1, 64), (1, 64), (1, 1), "f32")
    memory = TileMemory(T, 1)
    values = np.zeros((1, 64))
    values[0, :4] = [1e5, -1e5, 250.0 * 4, 65520.0]
    place(memory, src, values, AREAS[0])
    for out, expected in ((fmt((1, 64), (1, 64), (1, 1), "f8f143", scale=2), [960, -960, 960]),
                          (fmt((1, 64), (1, 64), (1, 1), "f16"), [np.inf, -np.inf, 1000])):
        run(memory, "convert_shard", [0], [AREAS[1], AREAS[0]], descriptors(out, src))
        assert list(read_shard(memory, out, 0, AREAS[1])[0, :3]) == expected
    assert read_shard(memory, out, 0, AREAS[1])[0, 3] == np.inf  # 65520 rounds up past f16


def test_convert_shard_writes_zeros_into_the_padding_whatever_src_holds_there():
    src = fmt((5, 70), (1, 64), (1, 1), "f32", "amp_left")
    out = fmt((5, 70), (1, 64), (1, 1), "f16", "row_major")
    memory = TileMemory(T, 1)
    memory.write(0, AREAS[0], pack(np.full(src.chunk, 5.0), src.order, src.precision))
    run(memory, "convert_shard", [0], [AREAS[1], AREAS[0]], descriptors(out, src))
    result = read_shard(memory, out, 0, AREAS[1])
    assert (result[:, :70] == 5.0).all() and (result[:, 70:] == 0).all()


GOOD = fmt((8, 64), (1, 64), (2, 1), "f16")


@pytest.mark.parametrize("out,src,scalars_tail,tiles,message", [
    (fmt((8, 64), (4, 64), (1, 1)), GOOD, [], [0],
     "out's shard box ((0, 0), (8, 64)) and src's ((0, 0), (4, 64)) differ on this tile; "
     "convert_shard converts a shard in place of its box"),
    (fmt((8, 65), (1, 64), (2, 1)), GOOD, [], [0],
     "'out' has shape (8, 65) but 'src' has (8, 64): not one tensor"),
    (GOOD, GOOD, [0], [0],
     "bad descriptors: 1 word(s) left after the 2 descriptor(s)"),
    (GOOD, GOOD, [], [2],
     "operand 'out': tile 2 holds no shard of this format (its shards are on tiles 0..1)"),
])
def test_convert_shard_errors(out, src, scalars_tail, tiles, message):
    memory = TileMemory(T, 3)
    with pytest.raises(ModelError) as info:
        run(memory, "convert_shard", tiles, [AREAS[1], AREAS[0]],
            descriptors(out, src) + scalars_tail)
    assert str(info.value) == f"step 0: kernel convert_shard on tile {tiles[0]}: {message}"


def test_descriptor_kernels_need_vector_aligned_pointers():
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 2), "convert_shard", [0], [AREAS[1] + 4, AREAS[0]],
            descriptors(GOOD, GOOD))
    assert str(info.value) == (f"step 0: kernel convert_shard on tile 0: pointer 'out' = "
                               f"{AREAS[1] + 4:#x} is not 8-byte aligned")


# ---- gather_shard ---------------------------------------------------------------------------
GATHERS = [
    # staged (source) format, out format: same tensor, different tilings and orders
    (fmt((50, 100), (1, 1), (3, 1), "f16"), fmt((50, 100), (1, 64), (1, 2), "f16", "amp_left")),
    (fmt((50, 100), (16, 64), (2, 2), "f32", "amp_output", replication=2),
     fmt((50, 100), (7, 1), (2, 3), "f32", "row_major")),
    (fmt((2, 64, 130), (1, 64, 64), (2, 1, 1), "f8f143", "amp_right", scale=-1),
     fmt((2, 64, 130), (1, 16, 64), (1, 2, 2), "f8f143", "amp_left", replication=2, scale=-1)),
]


@pytest.mark.parametrize("staged,out", GATHERS)
def test_gather_shard_assembles_a_new_tiling_from_every_source(staged, out):
    values = random_values(RNG, out.shape, out.precision, out.scale)
    tiles = max(staged.tiles_used, out.tiles_used)
    memory = TileMemory(T, tiles)
    place(memory, staged, values, AREAS[0])
    words = (out.shard_bytes() + 3) // 4
    run(memory, "fill_zero", range(out.tiles_used), [AREAS[1]], [words])
    for source in range(staged.partition_count):
        # the exchange's part, done by hand: source's shard lands in every receiver's staging
        raw = memory.read(source, AREAS[0], staged.shard_bytes())
        for tile in range(out.tiles_used):
            memory.write(tile, AREAS[2], raw)
        run(memory, "gather_shard", range(out.tiles_used), [AREAS[1], AREAS[2]],
            [source, *descriptors(out, staged)])
    result = collect(memory, out, AREAS[1])
    np.testing.assert_array_equal(logical(out, result), values)
    assert padding_is_zero(out, result)


def test_gather_shard_leaves_elements_outside_the_intersection():
    staged = fmt((8, 4), (1, 1), (2, 1), "f32")
    out = fmt((8, 4), (1, 1), (1, 2), "f32")
    values = RNG.normal(size=(8, 4)).astype(np.float32).astype(np.float64)
    memory = TileMemory(T, 2)
    place(memory, staged, values, AREAS[0])
    memory.write(1, AREAS[1], np.full(out.shard_bytes() // 4, 7.0, np.float32))
    memory.write(1, AREAS[2], memory.read(1, AREAS[0], staged.shard_bytes()))  # rows 4..7
    run(memory, "gather_shard", [1], [AREAS[1], AREAS[2]], [1, *descriptors(out, staged)])
    shard = read_shard(memory, out, 1, AREAS[1])  # columns 2..3 of all rows
    np.testing.assert_array_equal(shard[4:], values[4:, 2:])
    assert (shard[:4] == 7.0).all()


@pytest.mark.parametrize("out,staged,source,message", [
    (fmt((8, 64), (1, 64), (2, 1), "f32"), GOOD, 0,
     "out is f32 (scale 0) but staged is f16 (scale 0); gather_shard moves elements without "
     "converting them"),
    (GOOD, GOOD, 5,
     "operand 'staged': tile 5 holds no shard of this format (its shards are on tiles 0..1)"),
    (fmt((8, 32), (1, 1), (2, 1), "f16"), GOOD, 0,
     "'out' has shape (8, 32) but 'staged' has (8, 64): not one tensor"),
])
def test_gather_shard_errors(out, staged, source, message):
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 2), "gather_shard", [0], [AREAS[1], AREAS[2]],
            [source, *descriptors(out, staged)])
    assert str(info.value) == f"step 0: kernel gather_shard on tile 0: {message}"


def test_a_shard_larger_than_tile_memory_is_refused_before_anything_runs():
    huge = fmt((1 << 20, 64), (1, 64), (1, 1), "f32")
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 1), "gelu", [0], [AREAS[1], AREAS[0]], descriptors(huge, huge))
    assert str(info.value) == (
        f"step 0: kernel gelu on tile 0, operand 'out': tile 0, bytes [{AREAS[1]:#x}, "
        f"{AREAS[1] + (1 << 28):#x}) are outside tile memory [{T.memory_base:#x}, "
        f"{T.memory_end:#x})")
