"""One take per round (`GatherRounds.takes_once`, `gather_round`, `gather_view_round`): in a
round of a concurrent gather each result tile finds, from its own tile id, the one shard it
received, instead of one take step per group on every result tile.

The compile-time side is checked against the shards' receivers (`shard_receivers`: which
result tile holds elements of which input shard), over the BERT-base batch-8 gathers and
random partitionings; the device side by running gathers on the model (every element moved
bit-exactly), by counting the steps, and by a corrupted round scalar that must give wrong
numbers."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_gather_concurrent import (
    CASES,
    assert_moved_exactly,
    bert_b8,
    case,
    fmt,
    random_input,
    run,
    scheduled,
)

from device.index_views import IndexView, row_major_strides
from device.kernels import get_kernel
from device.model.kernel_shards import ROUND_SCALARS, round_sources, round_takers
from device.package import KernelStep
from passes.operators.gather import (
    GatherRounds,
    plan_rounds,
    read_ranges,
    shard_receivers,
    view_receivers,
)
from planning.shard_geometry import ShardGeometry
from tools.package_writer import build_package


def round_scalars(plan: GatherRounds, r: int) -> dict[str, int]:
    """The named scalars of round r's `gather_round` call, as the lowering writes them."""
    first_source, first_dest = (m.eval([r], [])[0] for m in plan.round_maps())
    return {"first_source": first_source, "first_dest": first_dest,
            **dict(zip(ROUND_SCALARS[2:], plan.round_steps(), strict=True))}


def assert_every_receiver_finds_its_shard(a: ShardGeometry, b: ShardGeometry,
                                          view: IndexView | None = None) -> GatherRounds:
    """Every result tile that holds elements of a shard sent in round r (with a layout op's
    `view`, that reads them through it) takes from that shard's tile in round r, but the
    shard's own tile, which skips the round's take (it takes its own shard from its input
    after the rounds: a copier)."""
    plan = plan_rounds(a, b, view)
    assert plan is not None
    if view is None:
        need = shard_receivers(a, b)
    else:
        ranges = read_ranges(view, a, b)
        assert ranges is not None
        need = view_receivers(a, b, ranges)
    for r, shards in enumerate(plan.sent_shards()):
        scalars = round_scalars(plan, r)
        for shard in shards.tolist():
            if shard >= need.shape[0]:
                continue
            receivers = np.flatnonzero(need[shard]) + b.first_tile
            if receivers.size:
                found = round_sources(scalars, receivers)
                assert (found == a.first_tile + shard).all(), (r, shard, receivers, found)
                takes = round_takers(scalars, receivers, found)
                assert (takes == (receivers != a.first_tile + shard)).all()
                own = receivers[~takes] - plan.tile_base
                assert set(own.tolist()) <= set(plan.copiers)
    return plan


@pytest.mark.parametrize("source, result", [
    (((8, 384, 768), (8, 12, 12)), ((8, 384, 768), (1, 384, 1))),
    (((8, 384, 3072), (8, 3, 48)), ((8, 384, 3072), (1, 1, 1472))),
    (((8, 384, 3072), (1, 1, 1472)), ((8, 384, 3072), (8, 12, 12))),
])
def test_the_bert_batch_8_gathers_take_once_per_round(source, result):
    plan = assert_every_receiver_finds_its_shard(bert_b8(*source, 1472), bert_b8(*result, 1472))
    assert plan.takes_once


def geometry(shape, partitions, first_tile: int) -> ShardGeometry:
    return ShardGeometry(shape, (1,) * len(shape), partitions, (True,) * len(shape),
                         group=max(1, int(np.prod(partitions))), precision="f16",
                         first_tile=first_tile)


@settings(max_examples=150, deadline=None)
@given(st.tuples(st.integers(1, 48), st.integers(1, 48)),
       st.tuples(st.integers(1, 8), st.integers(1, 8)),
       st.tuples(st.integers(1, 8), st.integers(1, 8)),
       st.integers(0, 5), st.integers(0, 5))
def test_random_partitionings_find_their_shards(shape, from_parts, to_parts, first_a, first_b):
    """Whenever a split takes once per round, each receiver's formula finds its shard; where
    it cannot (the groups' windows interleave), the lowering keeps one take per group."""
    a, b = geometry(shape, from_parts, first_a), geometry(shape, to_parts, first_b)
    plan = plan_rounds(a, b)
    if plan is not None and plan.takes_once:
        assert_every_receiver_finds_its_shard(a, b)


@settings(max_examples=150, deadline=None)
@given(st.permutations(range(3)), st.tuples(*[st.integers(1, 4)] * 3),
       st.tuples(*[st.integers(1, 4)] * 3), st.tuples(*[st.integers(1, 4)] * 3),
       st.integers(0, 3), st.integers(0, 3))
