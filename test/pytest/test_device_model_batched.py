"""Batched kernel steps: the same bytes as the per-tile implementations, the same diagnostics.

A step runs through its record's batched form when it has one (`Kernel.batched`); these
tests run each step both ways (batched, and with the batched forms removed) on the same
memory and compare every tile's bytes and the step's cycles, and check that a bad pointer on
one tile of a batch still gets the per-tile diagnostic naming that tile. The GEMMs, the word
copy and the layout kernels `gather_shard`, `gather_view` and `view_shard` have batched forms;
test_device_model_packages.py runs whole compiled packages both ways.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from kernels_support import AREAS, descriptors, fmt
from test_device_model_support import DATA, OUTPUT, T, kernel

from device.index_views import IndexView
from device.kernels import RECORDS, kernel_cycles, step_cycles
from device.layouts import block_bytes, panel_bytes
from device.model import ModelError
from device.model.kernel_steps import run_kernel_step
from device.model.memory import TileMemory
from device.shard_geometry import DescriptorError

TILES = 5
ROWS = 16


def filled_memory(seed: int, precision: str) -> TileMemory:
    """Random finite values on every tile: operands from DATA, previous outputs at OUTPUT."""
    rng = np.random.default_rng(seed)
    memory = TileMemory(T, TILES)
    dtype = np.float16 if precision == "f16" else np.float32
    for tile in range(TILES):
        values = rng.uniform(-1, 1, 4 * panel_bytes(ROWS, precision)).astype(dtype)
        memory.write(tile, DATA, values[: 2 * panel_bytes(ROWS, precision) // values.itemsize])
        memory.write(tile, OUTPUT, values[: panel_bytes(ROWS, precision) // values.itemsize])
    return memory


def both_ways(monkeypatch, memory_of, step):
    batched = memory_of()
    cycles = run_kernel_step(batched, step, "step 0", T)
    with monkeypatch.context() as patch:
        for symbol, record in RECORDS.items():
            patch.setitem(RECORDS, symbol, replace(record, batched=None))
        per_tile = memory_of()
        per_tile_cycles = run_kernel_step(per_tile, step, "step 0", T)
    assert cycles == per_tile_cycles
    return batched, per_tile


@pytest.mark.parametrize("precision", ["f16", "f32"])
@pytest.mark.parametrize("mode", ["init", "accum"])
@pytest.mark.parametrize("same_right", [True, False])
def test_batched_gemm_writes_the_bytes_the_per_tile_gemm_writes(monkeypatch, precision, mode,
                                                                 same_right):
    symbol = f"amp_gemm_{precision}_{mode}"
    assert RECORDS[symbol].batched is not None
    right = DATA + panel_bytes(ROWS, precision)

    def memory_of():
        memory = filled_memory(3, precision)
        if same_right:  # the broadcast case: one block, byte-identical on every tile
            block = memory.read(0, right, block_bytes(precision))
            for tile in range(1, TILES):
                memory.write(tile, right, block)
        return memory

    tiles = [0, 2, 3, 4]
    step = kernel(symbol, tiles, [[OUTPUT, DATA, right]] * len(tiles), [ROWS])
    batched, per_tile = both_ways(monkeypatch, memory_of, step)
    for tile in range(TILES):
        assert np.array_equal(batched.read(tile, OUTPUT, panel_bytes(ROWS, precision)),
                              per_tile.read(tile, OUTPUT, panel_bytes(ROWS, precision))), tile
    untouched = filled_memory(3, precision).read(1, OUTPUT, panel_bytes(ROWS, precision))
    assert np.array_equal(batched.read(1, OUTPUT, panel_bytes(ROWS, precision)), untouched)


def test_batched_copy_with_per_tile_pointers(monkeypatch):
    tiles = [4, 1, 3]
    pointers = [[DATA + 0x1000 + 4 * t, DATA + 8 * t] for t in tiles]
    step = kernel("copy_words", tiles, pointers, [37])
    batched, per_tile = both_ways(monkeypatch, lambda: filled_memory(5, "f32"), step)
    for tile in range(TILES):
        assert np.array_equal(batched.words(tile), per_tile.words(tile)), tile


def test_a_bad_pointer_on_one_tile_of_a_batch_names_that_tile():
    memory = filled_memory(1, "f16")
    right = DATA + panel_bytes(ROWS, "f16")
    pointers = [[OUTPUT, DATA, right]] * 4
    pointers[2] = [OUTPUT, DATA + 2, right]  # tile 3's left panel is misaligned
    step = kernel("amp_gemm_f16_init", [0, 1, 3, 4], pointers, [ROWS])
    with pytest.raises(ModelError, match=r"step 0: kernel amp_gemm_f16_init on tile 3: "
                                         r"pointer 'left' = 0x[0-9a-f]+ is not \d+-byte aligned"):
        run_kernel_step(memory, step, "step 0", T)


# ---- the layout kernels: gather_shard and gather_view over a whole step ----------------------
GATHER_FORMATS = [
    # (staged, out): one tensor in two tilings; each step gathers one source shard on all
    # out tiles, most of which find an empty intersection
    (fmt((50, 100), (1, 1), (3, 1), "f16"), fmt((50, 100), (1, 64), (1, 2), "f16", "amp_left")),
    (fmt((50, 100), (16, 64), (2, 2), "f32", "amp_output", replication=2),
     fmt((50, 100), (7, 1), (2, 3), "f32", "row_major")),
    (fmt((2, 64, 130), (1, 64, 64), (2, 1, 1), "f8f143", "amp_right", scale=-1),
     fmt((2, 64, 130), (1, 64, 64), (1, 1, 2), "f8f143", "amp_left_t", replication=2,
         scale=-1)),
    (fmt((40, 12), (1, 1), (8, 1), "f16"), fmt((40, 12), (1, 1), (1, 12), "f16")),
]


def random_memory(tiles: int, seed: int) -> TileMemory:
    """Every tile's AREAS[1] (out) and AREAS[2] (staged) filled with its own random bytes."""
    rng = np.random.default_rng(seed)
    memory = TileMemory(T, tiles)
    for tile in range(tiles):
        for area in AREAS[1:3]:
            memory.write(tile, area, rng.integers(0, 256, 0x10000, dtype=np.uint8))
    return memory


