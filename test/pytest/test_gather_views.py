"""A layout op's gather in concurrent rounds (`passes/operators/gather.py`, `read_ranges`):
a transpose, a stepped slice and a concat input read one source axis per result axis, and a
reshape re-linearizes groups of axes, so the result tiles a source shard feeds are a box
intersection through the view (for a reshape or a stepped slice, a box bounding what each tile
reads), and shards whose receivers do not meet share an exchange phase.

The receivers are checked against the elements each view reads, one by one; the lowering is
checked on the device model, from its encoded rows, against NumPy's own transpose, slice and
concatenate (a layout op moves elements, it computes nothing)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from e2e_support import scheduled_module
from xdsl.dialects.builtin import ModuleOp

from device.index_views import IndexView, row_major_strides
from device.kernels import get_kernel
from device.model import run_package
from device.model.errors import ModelError
from device.model.host import stored_of_values, values_of_stored
from device.package import ExchangeStep, KernelStep
from ipu_dialects.tile import ExchangeOp
from passes.operators.gather import read_ranges, reshape_groups, separable_axes, view_receivers
from planning.shard_geometry import ShardGeometry
from tools.package_writer import build_package

PASSES = ("mid-to-tile", "place-memory", "schedule-exchange")


# ---- the receivers, element by element ---------------------------------------------------
def geometry(shape, partitions) -> ShardGeometry:
    rank = len(shape)
    return ShardGeometry(tuple(shape), (1,) * rank, tuple(partitions), (True,) * rank, 1,
                         math.prod(partitions))


def tile_of(geom: ShardGeometry, coords: np.ndarray) -> np.ndarray:
    """The partition (= tile, one replica) holding each row of `coords` ([n, rank])."""
    parts = coords // np.asarray(geom.chunk)
    return np.ravel_multi_index(tuple(parts.T), geom.partitions)


def elements_read(a: ShardGeometry, b: ShardGeometry, view: IndexView) -> np.ndarray:
    """[P, T] bool: result tile t reads an element of source shard s, by enumerating every
    result element of the view's window."""
    axes = [np.arange(lo, hi) for lo, hi in zip(view.starts, view.stops, strict=True)]
    result = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(axes))
    linear = view.offset + (result - np.asarray(view.starts)) @ np.asarray(view.strides)
    source = np.stack(np.unravel_index(linear, a.shape), axis=-1)
    need = np.zeros((a.partition_count, b.partition_count), dtype=bool)
    need[tile_of(a, source), tile_of(b, result)] = True
    return need


def transpose_view(src_shape, permutation) -> IndexView:
    strides = row_major_strides(tuple(src_shape))
    out = tuple(src_shape[p] for p in permutation)
    return IndexView((0,) * len(out), out, tuple(strides[p] for p in permutation), 0)


def slice_view(src_shape, starts, steps, out_shape) -> IndexView:
    strides = row_major_strides(tuple(src_shape))
    return IndexView((0,) * len(out_shape), tuple(out_shape),
                     tuple(s * k for s, k in zip(strides, steps, strict=True)),
                     sum(s * a for s, a in zip(strides, starts, strict=True)))


