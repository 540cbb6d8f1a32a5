"""The concurrent gather (`passes/operators/gather.py`) on the device model: a `mid.rearrange`
between two partitionings sends several input shards per exchange phase, each only to the
result tiles that hold its elements, with full-duplex tiles where a sender also receives.

Each case is a function whose only work is one rearrangement (a bridge that
`insert-conversions` turns into `mid.rearrange`), compiled through the pipeline, run on the
device model from its encoded rows, and compared bit-exactly with its input (a gather moves
elements, it computes nothing)."""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from e2e_support import scheduled_module
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

from device import isa
from device.model import run_package
from device.model.host import stored_of_values, values_of_stored
from device.package import ExchangeStep, Package
from ipu_dialects.tile import ExchangeOp, LoopOp, sends_while_receiving
from passes.operators.gather import plan_rounds, shard_receivers
from planning.shard_geometry import ShardGeometry
from tools.package_writer import build_package

PASSES = ("insert-conversions", "mid-to-tile", "place-memory", "schedule-exchange")
MODULE = """
builtin.module attributes {{ipu.config = #mid.config<target = "ipu21", tiles = {tiles}, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>}} {{
  func.func @gather(%x: {src}) -> {dst} {{
    %y = builtin.unrealized_conversion_cast %x : {src} to {dst}
    func.return %y : {dst}
  }}
}}
"""


def fmt(precision: str, order: str, tiling: str, tiles: int, replication: int = 1,
        memory: str = "standard") -> str:
    return (f"#mid.format<{precision}, {order}, [{tiling}], replication = {replication}, "
            f"group = {tiles}, {memory}>")


