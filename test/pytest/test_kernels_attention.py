"""The attention kernel on the device model (device/model/kernels_attention.py)."""

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
    run,
)

from device.kernels import f32_bits
from device.model import ModelError
from device.model.memory import TileMemory

RNG = np.random.default_rng(808)


def scale_bits(scale: float) -> int:
    bits = f32_bits(scale)
    assert bits == int(np.array([scale], np.float32).view(np.uint32)[0])
    return bits


def reference(q, k, v, causal: bool, scale: float) -> np.ndarray:
    """float64, one (query row, head) at a time with explicit loops over keys."""
    out = np.zeros(q.shape)
    for index in np.ndindex(*q.shape[:-2]):
        for i in range(q.shape[-2]):
            keys = range(i + 1) if causal else range(k.shape[-2])
            logits = np.array([scale * float(np.dot(q[index][i], k[index][j])) for j in keys])
            weights = np.exp(logits - logits.max())
            weights /= weights.sum()
            out[index][i] = sum(w * v[index][j] for w, j in zip(weights, keys))
    return out


# [..., heads, seq, head_dim] formats: out/query share a tiling; key/value hold whole heads
CASES = [
    # heads split over tiles, query rows split in two (the causal mask needs global rows),
    # head_dim padded 16 -> 64 by the AMP order; key rows padded 40 -> 64 in amp_right
    ("f16", (2, 3, 40, 16),
     dict(blocks=(1, 1, 16, 64), partitions=(1, 3, 2, 1), order="amp_left"),
     dict(blocks=(1, 1, 64, 64), partitions=(1, 1, 1, 1), order="amp_right", replication=6)),
    ("f32", (2, 3, 40, 16),
     dict(blocks=(1, 1, 1, 1), partitions=(2, 3, 1, 1)),
     dict(blocks=(1, 1, 1, 1), partitions=(2, 3, 1, 1))),
    ("f8f143", (1, 2, 24, 8),
     dict(blocks=(1, 1, 5, 1), partitions=(1, 2, 3, 1), scale=-4),
     dict(blocks=(1, 1, 1, 1), partitions=(1, 1, 1, 1), replication=6, scale=-2)),
]


@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize("precision,shape,query_spec,key_spec", CASES)
def test_attention_matches_a_float64_reference(precision, shape, query_spec, key_spec, causal):
    query = fmt(shape, precision=precision, **query_spec)
    key = fmt(shape, precision=precision, **key_spec)
    out = fmt(shape, query.blocks, query.partitions, "f32" if precision == "f8f143" else
              precision, query.order)
    q, k, v = (random_values(RNG, shape, precision, g.scale, spread=s)
               for g, s in ((query, 0.05), (key, 0.2), (key, 0.2)))
    if precision != "f8f143":
        q = random_values(RNG, shape, precision, spread=1.0)
    scale = 0.3 if causal else 1 / math.sqrt(shape[-1])
    memory = TileMemory(T, max(query.tiles_used, key.tiles_used))
    place(memory, query, q, AREAS[0])
    place(memory, key, k, AREAS[2])
    place(memory, key, v, AREAS[3])
    run(memory, "attention", range(query.tiles_used), [AREAS[1], AREAS[0], AREAS[2], AREAS[3]],
        [causal, scale_bits(scale), *descriptors(out, query, key, key)])
    result = collect(memory, out, AREAS[1])
    expected = reference(q, k, v, bool(causal), float(np.float32(scale)))
    # FP32 scores/softmax/accumulation vs float64, then one rounding to the output
    tolerance = {"f16": 2e-3, "f32": 2e-6, "f8f143": 2e-6}[precision]
    np.testing.assert_allclose(logical(out, result), expected, rtol=tolerance, atol=tolerance)
    assert padding_is_zero(out, result)


def test_fp8_output_rounds_once_with_its_scale():
    shape = (1, 1, 4, 64)
    g = fmt(shape, (1, 1, 1, 64), (1, 1, 1, 1), "f16")
    out = fmt(shape, (1, 1, 1, 64), (1, 1, 1, 1), "f8f143", scale=-3)
    q = np.zeros(shape)
    v = np.full(shape, 0.5)
    v[..., 1, :] = 1.0
    memory = TileMemory(T, 1)
    for area, values in ((AREAS[0], q), (AREAS[2], q), (AREAS[3], v)):
        place(memory, g, values, area)
    run(memory, "attention", [0], [AREAS[1], AREAS[0], AREAS[2], AREAS[3]],
        [1, scale_bits(1.0), *descriptors(out, g, g, g)])
    result = logical(out, collect(memory, out, AREAS[1]))
    # row 0 sees key 0 (0.5); row 1 averages 0.5 and 1.0; row 2: 2/3 -> FP8 step 1/16 at 2**-3
    np.testing.assert_array_equal(result[0, 0, :3, 0], [0.5, 0.75, 0.6875])


