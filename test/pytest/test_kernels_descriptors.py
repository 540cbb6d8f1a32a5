"""Format descriptors (device/shard_geometry.py) and the registry's variadic scalars."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from device.kernels import KERNELS, get_kernel
from device.layouts import AMP_BLOCK, FP8_SCALE_RANGE, ORDERS
from device.shard_geometry import (
    DESCRIPTOR_FIXED_WORDS,
    DescriptorError,
    ShardGeometry,
    decode_descriptor,
    decode_descriptors,
)
from ipu_dialects.mid import AxisTilingAttr, TensorFormatAttr
from planning.shard_geometry import geometry


@st.composite
def descriptor_geometries(draw):
    rank = draw(st.integers(0, 4))
    order = draw(st.sampled_from(ORDERS)) if rank >= 2 else "row_major"
    precision = draw(st.sampled_from(("f32", "f16", "f8f143")))
    shape = [draw(st.integers(0, 300)) for _ in range(rank)]
    blocks = [draw(st.integers(1, 9)) for _ in range(rank)]
    partitions = [draw(st.integers(1, 4)) for _ in range(rank)]
    if order != "row_major":  # AMP orders need 64-multiples on the last (two) axes
        columns, rows = (-2, -1) if order.endswith("_t") else (-1, -2)  # stored transposed
        blocks[columns] = AMP_BLOCK
        if order.startswith("amp_right"):
            blocks[rows] = AMP_BLOCK
    pads = tuple(draw(st.booleans()) for _ in range(rank))
    replication = draw(st.integers(1, 3))
    tiles = replication * math.prod(partitions)
    group = tiles + draw(st.integers(0, 5))
    scale = draw(st.sampled_from(FP8_SCALE_RANGE)) if precision == "f8f143" else 0
    return ShardGeometry(tuple(shape), tuple(blocks), tuple(partitions), pads, replication,
                         group, precision, order, scale)


@settings(max_examples=200, deadline=None)
@given(descriptor_geometries(), st.integers(0, 5))
def test_descriptor_round_trip(g: ShardGeometry, offset: int):
    words = g.encode()
    assert len(words) == 4 * g.rank + DESCRIPTOR_FIXED_WORDS
    padded = (7,) * offset + words + (9,)
    decoded, position = decode_descriptor(padded, offset)
    assert decoded == g and position == offset + len(words)


@settings(max_examples=60, deadline=None)
@given(descriptor_geometries())
def test_shard_boxes_tile_the_padded_tensor_once_per_replica(g: ShardGeometry):
    boxes = [g.shard_box(t) for t in range(g.tiles_used)]
    per_replica = g.partition_count
    for tile, (starts, stops) in enumerate(boxes):
        assert tuple(b - a for a, b in zip(starts, stops)) == g.chunk
        assert all(0 <= a and b <= p for a, b, p in zip(starts, stops, g.padded_shape))
        assert (starts, stops) == boxes[tile % per_replica]  # replicas hold the same box
    if 0 not in g.chunk:  # an empty tensor has empty (equal) boxes
        assert len(set(boxes[:per_replica])) == per_replica


def test_geometry_of_a_mid_format_carries_order_and_scale():
    fmt = TensorFormatAttr("f8f143", "amp_left", [AxisTilingAttr(16, 2, "pad"),
                                                  AxisTilingAttr(64, 1, "pad")], 2, 4, scale=-3)
    g = geometry((40, 100), fmt)
    assert (g.order, g.scale, g.precision, g.replication, g.group) == (
        "amp_left", -3, "f8f143", 2, 4)
    assert decode_descriptor(g.encode())[0] == g
    assert g.encode() == (2, 40, 100, 16, 64, 2, 1, 1, 1, 2, 4, 2, 1, -3)


GOOD = ShardGeometry((4, 64), (1, 64), (2, 1), (True, True), 1, 2, "f16", "amp_left")


def words_with(**changes) -> list[int]:
    words = list(GOOD.encode())  # rank 2: [rank, shape*2, blocks*2, parts*2, pads*2, rep,
    index = {"rank": 0, "shape0": 1, "block0": 3, "pad0": 7, "replication": 9, "group": 10,
             "precision": 11, "order": 12, "scale": 13}  # group, precision, order, scale]
    for name, value in changes.items():
        words[index[name]] = value
    return words


@pytest.mark.parametrize("words,message", [
    ([], "descriptor expected at word 0, but there are only 0 words"),
    (words_with(rank=3), "descriptor at word 0 has rank 3 and needs 18 words; 14 remain"),
    (words_with(rank=-1), "descriptor at word 0 has rank -1 and needs 6 words; 14 remain"),
    (words_with(shape0=-4), "descriptor at word 0: shape (-4, 64) has a negative extent"),
    (words_with(pad0=2), "descriptor at word 0: pad flags (2, 1) must be 0 or 1"),
    (words_with(block0=0),
     "descriptor at word 0: blocks (0, 64) and partitions (2, 1) must be >= 1"),
    (words_with(replication=0), "descriptor at word 0: replication 0 must be >= 1"),
    (words_with(group=1),
     "descriptor at word 0: group 1 is smaller than the 2 tiles the format uses"),
    (words_with(precision=4),
     "descriptor at word 0: precision code 4 is unknown (codes 0..3: f32, f16, f8f143, i32)"),
    (words_with(order=6), "descriptor at word 0: order code 6 is unknown (codes 0..5: "
                          "row_major, amp_left, amp_right, amp_output, amp_left_t, amp_right_t)"),
    (words_with(order=5), "descriptor at word 0: order amp_right_t needs a shard of at least two "
                          "axes padded to 64-blocks, got shard shape (2, 64)"),
    (words_with(precision=0, scale=2),
     "descriptor at word 0: only f8f143 and f16 have a scale, f32 has 2"),
    (words_with(scale=40), "descriptor at word 0: f16 scale 40 is outside -31..31"),
    (words_with(precision=2, scale=40),
     "descriptor at word 0: f8f143 scale 40 is outside -31..31"),
    (words_with(order=2), "descriptor at word 0: order amp_right needs a shard of at least two "
                          "axes padded to 64-blocks, got shard shape (2, 64)"),
])
def test_bad_descriptors_are_named_errors(words, message):
    with pytest.raises(DescriptorError) as info:
        decode_descriptor(words)
    assert str(info.value) == message


def test_descriptor_lists_must_be_used_up():
    words = GOOD.encode() * 2
    assert decode_descriptors(words, 2) == [GOOD, GOOD]
    with pytest.raises(DescriptorError) as info:
        decode_descriptors((*words, 5), 2)
    assert str(info.value) == "1 word(s) left after the 2 descriptor(s)"


def test_shard_box_outside_the_format_is_an_error():
    assert GOOD.shard_box(1) == ((2, 0), (4, 64))
    with pytest.raises(DescriptorError) as info:
        GOOD.shard_box(2)
    assert str(info.value) == "tile 2 holds no shard of this format (its shards are on tiles 0..1)"


def test_unencodable_geometry_is_an_error():
    odd = ShardGeometry((4,), (1,), (1,), (False,), precision="f64")
    with pytest.raises(DescriptorError) as info:
        odd.encode()
    assert str(info.value) == "cannot encode precision 'f64' / order 'row_major'"


# ---- the registry's variadic scalars ----------------------------------------------------------
def test_variadic_kernels_take_named_scalars_then_any_number_of_words():
    attention = get_kernel("attention")
    assert attention.variadic and attention.named_scalars == ("causal", "scale_bits")
    assert not attention.accepts_scalars(1) and attention.accepts_scalars(2)
    assert attention.accepts_scalars(60)
    gemm = get_kernel("amp_gemm_f16_init")
    assert not gemm.variadic and gemm.accepts_scalars(1) and not gemm.accepts_scalars(2)
    assert attention.split_scalars([1, 7, 3, 4]) == ({"causal": 1, "scale_bits": 7}, (3, 4))


def test_descriptor_footprints_are_the_shard_bytes_in_pointer_order():
    src = ShardGeometry((10, 100), (1, 64), (2, 1), (True, True), 1, 2, "f32", "amp_left")
    out = ShardGeometry((10, 100), (5, 1), (2, 1), (True, True), 1, 2, "f8f143", "row_major",
                        scale=-2)
    footprint = get_kernel("convert_shard").footprint_of([*out.encode(), *src.encode()])
    assert footprint == {"out": 5 * 100, "src": 5 * 128 * 4}
    gather = get_kernel("gather_shard").footprint_of([3, *out.encode(), *src.encode()])
    assert gather == {"out": 5 * 100, "staged": 5 * 128 * 4}
    with pytest.raises(DescriptorError, match="1 word\\(s\\) left after the 2 descriptor"):
        get_kernel("convert_shard").footprint_of([*out.encode(), *src.encode(), 0])


def test_fp8_gemm_footprint_has_an_f16_output_panel():
    footprint = get_kernel("amp_gemm_f8_init").footprint_of([32, -3, 2, 4])
    assert footprint == {"out": 32 * 64 * 2, "left": 32 * 64, "right": 64 * 64}
    with pytest.raises(ValueError) as info:
        get_kernel("amp_gemm_f8_init").footprint_of([-1, 0, 0, 0])
    assert str(info.value) == "scalar 'rows' = -1 must be >= 0"


def test_every_descriptor_kernel_names_one_descriptor_per_pointer():
    for abi in KERNELS.values():
        if abi.variadic:
            assert abi.scalars[-1] == "descriptor...", abi.symbol


# ---- cycle functions: pure, one per kernel ------------------------------------------------------
def test_every_kernel_has_a_cycle_function_of_its_scalars_tile_and_target():
    from device.index_views import IndexView, row_major_strides
    from device.kernels import kernel_cycles
    from device.target import IPU21

    g = ShardGeometry((2, 4, 64, 64), (1, 1, 64, 64), (1, 2, 1, 1), (True,) * 4, 1, 2, "f16")
    words = {"amp_gemm_f8_init": [64, 0, 0, 0], "amp_gemm_f8_accum": [64, 0, 0, 0],
             "attention": [1, 0x3F800000], "gather_shard": [1], "gather_view": [1],
             "layer_norm": [0x3727C5AC],
             # round 0 of 2 groups of 2 tiles: tile 1 takes from tile 0's shard
             "gather_round": [0, 0, 1, 2, 2, 0, 2, 0, 4, 1, 1],
             "gather_view_round": [0, 0, 1, 2, 2, 0, 2, 0, 4, 1, 1]}
    # key block 0 of 64 keys against 64 rows of partition 1 (of 2): every row group active
    # (one slice, no key split)
    words |= {f"attention_block_{p}_{mode}": [0, 64, 0, 0x3F800000, 128, 64, 64, 2, 0, 1, 1]
              for p in ("f16", "f32") for mode in ("init", "accum")}
    # the key-masked variants: the same, heads 1, one mask row per slice
    words |= {f"attention_block_{p}_{mode}_masked": [0, 64, 0, 0x3F800000, 128, 64, 64, 2, 0,
                                                      1, 1, 1, 2]
              for p in ("f16", "f32") for mode in ("init", "accum")}
    identity = IndexView((0,) * 4, g.shape, row_major_strides(g.shape), 0).encode()
    for symbol, abi in KERNELS.items():
        named = words.get(symbol, [64] * len(abi.named_scalars))
        scalars = named + ([w for _ in abi.pointers for w in g.encode()] if abi.variadic else [])
        if symbol in ("view_shard", "gather_view", "gather_view_round"):  # two descriptors, then
            # the index view
            scalars = [*named, *g.encode(), *g.encode(), *identity]
        assert kernel_cycles(symbol, scalars, 1, IPU21) > IPU21.kernel_call_cycles, symbol


def test_cycle_figures_follow_the_target_rates():
    from device.model.cycles import attention_cycles, convert_shard_cycles, gather_shard_cycles
    from device.target import IPU21 as T

    f32 = ShardGeometry((8, 64), (1, 64), (2, 1), (True, True), 1, 2, "f32")
    f8 = ShardGeometry((8, 64), (1, 64), (2, 1), (True, True), 1, 2, "f8f143")
    assert convert_shard_cycles(f8, f32, 0, T) == T.kernel_call_cycles + 4 * 64 * 4 // 8
    rows = ShardGeometry((8, 64), (1, 64), (1, 1), (True, True), 1, 1, "f32")
    # source tile 1 holds rows 4..7; out on tile 0 holds all rows: 4 * 64 elements move
    assert gather_shard_cycles(rows, f32, 1, 0, T) == T.kernel_call_cycles + 4 * 64 * 4 // 8
    # nothing in common: only the call
    assert gather_shard_cycles(f32, f32, 1, 0, T) == T.kernel_call_cycles
    q = ShardGeometry((1, 2, 64, 64), (1, 1, 1, 64), (1, 2, 1, 1), (True,) * 4, 1, 2, "f16")
    scores = 64 * 64
    assert attention_cycles(q, q, q, q, 1, T) == (
        T.amp_cycles(scores * 64, "f16") + T.amp_cycles(scores * 64, "f32")
        + scores * T.exp_cycles_per_element + 3 * scores // T.vector_f32_lanes
        + T.vector_cycles(64 * 64 * 2))