def batched_only(monkeypatch, symbol: str) -> None:
    """Make the batched form of `symbol` fail the test where it would fall back to the
    per-tile form (returning None), so that a comparison really compares the two."""
    record = RECORDS[symbol]
    assert record.batched is not None

    def strict(batch, run=record.batched):
        cycles = run(batch)
        assert cycles is not None, f"{symbol}: the batched form fell back"
        return cycles

    monkeypatch.setitem(RECORDS, symbol, replace(record, batched=strict))


def same_memory(first: TileMemory, second: TileMemory) -> None:
    for tile in range(first.tiles):
        assert np.array_equal(first.words(tile), second.words(tile)), tile


@pytest.mark.parametrize("staged,out", GATHER_FORMATS)
def test_batched_gather_shard_writes_the_bytes_the_per_tile_gather_writes(monkeypatch, staged,
                                                                         out):
    batched_only(monkeypatch, "gather_shard")
    tiles = max(staged.tiles_used, out.tiles_used)
    for source in range(staged.tiles_used):
        step = kernel("gather_shard", list(range(out.tiles_used))[::-1],
                      [[AREAS[1], AREAS[2]]] * out.tiles_used,
                      [source, *descriptors(out, staged)])
        batched, per_tile = both_ways(
            monkeypatch, lambda source=source: random_memory(tiles, source), step)
        same_memory(batched, per_tile)


def test_batched_gather_shard_with_per_tile_pointers(monkeypatch):
    staged, out = fmt((40, 12), (1, 1), (8, 1), "f16"), fmt((40, 12), (1, 1), (2, 6), "f16")
    batched_only(monkeypatch, "gather_shard")
    tiles = list(range(out.tiles_used))
    pointers = [[AREAS[1] + 8 * t, AREAS[2] + 0x100 * (t % 3)] for t in tiles]
    for source in range(staged.tiles_used):
        step = kernel("gather_shard", tiles, pointers, [source, *descriptors(out, staged)])
        batched, per_tile = both_ways(monkeypatch, lambda: random_memory(12, 7), step)
        same_memory(batched, per_tile)


