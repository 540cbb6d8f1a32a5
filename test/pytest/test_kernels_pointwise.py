"""gelu (both forms) and the broadcasting add on the device model (device/model/kernels_pointwise.py)."""

import math

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

from device.layouts import pack
from device.model import ModelError
from device.model.memory import TileMemory
from device.numerics import gelu_tanh

RNG = np.random.default_rng(88)


def reference_gelu(x: np.ndarray) -> np.ndarray:
    """Element by element with math.erf (independent of device.numerics' vectorization)."""
    flat = [0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.reshape(-1).tolist()]
    return np.asarray(flat).reshape(x.shape)


GELUS = [
    # shape, blocks, partitions, replication, src (precision, order, scale), out (...)
    ((33, 130), (16, 64), (2, 1), 2, ("f32", "row_major", 0), ("f16", "amp_output", 0)),
    ((2, 3, 70), (1, 1, 64), (2, 1, 2), 1, ("f16", "amp_left", 0), ("f8f143", "row_major", -2)),
    ((64, 64), (64, 64), (1, 1), 1, ("f8f143", "amp_right", 1), ("f32", "amp_right", 0)),
    ((40,), (8,), (3,), 1, ("f32", "row_major", 0), ("f32", "row_major", 0)),
]


# each GeLU kernel against its definition: the exact form element by element with math.erf;
# the tanh form by the definition the reference shares (test_gelu_tanh.py checks that against
# the formula and torch)
GELU_FORMS = [("gelu", reference_gelu), ("gelu_tanh", gelu_tanh)]


@pytest.mark.parametrize("symbol,definition", GELU_FORMS, ids=[s for s, _ in GELU_FORMS])
@pytest.mark.parametrize("shape,blocks,partitions,replication,src_spec,out_spec", GELUS)
def test_gelu_kernels_are_their_definition_rounded_once(symbol, definition, shape, blocks,
                                                        partitions, replication, src_spec,
                                                        out_spec):
    src = fmt(shape, blocks, partitions, src_spec[0], src_spec[1], replication, src_spec[2])
    out = fmt(shape, blocks, partitions, out_spec[0], out_spec[1], replication, out_spec[2])
    values = random_values(RNG, shape, src.precision, src.scale, spread=3.0)
    memory = TileMemory(T, src.tiles_used)
    place(memory, src, values, AREAS[0])
    run(memory, symbol, range(src.tiles_used), [AREAS[1], AREAS[0]], descriptors(out, src))
    result = collect(memory, out, AREAS[1])
    np.testing.assert_array_equal(logical(out, result),
                                  round_to(definition(values), out.precision, out.scale))
    assert padding_is_zero(out, result)


def test_gelu_in_place_and_padding_zeroed():
    g = fmt((3, 70), (1, 64), (1, 1), "f32", "amp_left")
    memory = TileMemory(T, 1)
    memory.write(0, AREAS[0], pack(np.full(g.chunk, -1.0), g.order, g.precision))
    run(memory, "gelu", [0], [AREAS[0], AREAS[0]], descriptors(g, g))
    result = collect(memory, g, AREAS[0])
    expected = np.float32(-0.5 * (1 + math.erf(-1 / math.sqrt(2))))
    assert (logical(g, result) == expected).all() and padding_is_zero(g, result)


def test_gelu_errors():
    a = fmt((8, 64), (1, 64), (2, 1), "f16")
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 2), "gelu", [0], [AREAS[1], AREAS[0]],
            descriptors(fmt((8, 64), (8, 64), (1, 1), "f16"), a))
    assert str(info.value) == ("step 0: kernel gelu on tile 0: out's shard box ((0, 0), "
                               "(8, 64)) and src's ((0, 0), (4, 64)) differ on this tile")
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 2), "gelu", [0], [AREAS[1], AREAS[0]],
            descriptors(fmt((8, 63), (1, 64), (2, 1), "f16"), a))
    assert str(info.value) == ("step 0: kernel gelu on tile 0: 'out' has shape (8, 63) but "
                               "'src' has (8, 64): gelu keeps the shape")