ONE = 0x3F800000  # the f32 bit pattern of 1.0
QUERY = fmt((1, 2, 8, 4), (1, 1, 1, 1), (1, 2, 2, 1), "f32")
WHOLE = fmt((1, 2, 8, 4), (1, 1, 1, 1), (1, 1, 1, 1), "f32", replication=4)


@pytest.mark.parametrize("out,key,scalars,message", [
    (QUERY, fmt((1, 2, 8, 4), (1, 1, 1, 1), (1, 1, 2, 1), "f32", replication=2), [0, ONE],
     "operand 'key': the heads [0:1, 0:1, 0:8, 0:4] this tile's query rows need are not "
     "resident in its shard [0:1, 0:2, 0:4, 0:4] on this tile"),
    (QUERY, WHOLE, [2, ONE], "causal = 2 must be 0 or 1"),
    (QUERY, WHOLE, [0, 0x7FC00000],
     "scale_bits 0x7fc00000 is not the bit pattern of a finite positive f32 scale"),
    (QUERY, fmt((1, 2, 6, 4), (1, 1, 1, 1), (1, 1, 1, 1), "f32", replication=4), [1, ONE],
     "causal attention needs equal query and key lengths, got 8 and 6"),
    (QUERY, fmt((1, 2, 8, 5), (1, 1, 1, 1), (1, 1, 1, 1), "f32", replication=4), [0, ONE],
     "key (1, 2, 8, 5) and value (1, 2, 8, 4) must be [..., heads, key_seq, head_dim] with "
     "query (1, 2, 8, 4)'s batch, heads and head_dim"),
    (fmt((1, 2, 8, 3), (1, 1, 1, 1), (1, 2, 2, 1), "f32"), WHOLE, [0, ONE],
     "out (1, 2, 8, 3) and query (1, 2, 8, 4) must be one shape [..., heads, seq, head_dim]"),
    (fmt((1, 2, 8, 4), (1, 1, 1, 1), (1, 2, 1, 2), "f32"), WHOLE, [0, ONE],
     "out's shard box ((0, 0, 0, 0), (1, 1, 8, 2)) and query's ((0, 0, 0, 0), (1, 1, 4, 4)) "
     "differ on this tile"),
    (fmt((1, 2, 0, 4), (1, 1, 1, 1), (1, 1, 1, 1), "f32"),
     fmt((1, 2, 0, 4), (1, 1, 1, 1), (1, 1, 1, 1), "f32"), [0, ONE],
     "key (1, 2, 0, 4) has no rows to attend to"),
])
def test_attention_errors(out, key, scalars, message):
    query = out if out.shape[-2] == 0 else QUERY
    value = WHOLE if message.startswith("key (1, 2, 8, 5)") else key
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 4), "attention", [0], [AREAS[1], AREAS[0], AREAS[2], AREAS[3]],
            [*scalars, *descriptors(out, query, key, value)])
    assert str(info.value) == f"step 0: kernel attention on tile 0: {message}"


def test_a_query_box_splitting_head_dim_is_refused():
    split = fmt((1, 2, 8, 4), (1, 1, 1, 1), (1, 2, 1, 2), "f32")
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 4), "attention", [0], [AREAS[1], AREAS[0], AREAS[2], AREAS[3]],
            [0, scale_bits(1.0), *descriptors(split, split, WHOLE, WHOLE)])
    assert str(info.value) == (
        "step 0: kernel attention on tile 0: this tile's query box ((0, 0, 0, 0), (1, 1, 8, 2)) "
        "splits head_dim (4); attention needs whole query rows")


def test_scale_bits_of_a_scale_past_f32_is_inf_and_refused():
    assert f32_bits(1e300) == 0x7F800000
    with pytest.raises(ModelError, match="scale_bits 0x7f800000 is not the bit pattern"):
        run(TileMemory(T, 4), "attention", [0], [AREAS[1], AREAS[0], AREAS[2], AREAS[3]],
            [0, f32_bits(1e300), *descriptors(QUERY, QUERY, WHOLE, WHOLE)])