def test_a_misaligned_receiver_of_a_batched_gather_is_named():
    staged, out = fmt((8, 4), (1, 1), (2, 1), "f32"), fmt((8, 4), (1, 1), (1, 4), "f32")
    pointers = [[AREAS[1], AREAS[2]]] * 4
    pointers[2] = [AREAS[1] + 4, AREAS[2]]  # tile 2 receives (every tile does): misaligned
    step = kernel("gather_shard", [0, 1, 2, 3], pointers, [1, *descriptors(out, staged)])
    with pytest.raises(ModelError, match=r"step 0: kernel gather_shard on tile 2: pointer "
                                         r"'out' = 0x[0-9a-f]+ is not 8-byte aligned"):
        run_kernel_step(TileMemory(T, 4), step, "step 0", T)


VIEWS = [
    # (src, out, view): a transpose, a reshape, a window (a concat input), a broadcast
    (fmt((12, 40), (1, 1), (4, 1), "f16"), fmt((40, 12), (1, 1), (2, 3), "f16"),
     IndexView((0, 0), (40, 12), (1, 40), 0)),
    (fmt((6, 80), (1, 1), (3, 1), "f32"), fmt((6, 4, 20), (1, 1, 1), (1, 2, 5), "f32"),
     IndexView((0, 0, 0), (6, 4, 20), (80, 20, 1), 0)),
    (fmt((8, 10), (1, 1), (2, 1), "f16"), fmt((8, 30), (1, 64), (2, 1), "f16", "amp_left"),
     IndexView((0, 10), (8, 20), (10, 1), 0)),
    (fmt((1, 16), (1, 1), (1, 2), "f16"), fmt((24, 16), (1, 1), (4, 2), "f16"),
     IndexView((0, 0), (24, 16), (0, 1), 0)),
]


@pytest.mark.parametrize("src,out,view", VIEWS)
def test_batched_gather_view_writes_the_bytes_the_per_tile_gather_writes(monkeypatch, src, out,
                                                                        view):
    batched_only(monkeypatch, "gather_view")
    tiles = max(src.tiles_used, out.tiles_used)
    words = [*descriptors(out, src), *view.encode()]
    for source in range(src.tiles_used):
        step = kernel("gather_view", list(range(out.tiles_used)),
                      [[AREAS[1], AREAS[2]]] * out.tiles_used, [source, *words])
        batched, per_tile = both_ways(
            monkeypatch, lambda source=source: random_memory(tiles, source), step)
        same_memory(batched, per_tile)


@pytest.mark.parametrize("src,out,view", VIEWS[:2])
def test_a_round_in_which_no_tile_takes_runs_batched_and_moves_nothing(monkeypatch, src, out,
                                                                      view):
    """Round 0 of a gather loop whose every tile holds its own group's shard (source = the
    tile itself, takes_own 0): the batched form charges each call the per-tile price of a
    call that moves nothing, and writes nothing."""
    batched_only(monkeypatch, "gather_view_round")
    tiles = max(src.tiles_used, out.tiles_used)
    users = min(src.tiles_used, out.tiles_used)
    rounds = [0, 0, 1, 1, users, 0, users, 0, users, 1, 1]  # sources, steps, groups, takes_own,
    # one digit, each tile its own window
    step = kernel("gather_view_round", list(range(users)), [[AREAS[1], AREAS[2]]] * users,
                  [*rounds, *descriptors(out, src), *view.encode()])
    batched, per_tile = both_ways(monkeypatch, lambda: random_memory(tiles, 3), step)
    same_memory(batched, per_tile)
    same_memory(batched, random_memory(tiles, 3))