VIEWS = {
    # attention's output, heads x query blocks, into rows: the QKV merge of a transformer
    "transpose_heads": (geometry((12, 64, 8), (12, 4, 1)), geometry((64, 12, 8), (8, 1, 1)),
                        transpose_view((12, 64, 8), (1, 0, 2))),
    "transpose_3d": (geometry((6, 5, 4), (3, 1, 2)), geometry((4, 6, 5), (2, 3, 1)),
                     transpose_view((6, 5, 4), (2, 0, 1))),
    "slice_unit_steps": (geometry((12, 10), (4, 2)), geometry((8, 6), (4, 3)),
                         slice_view((12, 10), (2, 3), (1, 1), (8, 6))),
    # a concat's second input: its window starts at row 4 of the result
    "concat_window": (geometry((4, 6), (2, 3)), geometry((8, 6), (4, 2)),
                      IndexView((4, 0), (8, 6), row_major_strides((4, 6)), 0)),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_receivers_are_the_tiles_that_read_each_shard(name):
    a, b, view = VIEWS[name]
    ranges = read_ranges(view, a, b)
    assert ranges is not None and ranges[1]  # separable, unit steps: exact
    np.testing.assert_array_equal(view_receivers(a, b, ranges), elements_read(a, b, view))


def test_a_stepped_slice_may_count_more_receivers_never_fewer():
    a, b = geometry((12, 10), (4, 2)), geometry((6, 4), (3, 2))
    view = slice_view((12, 10), (1, 0), (2, 3), (6, 4))
    ranges = read_ranges(view, a, b)
    assert ranges is not None and not ranges[1]
    counted, read = view_receivers(a, b, ranges), elements_read(a, b, view)
    assert not (read & ~counted).any()  # every tile that reads a shard receives it


def test_a_reshape_that_merges_axes_is_not_separable():
    # [4, 6] -> [24]: one result axis reads both source axes
    assert separable_axes(IndexView((0,), (24,), (1,), 0), (4, 6)) is None
    # [24] -> [4, 6]: two result axes read one source axis
    assert separable_axes(IndexView((0, 0), (4, 6), (6, 1), 0), (24,)) is None


def reshape_view(out_shape) -> IndexView:
    out = tuple(out_shape)
    return IndexView((0,) * len(out), out, row_major_strides(out), 0)


def test_a_reshape_groups_the_axes_of_equal_extent():
    assert reshape_groups(reshape_view((8, 384, 12, 64)), (8, 384, 768), (8, 384, 12, 64)) == [
        ([0], [0]), ([1], [1]), ([2, 3], [2])]
    assert reshape_groups(reshape_view((6, 1, 4)), (2, 3, 4), (6, 1, 4)) == [
        ([0, 1], [0, 1]), ([2], [2])]
    assert reshape_groups(IndexView((0, 0), (4, 6), (1, 4), 0), (24,), (4, 6)) is None


RESHAPES = {
    # the heads' split: rows cut, the model axis into heads
    "split_heads": (geometry((16, 24), (4, 1)), geometry((16, 4, 6), (8, 2, 1))),
    # the heads' merge: rows cut into blocks, heads cut, into rows
    "merge_heads": (geometry((16, 4, 6), (4, 4, 1)), geometry((16, 24), (8, 3))),
    "flatten": (geometry((6, 10), (3, 2)), geometry((60,), (7,))),
    "unflatten": (geometry((60,), (9,)), geometry((3, 4, 5), (3, 2, 1))),
    "size_one_axes": (geometry((2, 1, 12), (2, 1, 3)), geometry((1, 24, 1), (1, 5, 1))),
}


@pytest.mark.parametrize("name", sorted(RESHAPES))
def test_reshape_receivers_cover_every_tile_that_reads_a_shard(name):
    a, b = RESHAPES[name]
    view = reshape_view(b.shape)
    ranges = read_ranges(view, a, b)
    assert ranges is not None and not ranges[1]
    counted, read = view_receivers(a, b, ranges), elements_read(a, b, view)
    assert not (read & ~counted).any()
    if name in ("split_heads", "merge_heads"):  # every tile's box is one source box
        np.testing.assert_array_equal(counted, read)


# ---- on the device model -------------------------------------------------------------------
CONFIG = ('#mid.config<target = "ipu21", tiles = {tiles}, indivisible = pad, inputs = consumer, '
          'catalog = [], scheduling = in_order, profiling = off>')


def fmt(partitions, tiles) -> str:
    tiling = ", ".join(f"1 x {p} pad" for p in partitions)
    return f"#mid.format<f32, row_major, [{tiling}], replication = 1, group = {tiles}, standard>"


def tensor(shape, partitions, tiles) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32, {fmt(partitions, tiles)}>"


def plan(names, formats) -> str:
    operands = ", ".join(f"#mid.operand<{n} : {'output' if n == 'out' else 'input'}, {f}, "
                         "align = 8, tail = 0>" for n, f in zip(names, formats, strict=True))
    return (f'#mid.plan<"gather", #mid.dispatch<pointwise, init = @gather_view>, accumulate = '
            f"f32, amp = none, operands = [{operands}], distinct = [], alias = none>")


def module_text(tiles, inputs, op, out) -> str:
    """One layout op `op` (with `{plan}` and the result type to fill) of function arguments
    `inputs` ((shape, partitions) each), its result `out` returned."""
    args = ", ".join(f"%x{i}: {tensor(s, p, tiles)}" for i, (s, p) in enumerate(inputs))
    result = tensor(*out, tiles)
    names = ["src"] if len(inputs) == 1 else [f"input{i}" for i in range(len(inputs))]
    layout = plan([*names, "out"], [fmt(p, tiles) for _, p in [*inputs, out]])
    operand_types = ", ".join(tensor(s, p, tiles) for s, p in inputs)
    types = (f"{operand_types} -> {result}" if len(inputs) == 1
             else f"({operand_types}) -> {result}")
    return (f"builtin.module attributes {{ipu.config = {CONFIG.format(tiles=tiles)}}} {{\n"
            f"  func.func @layout({args}) -> {result} {{\n"
            f"    %y = {op.format(plan=layout)} : {types}\n"
            f"    func.return %y : {result}\n  }}\n}}\n")


CASES = {
    "transpose_heads": (16, [((4, 8, 6), (4, 4, 1))], "mid.transpose %x0 permutation [1, 0, 2] "
                        "plan {plan}", ((8, 4, 6), (4, 1, 1)),
                        lambda x: np.transpose(x[0], (1, 0, 2))),
    "transpose_tiles_permuted": (16, [((4, 8, 6), (4, 4, 1))], "mid.transpose %x0 permutation "
                                 "[1, 0, 2] plan {plan}", ((8, 4, 6), (4, 4, 1)),
                                 lambda x: np.transpose(x[0], (1, 0, 2))),
    # a head split's transpose [b, t, h, d] -> [b, h, t, d]: shard (b, r, h) goes whole to
    # tile (b, h, r), and the batches and heads (two digits around the row block's) go at once
    "transpose_batch_heads": (32, [((4, 8, 4, 2), (4, 2, 4, 1))], "mid.transpose %x0 "
                              "permutation [0, 2, 1, 3] plan {plan}", ((4, 4, 8, 2), (4, 4, 2, 1)),
                              lambda x: np.transpose(x[0], (0, 2, 1, 3))),
    # BERT's Q/K/V head transposes [t, h, d] -> [h, t, d]: shard 4 t + h to tile 8 h + t,
    # each digit of the group with its own step in the destination tiles, all in one round;
    # into 16-row blocks (4 source shards each), shard 16 q + 4 r + h to tile 2 h + q in
    # 4 rounds of 8
    "transpose_heads_one_round": (32, [((32, 4, 2), (8, 4, 1))], "mid.transpose %x0 "
                                  "permutation [1, 0, 2] plan {plan}", ((4, 32, 2), (4, 8, 1)),
                                  lambda x: np.transpose(x[0], (1, 0, 2))),
    "transpose_heads_blocks": (32, [((32, 4, 2), (8, 4, 1))], "mid.transpose %x0 "
                               "permutation [1, 0, 2] plan {plan}", ((4, 32, 2), (4, 2, 1)),
                               lambda x: np.transpose(x[0], (1, 0, 2))),
    "slice_stepped": (8, [((12, 10), (4, 2))], "mid.slice %x0 starts [1, 0] ends [12, 10] "
                      "steps [2, 3] plan {plan}", ((6, 4), (2, 2)),
                      lambda x: x[0][1:12:2, 0:10:3]),
    "concat_rows": (8, [((4, 6), (2, 2)), ((4, 6), (4, 1))], "mid.concat %x0, %x1 axis 0 "
                    "plan {plan}", ((8, 6), (8, 1)), lambda x: np.concatenate(x, axis=0)),
    "reshape_merge_heads": (16, [((16, 4, 6), (4, 4, 1))], "mid.reshape %x0 plan {plan}",
                            ((16, 24), (8, 1)), lambda x: x[0].reshape(16, 24)),
    "reshape_split_heads": (16, [((16, 24), (4, 1))], "mid.reshape %x0 plan {plan}",
                            ((16, 4, 6), (8, 2, 1)), lambda x: x[0].reshape(16, 4, 6)),
    # every result tile reads from several shards: as many rounds as shards, its receivers
    # counted by bounding boxes (some receive rows they take nothing of)
    "reshape_flatten": (8, [((6, 10), (3, 2))], "mid.reshape %x0 plan {plan}", ((60,), (7,)),
                        lambda x: x[0].reshape(60)),
}
AS_MANY_ROUNDS_AS_SHARDS = {"reshape_flatten"}


def scheduled(text: str) -> ModuleOp:
    return scheduled_module(text, PASSES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_layout_gather_in_rounds_moves_every_element(name):
    tiles, inputs, op, out, reference = CASES[name]
    module = scheduled(module_text(tiles, inputs, op, out))
    exchanges = [e for e in module.walk() if isinstance(e, ExchangeOp)]
    assert exchanges and all(e.groups is not None for e in exchanges)  # the concurrent lowering
    package = build_package(module, with_assembly=False)
    phases = [s for s in package.steps if isinstance(s, ExchangeStep)]
    # fewer phases than the serial gather's one per source shard
    shards = sum(math.prod(p) for _, p in inputs)
    assert len(phases) == shards if name in AS_MANY_ROUNDS_AS_SHARDS else len(phases) < shards
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(s).astype(np.float32) for s, _ in inputs]
    feeds = {t.name: values_of_stored(t, x) for t, x in zip(package.inputs, arrays, strict=True)}
    outcome = run_package(package, feeds)
    assert not outcome.exchange_errors, outcome.exchange_errors[:3]
    [result] = package.outputs
    got = stored_of_values(result, outcome.outputs[result.name])
    np.testing.assert_array_equal(np.asarray(got), reference(arrays))


def test_a_head_split_transpose_takes_one_round_per_row_block():
    """s = 8 b + 4 r + h to tile 8 b + 2 h + r: the group is (b, h), split around the row
    block digit (`GatherRounds.group_inner` 4), 2 rounds of 16 shards; a one-digit group
    takes 16 rounds of 2 (the row blocks, b and h the rounds' digits)."""
    tiles, inputs, op, out, _ = CASES["transpose_batch_heads"]
    module = scheduled(module_text(tiles, inputs, op, out))
    [exchange] = [e for e in module.walk() if isinstance(e, ExchangeOp)]
    assert exchange.groups is not None and exchange.groups.value.data == 16
    package = build_package(module, with_assembly=False)
    assert len([s for s in package.steps if isinstance(s, ExchangeStep)]) == 2


@pytest.mark.parametrize("name, rounds, groups, steps", [
    ("transpose_heads_one_round", 1, 32, (8, 1)), ("transpose_heads_blocks", 4, 8, (2, 1))])
def test_a_head_transpose_sends_every_head_and_row_block_at_once(name, rounds, groups, steps):
    """The group's two digits (head, row block) each step the destination tiles by their own
    amount (8 and 1 tiles, or 2 and 1), so one take per round still finds each tile's source
    from its id (`GatherRounds.decoders`): as many phases as a destination needs sources,
    not one per head or per row block (BERT-base's K transpose: 24 rounds of 12 before)."""
    tiles, inputs, op, out, _ = CASES[name]
    module = scheduled(module_text(tiles, inputs, op, out))
    [exchange] = [e for e in module.walk() if isinstance(e, ExchangeOp)]
    assert exchange.groups is not None and exchange.groups.value.data == groups
    package = build_package(module, with_assembly=False)
    assert len([s for s in package.steps if isinstance(s, ExchangeStep)]) == rounds
    takes = [s for s in package.steps if isinstance(s, KernelStep)
             and s.symbol == "gather_view_round"]
    named, _ = get_kernel("gather_view_round").split_scalars(takes[0].scalars)
    assert (named["dest_step"], named["outer_dest_step"]) == steps  # head, row block


def test_a_head_transpose_round_with_a_wrong_outer_step_gives_wrong_numbers():
    """outer_dest_step places the row-block digit: one more sends tiles to other shards."""
    package, arrays, reference, named = checked_round_package("transpose_heads_one_round", 5)
    # outer_span doubled to keep the windows apart: only the step is wrong
    change_first_round_take(package, outer_dest_step=named["outer_dest_step"] + 1,
                            outer_span=named["outer_span"] * 2)
    assert not np.array_equal(run_layout(package, arrays), reference(arrays))


def run_layout(package, arrays) -> np.ndarray:
    feeds = {t.name: values_of_stored(t, x) for t, x in zip(package.inputs, arrays, strict=True)}
    outcome = run_package(package, feeds)
    [result] = package.outputs
    return np.asarray(stored_of_values(result, outcome.outputs[result.name]))


def first_round_take(package) -> tuple[int, dict[str, int]]:
    """The step index of the package's first `gather_view_round` and its named scalars."""
    index = next(i for i, s in enumerate(package.steps)
                 if isinstance(s, KernelStep) and s.symbol == "gather_view_round")
    named, _ = get_kernel("gather_view_round").split_scalars(package.steps[index].scalars)
    return index, named


def checked_round_package(name: str, seed: int):
    """CASES[name] built, run once and checked exactly, with its first round take's named
    scalars: (package, arrays, reference, named)."""
    tiles, inputs, op, out, reference = CASES[name]
    package = build_package(scheduled(module_text(tiles, inputs, op, out)),
                            with_assembly=False)
    arrays = [np.random.default_rng(seed).standard_normal(s).astype(np.float32)
              for s, _ in inputs]
    np.testing.assert_array_equal(run_layout(package, arrays), reference(arrays))
    return package, arrays, reference, first_round_take(package)[1]


def change_first_round_take(package, **values: int) -> None:
    """Set named scalars of the package's first round take."""
    index, named = first_round_take(package)
    scalars = list(package.steps[index].scalars)
    for scalar, value in values.items():
        scalars[list(named).index(scalar)] = value
    package.steps[index].scalars = tuple(scalars)


@pytest.mark.parametrize("scalar", ["group_inner", "outer_step"])
def test_a_split_group_round_with_a_wrong_scalar_gives_wrong_numbers(scalar):
    """Each receiver finds its source from group_inner and outer_step (the batch digit of the
    group): one more outer_step makes the round takes read other shards than were sent; one
    more group_inner makes the groups' windows overlap (5 windows of dest_step 2 in a
    group_span of 8), which the model refuses by name."""
    package, arrays, reference, named = checked_round_package("transpose_batch_heads", 3)
    assert named["group_inner"] == 4 and named["outer_step"] == 8  # s = 8 b + 4 r + h
    change_first_round_take(package, **{scalar: named[scalar] + 1})
    if scalar == "group_inner":
        with pytest.raises(ModelError, match="two groups' windows would overlap"):
            run_layout(package, arrays)
        return
    assert not np.array_equal(run_layout(package, arrays), reference(arrays))
