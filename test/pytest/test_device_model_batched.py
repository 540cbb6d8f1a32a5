"""Batched kernel steps: the same bytes as the per-tile implementations, the same diagnostics.

A step runs through its record's batched form when it has one (`Kernel.batched`); these
tests run each step both ways (batched, and with the batched forms removed) on the same
memory and compare every tile's bytes, and check that a bad pointer on one tile of a batch
still gets the per-tile diagnostic naming that tile.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_device_model_support import DATA, OUTPUT, T, kernel

from device.kernels import RECORDS
from device.layouts import block_bytes, panel_bytes
from device.model import ModelError
from device.model.kernel_steps import run_kernel_step
from device.model.memory import TileMemory

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