def tensor(shape: tuple[int, ...], element: str, encoding: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{element}, {encoding}>"


def case(shape, element, src, dst, tiles):
    return MODULE.format(tiles=tiles, src=tensor(shape, element, src),
                         dst=tensor(shape, element, dst))


def rows_to_amp_left(tiles: int):
    """One row per tile (the attention/gelu output) into the grid GEMM's A format."""
    return case((64, 256), "f16", fmt("f16", "row_major", f"1 x {tiles} pad, 1 x 1 pad", tiles),
                fmt("f16", "amp_left", "16 x 4 pad, 64 x 2 pad", tiles), tiles)


def amp_output_to_rows(tiles: int):
    """A GEMM's 4 row blocks into one row per tile: 4 groups in one phase, full duplex."""
    return case((64, 64), "f16", fmt("f16", "amp_output", "16 x 4 pad, 64 x 1 pad", tiles,
                                     memory="interleaved"),
                fmt("f16", "row_major", f"1 x {tiles} pad, 1 x 1 pad", tiles), tiles)


def amp_output_to_columns(tiles: int):
    """A 4 x 2 grid of row and column blocks into column shards: 2 groups of 4 rounds."""
    return case((64, 128), "f32", fmt("f32", "amp_output", "16 x 4 pad, 64 x 2 pad", tiles,
                                      memory="interleaved"),
                fmt("f32", "row_major", f"1 x 1 pad, 1 x {tiles} pad", tiles), tiles)


def columns_to_amp_left(tiles: int):
    """Column shards into the A format cut 4 x 4: each shard feeds one column of the grid."""
    return case((64, 128), "f16", fmt("f16", "row_major", f"1 x 1 pad, 1 x {tiles} pad", tiles),
                fmt("f16", "amp_left", "16 x 4 pad, 64 x 4 pad", tiles), tiles)


def padded_rows(tiles: int):
    """60 x 100 rows cut over the tiles (the last shards all padding) into 16-row blocks."""
    return case((60, 100), "f32", fmt("f32", "row_major", f"1 x {tiles} pad, 1 x 1 pad", tiles),
                fmt("f32", "amp_left", "16 x 4 pad, 64 x 2 pad", tiles), tiles)


def replicated_result(tiles: int):
    """Row blocks into a copy of the whole tensor on every tile: one shard per phase."""
    return case((8, 64), "f32", fmt("f32", "row_major", "1 x 4 pad, 1 x 1 pad", tiles),
                fmt("f32", "row_major", "1 x 1 pad, 1 x 1 pad", tiles, replication=tiles),
                tiles)


def replicated_input(tiles: int):
    """A tensor held by 2 replicas of 2 column halves into row blocks."""
    return case((16, 64), "f16", fmt("f16", "row_major", "1 x 1 pad, 1 x 2 pad", tiles,
                                     replication=2),
                fmt("f16", "row_major", f"1 x {tiles} pad, 1 x 1 pad", tiles), tiles)


def fp8_rank3(tiles: int):
    """FP8 (scale kept) of rank 3: rows of two heads into column blocks."""
    return case((2, 16, 64), "f8E4M3FNUZ",
                fmt("f8f143<-2>", "row_major", f"1 x 2 pad, 1 x {tiles // 2} pad, 1 x 1 pad",
                    tiles),
                fmt("f8f143<-2>", "row_major", f"1 x 1 pad, 1 x 1 pad, 8 x {tiles} pad",
                    tiles), tiles)


def batched_blocks_to_rows(tiles: int):
    """A batched GEMM's output blocks (s = 16 b + 4 i + j over 2 x 4 x 4 blocks) into one row
    of every batch per tile (BERT's GEMM output into its layer norm): the 4 row blocks i,
    the middle digit of s, go at once, 8 rounds instead of the serial 32."""
    return case((2, 64, 64), "f16",
                fmt("f16", "row_major", "1 x 2 pad, 16 x 4 pad, 16 x 4 pad", tiles),
                fmt("f16", "row_major", f"2 x 1 pad, 1 x {tiles} pad, 64 x 1 pad", tiles),
                tiles)


def thin_columns_to_blocks(tiles: int):
    """3-column shards into 8-column blocks of 2 row blocks (BERT's MLP activation into its
    second GEMM): shard j's first block floor(3 j / 8) is affine in no split, but the first 8
    shards and the last 8 meet disjoint blocks (0..2 and 3..5): 2 groups of 8 rounds, a shift
    by the group alone, instead of the serial 16."""
    return case((1, 32, 48), "f16",
                fmt("f16", "row_major", "1 x 1 pad, 32 x 1 pad, 3 x 16 pad", tiles),
                fmt("f16", "row_major", "1 x 1 pad, 16 x 2 pad, 8 x 6 pad", tiles), tiles)


CASES = {
    "batched_blocks_to_rows": batched_blocks_to_rows,
    "thin_columns_to_blocks": thin_columns_to_blocks,
    "rows_to_amp_left": rows_to_amp_left,
    "amp_output_to_rows": amp_output_to_rows,
    "amp_output_to_columns": amp_output_to_columns,
    "columns_to_amp_left": columns_to_amp_left,
    "padded_rows": padded_rows,
    "replicated_result": replicated_result,
    "replicated_input": replicated_input,
    "fp8_rank3": fp8_rank3,
}
# the fewest tiles each case's fixed partitionings fit on
MIN_TILES = {"rows_to_amp_left": 8, "amp_output_to_columns": 8, "columns_to_amp_left": 16,
             "padded_rows": 8, "batched_blocks_to_rows": 64, "thin_columns_to_blocks": 16}
RUNS = [(name, tiles) for name in sorted(CASES) for tiles in (4, 8, 16, 64)
        if tiles >= MIN_TILES.get(name, 4)]


def scheduled(text: str) -> ModuleOp:
    return scheduled_module(text, PASSES)


def random_input(package: Package, seed: int) -> tuple[str, np.ndarray]:
    [source] = package.inputs
    rng = np.random.default_rng(seed)
    if source.precision == "f8f143":
        codes = rng.integers(0, 256, size=source.shape, dtype=np.uint8)
        codes[codes == 0x80] = 0  # the one NaN code of float8_e4m3fnuz
        import ml_dtypes
        x = codes.view(ml_dtypes.float8_e4m3fnuz)
    else:
        x = rng.standard_normal(source.shape).astype(np.float16 if source.precision == "f16"
                                                    else np.float32)
    return source.name, x


def run(package: Package, x: np.ndarray):
    [source], [result] = package.inputs, package.outputs
    outcome = run_package(package, {source.name: values_of_stored(source, x)})
    return outcome, stored_of_values(result, outcome.outputs[result.name])


def assert_moved_exactly(package: Package, seed: int = 0) -> None:
    _, x = random_input(package, seed)
    outcome, got = run(package, x)
    assert not outcome.exchange_errors, outcome.exchange_errors[:3]
    np.testing.assert_array_equal(np.asarray(got, dtype=np.float64),
                                  np.asarray(x, dtype=np.float64))


def gather_exchange(module: ModuleOp) -> ExchangeOp:
    [exchange] = [op for op in module.walk() if isinstance(op, ExchangeOp)]
    return exchange


def rounds_of(exchange: ExchangeOp) -> int:
    loop = exchange.parent_op()
    assert isinstance(loop, LoopOp)
    return loop.upper_bound - loop.lower_bound


@pytest.mark.parametrize("name, tiles", RUNS)
def test_a_concurrent_gather_moves_every_element(name, tiles):
    module = scheduled(CASES[name](tiles))
    exchanges = [op for op in module.walk() if isinstance(op, ExchangeOp)]
    assert all(op.groups is not None for op in exchanges)  # the concurrent lowering ran
    package = build_package(module, with_assembly=False)
    assert_moved_exactly(package, seed=tiles)


@pytest.mark.parametrize("name, tiles, groups, rounds, duplex", [
    ("rows_to_amp_left", 64, 4, 16, True),  # shard s feeds grid row s // 16
    ("amp_output_to_rows", 64, 4, 1, True),  # tiles 1..3 send and receive tile 0's block
    ("amp_output_to_rows", 16, 4, 1, True),
    ("amp_output_to_columns", 64, 2, 4, True),
    ("columns_to_amp_left", 64, 2, 32, True),  # each shard to one tile of each grid row
    ("replicated_result", 16, 1, 4, False),  # every tile needs every shard
    ("batched_blocks_to_rows", 64, 4, 8, True),  # the group digit in the middle of s
    ("thin_columns_to_blocks", 16, 2, 8, True),  # shifted by the group alone
])
def test_shards_with_disjoint_receivers_share_a_phase(name, tiles, groups, rounds, duplex):
    module = scheduled(CASES[name](tiles))
    exchange = gather_exchange(module)
    assert (exchange.group_count, rounds_of(exchange)) == (groups, rounds)
    assert exchange.has_full_duplex_tiles() == duplex
    package = build_package(module, with_assembly=False)
    phases = [s for s in package.steps if isinstance(s, ExchangeStep)]
    assert len(phases) == rounds
    assert_moved_exactly(package)


def test_the_64_tile_activation_gather_runs_16_phases():
    """The serial gather ran 64 phases of one row each, and 8 copies; the concurrent one runs
    16 phases (4 grid rows at once), and only tiles 0 and 1 hold their own row (they take it
    from their input, test_gather_round.py)."""
    package = build_package(scheduled(rows_to_amp_left(64)), with_assembly=False)
    phases = [s for s in package.steps if isinstance(s, ExchangeStep)]
    assert len(phases) == 16
    assert_moved_exactly(package)


def test_a_receiver_listening_to_the_wrong_sender_fails_the_run():
    """In the one phase of amp_output -> rows on 16 tiles, tile 5 (group 1, whose block
    comes from tile 1) is made to listen to tile 2 (group 2's sender)."""
    package = build_package(scheduled(amp_output_to_rows(16)), with_assembly=False)
    _, x = random_input(package, 0)
    index, step = next((i, s) for i, s in enumerate(package.steps)
                       if isinstance(s, ExchangeStep))
    row = isa.decode(package.rows[int(step.row_id[5])].tolist(), step.row_address)
    listen = next(i for i, instr in enumerate(row) if isinstance(instr, isa.SendPicP))
    assert row[listen].xpic == 1
    row[listen] = replace(row[listen], xpic=2)
    corrupted = copy.deepcopy(package)
    corrupted.rows.append(np.asarray(isa.encode(row, step.row_address), dtype=np.uint32))
    corrupted.steps[index].row_id[5] = len(corrupted.rows) - 1
    outcome, got = run(corrupted, x)
    assert outcome.exchange_errors or not np.array_equal(got, x)
    _, good = run(package, x)
    np.testing.assert_array_equal(good, x)


@pytest.mark.parametrize("name, tile_counts", [
    ("rows_to_amp_left", (16, 64, 256)),  # on 256 tiles the rows past 64 are padding
    ("amp_output_to_rows", (16, 32, 64)),  # past 64 tiles the result gets padding to zero
    ("padded_rows", (16, 64, 256)),
])
def test_the_gather_op_count_does_not_depend_on_the_tile_count(name, tile_counts):
    counts = []
    for tiles in tile_counts:
        module = scheduled(CASES[name](tiles))
        counts.append(Counter(op.name for op in module.walk()
                              if op.name.startswith("tile.")))
    assert counts[0] == counts[1] == counts[2]


def test_plan_rounds_splits_by_grid_row():
    """rows (64 tiles) -> amp_left 4 x 2: s = 16 g + r, group g to tiles 2g and 2g + 1."""
    rows = ShardGeometry((64, 256), (1, 1), (64, 1), (True, True), precision="f16")
    grid = ShardGeometry((64, 256), (16, 64), (4, 2), (True, True), precision="f16",
                         order="amp_left")
    plan = plan_rounds(rows, grid)
    assert plan is not None
    assert (plan.rounds, plan.groups, plan.groups_outer) == (16, 4, True)
    assert (plan.shift, plan.base, plan.copiers) == ((0, 0, 0, 2), (0, 1), (0, 1))


def bert_b8(shape: tuple[int, ...], partitions: tuple[int, ...], tiles: int) -> ShardGeometry:
    """A format of the BERT-base layer at batch 8 (seq 384) on 1472 tiles, as its selector
    chooses them (`bench/models.py --cases bert-base-b8`)."""
    return ShardGeometry(shape, (1,) * len(shape), partitions, (True,) * len(shape),
                         group=tiles, precision="f16")


@pytest.mark.parametrize("source, result, rounds, groups", [
    # the attention projection's output blocks (8 x 12 x 12) into rows for the layer norm:
    # the 12 row blocks are s's middle digit
    (((8, 384, 768), (8, 12, 12)), ((8, 384, 768), (1, 384, 1)), 96, 12),
    # the first MLP GEMM's blocks (8 x 3 x 48) into 3-column shards on every tile (the
    # RowsDoNotFit of gemm20 -> add21): 16 column groups, 3 blocks per group digit below them
    (((8, 384, 3072), (8, 3, 48)), ((8, 384, 3072), (1, 1, 1472)), 72, 16),
    # 3-column shards into the second MLP GEMM's 256-column blocks: a shift by the group only
    (((8, 384, 3072), (1, 1, 1472)), ((8, 384, 3072), (8, 12, 12)), 256, 4),
])
def test_the_bert_batch_8_gathers_are_no_longer_serial(source, result, rounds, groups):
    """These gathers were one shard per round (1152, 1152 and 1024 rounds, a row slot each:
    18432 bytes of rows for gemm20 -> add21, more than the free row memory)."""
    a, b = bert_b8(*source, 1472), bert_b8(*result, 1472)
    plan = plan_rounds(a, b)
    assert plan is not None and (plan.rounds, plan.groups) == (rounds, groups)
    need = shard_receivers(a, b)
    sent = plan.sent_shards()
    assert sorted(sent.reshape(-1).tolist()) == list(range(sent.size))  # each shard once
    c, ko, ki, kg = plan.shift
    r, g = np.meshgrid(np.arange(plan.rounds), np.arange(plan.groups), indexing="ij")
    shifts = c + ko * (r // plan.inner) + ki * (r % plan.inner) + kg * g
    base = np.asarray(plan.base)
    for round_shards, round_shifts in zip(sent, shifts, strict=True):
        destinations = [set((base + shift).tolist()) for shift in round_shifts]
        for shard, reached in zip(round_shards, destinations, strict=True):
            if shard < need.shape[0]:  # every receiver of the shard hears it
                assert set(np.flatnonzero(need[shard]).tolist()) <= reached
        heard = [t for shard, reached in zip(round_shards, destinations, strict=True)
                 for t in reached - {int(shard)}]
        assert len(heard) == len(set(heard))  # no tile hears two groups of one round


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 5), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_sends_while_receiving_is_the_per_iteration_check(iterations, groups, width, seed):
    """The chunked, keyed `np.isin` asks what one iteration at a time asks: is some group's
    sender among another group's receivers (its own group's copy to itself not counted)."""
    rng = np.random.default_rng(seed)
    senders = rng.integers(0, 24, (iterations, groups))
    shifts = rng.integers(0, 16, (iterations, groups))
    base = np.unique(rng.integers(0, 8, width))
    expected = False
    for n in range(iterations):
        destinations = base[None, :] + shifts[n][:, None]
        receivers = destinations[destinations != senders[n][:, None]]
        expected |= bool(np.isin(senders[n], receivers).any())
    assert sends_while_receiving(senders, shifts, base) == expected