# ---- add ----------------------------------------------------------------------------------------
ADDS = [
    # out, lhs, rhs: every operand's view of each out shard is on the same tile
    (fmt((4, 6, 130), (1, 1, 64), (2, 1, 1), "f32", "amp_left"),
     fmt((4, 6, 130), (1, 1, 1), (2, 1, 1), "f16"),
     fmt((130,), (1,), (1,), "f32", replication=2)),
    (fmt((4, 6, 130), (1, 3, 64), (2, 2, 1), "f16", "amp_output"),
     fmt((4, 6, 130), (1, 3, 64), (2, 2, 1), "f8f143", "amp_left", scale=-1),
     fmt((6, 1), (3, 1), (2, 1), "f32", replication=2)),
    (fmt((70, 64), (64, 64), (2, 1), "f8f143", "amp_right", scale=1),
     fmt((70, 1), (64, 1), (2, 1), "f32"),
     fmt((1, 64), (1, 64), (1, 1), "f16", "amp_left", replication=2)),
    (fmt((3, 5), (1, 1), (3, 1), "f32"),  # both operands broadcast
     fmt((3, 1), (1, 1), (3, 1), "f32"),
     fmt((1, 5), (1, 1), (1, 1), "f32", replication=3)),
]


@pytest.mark.parametrize("out,lhs,rhs", ADDS)
def test_add_broadcasts_like_numpy_and_rounds_once(out, lhs, rhs):
    a = random_values(RNG, lhs.shape, lhs.precision, lhs.scale, spread=2.0)
    b = random_values(RNG, rhs.shape, rhs.precision, rhs.scale, spread=2.0)
    memory = TileMemory(T, out.tiles_used)
    place(memory, lhs, a, AREAS[0])
    place(memory, rhs, b, AREAS[2])
    run(memory, "add", range(out.tiles_used), [AREAS[1], AREAS[0], AREAS[2]],
        descriptors(out, lhs, rhs))
    result = collect(memory, out, AREAS[1])
    # float64 sum (exact for these inputs), one rounding: the same value as the reference
    np.testing.assert_array_equal(logical(out, result),
                                  round_to(a + b, out.precision, out.scale))
    assert padding_is_zero(out, result)


def test_add_in_place_over_lhs():
    g = fmt((4, 8), (1, 1), (2, 1), "f16")
    bias = fmt((8,), (1,), (1,), "f16", replication=2)
    a, b = RNG.normal(size=(4, 8)).astype(np.float16), RNG.normal(size=8).astype(np.float16)
    memory = TileMemory(T, 2)
    place(memory, g, a, AREAS[0])
    place(memory, bias, b, AREAS[2])
    run(memory, "add", [0, 1], [AREAS[0], AREAS[0], AREAS[2]], descriptors(g, g, bias))
    np.testing.assert_array_equal(logical(g, collect(memory, g, AREAS[0])),
                                  (a.astype(np.float64) + b).astype(np.float16))


OUT = fmt((4, 6, 130), (1, 1, 1), (2, 1, 1), "f32")


@pytest.mark.parametrize("lhs,rhs,tile,message", [
    (OUT, fmt((6, 130), (1, 1), (2, 1), "f32", replication=2), 0,
     "operand 'rhs': its view [0:6, 0:130] of out's box is not resident in its shard "
     "[0:3, 0:130] on this tile"),
    (OUT, fmt((130,), (1,), (1,), "f32"), 1,
     "operand 'rhs': tile 1 holds no shard of this format (its shards are on tiles 0..0)"),
    (OUT, fmt((5, 130), (1, 1), (1, 1), "f32"), 0,
     "operand 'rhs' of shape (5, 130) does not broadcast to out's shape (4, 6, 130)"),
    (fmt((2, 4, 6, 130), (1, 1, 1, 1), (1, 1, 1, 1), "f32"), OUT, 0,
     "operand 'lhs' of shape (2, 4, 6, 130) does not broadcast to out's shape (4, 6, 130)"),
])
def test_add_refuses_an_operand_view_that_is_not_resident(lhs, rhs, tile, message):
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 2), "add", [tile], [AREAS[1], AREAS[0], AREAS[2]],
            descriptors(OUT, lhs, rhs))
    assert str(info.value) == f"step 0: kernel add on tile {tile}: {message}"


def test_a_tile_of_only_padding_needs_no_operand():
    out = fmt((2, 4), (2, 1), (2, 1), "f32")  # tile 1 holds rows 2..3: only padding
    operand = fmt((2, 4), (1, 1), (1, 1), "f32")  # only on tile 0
    memory = TileMemory(T, 2)
    memory.write(1, AREAS[1], np.full(8, 3.0, np.float32))
    run(memory, "add", [1], [AREAS[1], AREAS[0], AREAS[2]], descriptors(out, operand, operand))
    assert (memory.read(1, AREAS[1], 32).view(np.float32) == 0).all()
    with pytest.raises(ModelError, match="operand 'lhs': tile 1 holds no shard"):
        run(memory, "add", [1], [AREAS[1], AREAS[0], AREAS[2]],
            descriptors(fmt((4, 4), (2, 1), (2, 1), "f32"), fmt((4, 4), (1, 1), (1, 1), "f32"),
                        fmt((4,), (1,), (1,), "f32")))