LOCAL_VIEWS = [
    # (src, out, view) whose sources are on each out tile: a reshape along the split rows, a
    # window (a concat input), a broadcast of a replicated row
    (fmt((12, 40), (1, 1), (4, 1), "f16"), fmt((12, 4, 10), (1, 1, 1), (4, 1, 1), "f16"),
     IndexView((0, 0, 0), (12, 4, 10), (40, 10, 1), 0)),
    (fmt((8, 10), (1, 1), (2, 1), "f32"), fmt((8, 30), (1, 1), (2, 1), "f32"),
     IndexView((0, 10), (8, 20), (10, 1), 0)),
    (fmt((1, 16), (1, 1), (1, 1), "f16", replication=4), fmt((24, 16), (1, 1), (4, 1), "f16"),
     IndexView((0, 0), (24, 16), (0, 1), 0)),
]


@pytest.mark.parametrize("src,out,view", LOCAL_VIEWS)
def test_batched_view_shard_writes_the_bytes_the_per_tile_view_writes(monkeypatch, src, out,
                                                                     view):
    batched_only(monkeypatch, "view_shard")
    tiles = out.tiles_used
    pointers = [[AREAS[1] + 8 * (t % 2), AREAS[2] + 0x100 * (t % 3)] for t in range(tiles)]
    step = kernel("view_shard", list(range(tiles))[::-1], pointers[::-1],
                  [*descriptors(out, src), *view.encode()])
    batched, per_tile = both_ways(monkeypatch, lambda: random_memory(tiles, 5), step)
    same_memory(batched, per_tile)


def test_a_view_shard_whose_source_is_on_another_tile_is_named():
    src, out, view = VIEWS[0]  # a transpose: out's tiles need elements of every src shard
    step = kernel("view_shard", list(range(out.tiles_used)), [[AREAS[1], AREAS[2]]] * 6,
                  [*descriptors(out, src), *view.encode()])
    with pytest.raises(ModelError, match=r"step 0: kernel view_shard on tile 0: \d+ element"
                                         r"\(s\) of out's box .* view_shard is tile-local"):
        run_kernel_step(TileMemory(T, 6), step, "step 0", T)


def test_a_misaligned_receiver_of_a_batched_gather_view_is_named():
    src, out = fmt((12, 40), (1, 1), (4, 1), "f16"), fmt((40, 12), (1, 1), (2, 3), "f16")
    view = IndexView((0, 0), (40, 12), (1, 40), 0)
    pointers = [[AREAS[1], AREAS[2]]] * 6
    pointers[3] = [AREAS[1], AREAS[2] + 2]  # tile 3: rows 20.., columns 0..3, from source 0
    step = kernel("gather_view", list(range(6)), pointers,
                  [0, *descriptors(out, src), *view.encode()])
    with pytest.raises(ModelError, match=r"step 0: kernel gather_view on tile 3: pointer "
                                         r"'staged' = 0x[0-9a-f]+ is not 8-byte aligned"):
        run_kernel_step(TileMemory(T, 6), step, "step 0", T)


@pytest.mark.parametrize("staged,out", GATHER_FORMATS)
def test_step_cycles_of_a_gather_are_the_slowest_tiles(staged, out):
    for source in range(staged.tiles_used):
        scalars = [source, *descriptors(out, staged)]
        tiles = list(range(out.tiles_used))
        assert step_cycles("gather_shard", scalars, tiles, T) == max(
            kernel_cycles("gather_shard", scalars, tile, T) for tile in tiles)


def test_step_cycles_of_a_refused_gather_raise_the_per_call_error():
    staged, out = fmt((8, 4), (1, 1), (2, 1), "f32"), fmt((8, 4), (1, 1), (1, 4), "f32")
    with pytest.raises(DescriptorError, match="tile 5 holds no shard of this format"):
        step_cycles("gather_shard", [5, *descriptors(out, staged)], [0, 1, 2], T)


def test_a_gather_between_tensors_of_different_ranks_is_refused():
    from device.model.kernel_shards import gather_boxes

    out = fmt((50, 100), (1, 64), (1, 2), "f16")
    staged = fmt((2, 50, 50), (1, 1, 1), (1, 1, 1), "f16")
    with pytest.raises(DescriptorError, match="out has rank 2 but staged has rank 3: not one tensor"):
        gather_boxes(out, staged, 0, np.arange(2, dtype=np.int64))