def test_random_transposes_find_their_shards(permutation, parts, more, out_parts, first_a,
                                             first_b):
    """A transpose's gather through its view: whenever its split takes once per round (the
    head split's groups of two digits around the round's among them), each receiver's
    formula finds the shard it was sent."""
    shape = tuple(p * m for p, m in zip(parts, more, strict=True))
    out_shape = tuple(shape[p] for p in permutation)
    strides = row_major_strides(shape)
    view = IndexView((0, 0, 0), out_shape, tuple(strides[p] for p in permutation), 0)
    a = geometry(shape, parts, first_a)
    b = geometry(out_shape, tuple(min(p, e) for p, e in zip(out_parts, out_shape, strict=True)),
                 first_b)
    plan = plan_rounds(a, b, view)
    if plan is not None and plan.takes_once:
        assert_every_receiver_finds_its_shard(a, b, view)


def test_a_head_split_transpose_finds_its_shards_in_split_groups():
    """[b, t, h, d] cut (8, 12, 12, 1) -> [b, h, t, d] cut (8, 12, 12, 1), BERT-base batch 8's
    Q, K and V: 12 rounds (the row blocks) of 96 groups (batch and head) instead of 96 of 12."""
    shape, parts = (8, 384, 12, 64), (8, 12, 12, 1)
    strides = row_major_strides(shape)
    permutation = (0, 2, 1, 3)
    out_shape = tuple(shape[p] for p in permutation)
    view = IndexView((0,) * 4, out_shape, tuple(strides[p] for p in permutation), 0)
    plan = assert_every_receiver_finds_its_shard(
        geometry(shape, parts, 0), geometry(out_shape, parts, 0), view)
    assert (plan.rounds, plan.groups, plan.group_inner, plan.takes_once) == (12, 96, 12, True)


def kernel_symbols(package) -> list[str]:
    return [s.symbol for s in package.executed() if isinstance(s, KernelStep)]


def test_the_64_tile_activation_gather_takes_17_times_not_64():
    """rows -> amp_left on 64 tiles: 16 rounds of 4 groups, one take per round, and the two
    copiers (tiles 0 and 1 hold rows of their own result blocks) take their own shards from
    their input in one more call: no gather_shard and no copy_words step."""
    package = build_package(scheduled(CASES["rows_to_amp_left"](64)), with_assembly=False)
    symbols = kernel_symbols(package)
    assert symbols.count("gather_round") == 17
    assert "gather_shard" not in symbols and "copy_words" not in symbols
    own = [s for s in package.executed() if isinstance(s, KernelStep)
           and s.symbol == "gather_round"][-1]
    assert np.asarray(own.tiles).reshape(-1).tolist() == [0, 1]
    assert_moved_exactly(package)


@pytest.mark.parametrize("name, tiles", [("batched_blocks_to_rows", 64),
                                         ("thin_columns_to_blocks", 16),
                                         ("amp_output_to_rows", 16),
                                         ("columns_to_amp_left", 64)])
def test_round_takes_move_every_element(name, tiles):
    package = build_package(scheduled(CASES[name](tiles)), with_assembly=False)
    assert "gather_round" in kernel_symbols(package)
    assert_moved_exactly(package, seed=tiles)


def test_a_round_take_with_the_wrong_first_destination_gives_wrong_numbers():
    """Moving round 0's window by one tile makes a tile take from its neighbour group's
    shard: the model must then read other elements (its source tile is per tile, not one
    for the step)."""
    package = build_package(scheduled(CASES["rows_to_amp_left"](64)), with_assembly=False)
    _, x = random_input(package, 0)
    index = next(i for i, s in enumerate(package.steps)
                 if isinstance(s, KernelStep) and s.symbol == "gather_round")
    step = package.steps[index]
    named, _ = get_kernel("gather_round").split_scalars(step.scalars)
    position = list(named).index("first_dest")
    corrupted = copy.deepcopy(package)
    scalars = list(step.scalars)
    scalars[position] += 1
    corrupted.steps[index].scalars = tuple(scalars)
    _, got = run(corrupted, x)
    assert not np.array_equal(np.asarray(got, np.float64), np.asarray(x, np.float64))
    _, good = run(package, x)
    np.testing.assert_array_equal(good, x)


def at_tile(encoding: str, first: int) -> str:
    return encoding[:-1] + f", first_tile = {first}>"


