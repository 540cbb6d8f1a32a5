"""FP8 GEMM on the AMP (device/model/kernels_gemm.py): float8_e4m3fnuz codes with scales,
FP16 partials, at the FP8 rate."""

import ml_dtypes
import numpy as np
import pytest
from kernels_support import AREAS, T, run

from device.layouts import AMP_BLOCK, block_bytes, pack, panel_bytes, unpack
from device.model import ModelError
from device.model.memory import TileMemory

RNG = np.random.default_rng(143)
F8 = ml_dtypes.float8_e4m3fnuz
LEFT, RIGHT, OUT = AREAS[0], AREAS[1], T.interleaved_start


def codes(shape) -> np.ndarray:
    """Random FP8 q values (float64) of moderate size, so that 64-deep sums stay finite in
    FP16; the smallest subnormal step 2**-10 included."""
    q = (RNG.normal(0, 3, shape) * 2.0 ** RNG.integers(-10, 3, shape)).astype(F8)
    return q.astype(np.float64)


def load(memory: TileMemory, rows: int, left_scale: int, right_scale: int):
    left_q, right_q = codes((rows, AMP_BLOCK)), codes((AMP_BLOCK, AMP_BLOCK))
    memory.write(0, LEFT, pack(left_q * 2.0**left_scale, "amp_left", "f8f143", left_scale))
    memory.write(0, RIGHT, pack(right_q * 2.0**right_scale, "amp_right", "f8f143", right_scale))
    return left_q * 2.0**left_scale, right_q * 2.0**right_scale


def output(memory: TileMemory, rows: int) -> np.ndarray:
    return unpack(memory.read(0, OUT, panel_bytes(rows, "f16")), (rows, AMP_BLOCK),
                  "amp_output", "f16")


@pytest.mark.parametrize("rows,left_scale,right_scale", [(16, 0, 0), (48, -6, -5), (32, 3, -9)])
def test_init_then_accum_with_fp16_partials(rows, left_scale, right_scale):
    memory = TileMemory(T, 1)
    lhs, rhs = load(memory, rows, left_scale, right_scale)
    cycles = run(memory, "amp_gemm_f8_init", [0], [OUT, LEFT, RIGHT],
                 [rows, left_scale, right_scale])
    assert cycles == T.kernel_call_cycles + rows * AMP_BLOCK * AMP_BLOCK // 128
    # exact 64-deep products in float64, rounded to FP32, then to the FP16 partials
    first = (lhs @ rhs).astype(np.float32).astype(np.float16)
    np.testing.assert_array_equal(output(memory, rows), first)
    lhs2, rhs2 = load(memory, rows, left_scale, right_scale)
    run(memory, "amp_gemm_f8_accum", [0], [OUT, LEFT, RIGHT], [rows, left_scale, right_scale])
    second = (first.astype(np.float64) + (lhs2 @ rhs2).astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(output(memory, rows), second)
    assert np.isfinite(second).all() and (second != 0).mean() > 0.5


def test_fp8_runs_at_twice_the_fp16_rate():
    memory = TileMemory(T, 1)
    load(memory, 64, 0, 0)
    f8 = run(memory, "amp_gemm_f8_init", [0], [OUT, LEFT, RIGHT], [64, 0, 0])
    memory.write(0, LEFT, np.zeros(panel_bytes(64, "f16"), np.uint8))
    memory.write(0, RIGHT, np.zeros(block_bytes("f16"), np.uint8))
    f16 = run(memory, "amp_gemm_f16_init", [0], [OUT, LEFT, RIGHT], [64])
    assert (f16 - T.kernel_call_cycles) == 2 * (f8 - T.kernel_call_cycles)


@pytest.mark.parametrize("pointers,scalars,message", [
    ([OUT + 16, LEFT, RIGHT], [16, 0, 0],
     f"pointer 'out' = {OUT + 16:#x} is not 32-byte aligned"),
    ([OUT, LEFT, RIGHT], [16, 32, 0],
     "scalar 'left_scale' = 32 is outside the FP8 scale range -31..31"),
    ([OUT, LEFT, RIGHT], [16, 0, -32],
     "scalar 'right_scale' = -32 is outside the FP8 scale range -31..31"),
    ([LEFT, RIGHT, OUT], [16, 0, 0],
     f"output panel at {LEFT:#x} is not in interleaved memory"),
    ([OUT, OUT + 0x1000, RIGHT], [16, 0, 0],
     f"output panel at {OUT:#x} and left panel at {OUT + 0x1000:#x} share memory element"),
    ([OUT, LEFT, RIGHT], [0, 0, 0], "scalar 'rows' = 0 must be >= 1"),
])
def test_fp8_gemm_checks(pointers, scalars, message):
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 1), "amp_gemm_f8_init", [0], pointers, scalars)
    assert str(info.value).startswith(f"step 0: kernel amp_gemm_f8_init on tile 0: {message}")


def test_left_panel_size_is_the_fp8_one():
    # the f8 left panel (rows * 64 bytes) ends just before the output's memory element: only
    # an f16-sized panel would reach it
    rows = 64
    element = T.element_of(OUT)
    left = element.start - panel_bytes(rows, "f8f143")
    memory = TileMemory(T, 1)
    run(memory, "amp_gemm_f8_init", [0], [OUT, left, RIGHT], [rows, 0, 0])