@pytest.mark.parametrize("first", [0, 5])
def test_a_gather_between_formats_that_start_on_one_tile_past_0(first):
    """Both formats from tile `first`: the plan numbers tiles from there (it used to number
    them from tile 0 when the two first tiles were equal, and so sent from the wrong tiles)."""
    text = case((64, 256), "f16",
                at_tile(fmt("f16", "row_major", "1 x 32 pad, 1 x 1 pad", 64), first),
                at_tile(fmt("f16", "amp_left", "16 x 4 pad, 64 x 2 pad", 64), first), 64)
    package = build_package(scheduled(text), with_assembly=False)
    assert "gather_round" in kernel_symbols(package)
    assert_moved_exactly(package)


def replicas_apart(tiles: int = 16) -> str:
    """4 row blocks into 6 held twice (replicas 6 tiles apart, as a K-split GEMM's weight is
    fetched from its spread store): one round of 4 groups, BASE {0, 6}."""
    return case((8, 12), "f32", fmt("f32", "row_major", "1 x 4 pad, 1 x 1 pad", tiles),
                fmt("f32", "row_major", "1 x 6 pad, 1 x 1 pad", tiles, replication=2), tiles)


def test_replicas_a_replica_apart_take_once_per_round():
    """A tile's group is its distance from the window's first modulo group_span 6, not modulo
    groups * dest_step 4 (which puts tile 6, replica 1's first, in group 2), and tiles 4 and 5,
    past the last window, take nothing: every element arrives, on both replicas, with one
    take per round."""
    a = ShardGeometry((8, 12), (1, 1), (4, 1), (True, True), 1, 16, "f32")
    b = ShardGeometry((8, 12), (1, 1), (6, 1), (True, True), 2, 16, "f32")
    plan = assert_every_receiver_finds_its_shard(a, b)
    assert (plan.groups, plan.shift[3], plan.base, plan.decoders) == (4, 1, (0, 6), (1, 6, 1, 1))
    package = build_package(scheduled(replicas_apart()), with_assembly=False)
    symbols = kernel_symbols(package)
    assert "gather_round" in symbols and "gather_shard" not in symbols
    assert_moved_exactly(package)


def test_a_round_take_with_groups_times_dest_step_as_its_span_gives_wrong_numbers():
    """The span is what places replica 1's tiles in their groups: with the old modulus
    (groups * dest_step) the model must read other elements there."""
    package = build_package(scheduled(replicas_apart()), with_assembly=False)
    _, x = random_input(package, 0)
    corrupted = copy.deepcopy(package)
    for index, step in enumerate(corrupted.steps):
        if isinstance(step, KernelStep) and step.symbol == "gather_round":
            named, _ = get_kernel("gather_round").split_scalars(step.scalars)
            if named["group_span"] == 6:
                scalars = list(step.scalars)
                scalars[list(named).index("group_span")] = named["groups"] * named["dest_step"]
                corrupted.steps[index].scalars = tuple(scalars)
    _, got = run(corrupted, x)
    assert not np.array_equal(np.asarray(got, np.float64), np.asarray(x, np.float64))


def test_a_group_span_shorter_than_the_groups_windows_is_refused():
    """Windows of dest_step tiles for each of the groups must fit in one span, or two groups
    would share a tile: the model refuses such scalars instead of taking from either."""
    scalars = {"first_source": 0, "first_dest": 0, "source_step": 1, "dest_step": 2,
               "groups": 3, "takes_own": 0, "group_inner": 3, "outer_step": 0, "group_span": 5,
               "outer_dest_step": 1, "outer_span": 1}
    with pytest.raises(ValueError, match=r"group_span 5 is less than group_inner \* dest_step "
                                         r"\(3 \* 2\) .*: two groups' windows would overlap"):
        round_sources(scalars, np.arange(6))
    split = {**scalars, "groups": 6, "group_inner": 3, "group_span": 6, "outer_dest_step": 6,
             "outer_span": 10}
    with pytest.raises(ValueError, match=r"outer_span 10 less than groups / group_inner \* "
                                         r"outer_dest_step \(2 \* 6\)"):
        round_sources(split, np.arange(12))
    # the split group's digits: tile 6 i + 2 j + (0 or 1) is group 3 i + j
    assert round_sources({**split, "outer_span": 12, "outer_step": 5},
                         np.arange(12)).tolist() == [0, 0, 1, 1, 2, 2, 5, 5, 6, 6, 7, 7]
    assert round_sources({**scalars, "group_span": 8}, np.arange(8)).tolist() == [
        0, 0, 1, 1, 2, 2, 0, 0]
    assert round_takers({**scalars, "group_span": 8}, np.arange(8),
                        np.zeros(8, np.int64)).tolist() == [False, True, True, True, True,
                                                            True, False, False]
