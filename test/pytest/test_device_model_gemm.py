"""A small multi-tile GEMM in the retained plan's shape, with rows from the compiler's
broadcast row builder (`planning.exchange_rows`), run on the model."""

import numpy as np
from test_device_model_support import DATA, OUTPUT, ROW_SLOT, SLOT, T, kernel, tensor

from device.layouts import AMP_BLOCK, block_bytes, panel_bytes
from device.model import run_package
from device.package import ExchangeStep, Package
from planning.exchange_rows import (
    checked_row,
    plan_broadcast,
    receiver_instructions,
    sender_instructions,
)

TILES, ROW_TILES, ROWS = 3, (0, 1), 16  # C (32 x 64) = A (32 x 128) @ B (128 x 64)
HOME = {0: 2, 1: 0}  # home tile of right block (k, 0); tile 0 is also a row tile
A_AT = DATA
B_AT = DATA + 2 * panel_bytes(ROWS, "f16")
C_AT = OUTPUT


def broadcast_step(k: int, latency: np.ndarray, rows: list) -> ExchangeStep:
    home = HOME[k]
    receivers = tuple(t for t in ROW_TILES if t != home)
    slot = ROW_SLOT + 64 * k  # one code slot per phase: the rows differ between phases
    source = B_AT + (0 if home == 2 else block_bytes("f16"))  # tile 0 holds block 1 at offset
    phase = plan_broadcast(home, receivers, block_bytes("f16") // 4, source, SLOT, latency)
    row_id = np.full(TILES, -1, np.int32)
    rows.append(checked_row(sender_instructions(phase), phase.sender_schedule(), slot, "send"))
    row_id[home] = len(rows) - 1
    rows.append(checked_row(receiver_instructions(phase), phase.receiver_schedule(), slot,
                            "receive"))
    row_id[list(receivers)] = len(rows) - 1
    return ExchangeStep(slot, row_id, f"block ({k}, 0)")


def gemm_package() -> Package:
    latency = T.latency_matrix(TILES)
    rows: list = []
    gemm = [[C_AT, A_AT + k * panel_bytes(ROWS, "f16"), SLOT] for k in range(2)]
    steps = [
        broadcast_step(0, latency, rows),
        kernel("amp_gemm_f16_init", ROW_TILES, [gemm[0]] * 2, [ROWS]),
        broadcast_step(1, latency, rows),
        kernel("copy_words", [0], [SLOT, B_AT + block_bytes("f16")], [block_bytes("f16") // 4]),
        kernel("amp_gemm_f16_accum", ROW_TILES, [gemm[1]] * 2, [ROWS]),
    ]
    inputs = [
        tensor("a", (32, 128), "f16", "amp_left", (ROWS, 128), ROW_TILES, [A_AT] * 2,
               [(0, 0), (ROWS, 0)]),
        # block (0, 0) on tile 2 and block (1, 0) on tile 0, both in amp_right order
        tensor("b", (128, 64), "f16", "amp_right", (AMP_BLOCK, AMP_BLOCK), [2, 0],
               [B_AT, B_AT + block_bytes("f16")], [(0, 0), (AMP_BLOCK, 0)]),
    ]
    outputs = [tensor("c", (32, 64), "f16", "amp_output", (ROWS, AMP_BLOCK), ROW_TILES,
                      [C_AT] * 2, [(0, 0), (ROWS, 0)])]
    return Package("ipu21", TILES, rows, steps, inputs, outputs)


def operands():
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (32, 128)).astype(np.float16)
    b = rng.uniform(-1, 1, (128, 64)).astype(np.float16)
    return a, b


def test_two_row_tiles_accumulate_over_two_broadcast_blocks():
    a, b = operands()
    result = run_package(gemm_package(), {"a": a, "b": b})
    assert result.exchange_errors == []
    reference = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(result.outputs["c"], reference, rtol=4e-3, atol=2e-2)
    words = block_bytes("f16") // 4
    latency = T.latency_matrix(TILES)
    farthest = int(max(latency[2, 0], latency[2, 1]))
    assert result.cycles_by_step[0] == T.sync_cycles + words + farthest
    assert result.cycles_by_step[2] == T.sync_cycles + words + int(latency[0, 1])
    assert result.cycles_by_step[3] == T.vector_cycles(4 * words)


def test_a_saved_and_loaded_package_runs_the_same(tmp_path):
    a, b = operands()
    package = gemm_package()
    direct = run_package(package, {"a": a, "b": b})
    loaded = run_package(Package.load(package.save(tmp_path / "pkg")), {"a": a, "b": b})
    assert np.array_equal(loaded.outputs["c"], direct.outputs["c"])
    assert loaded.cycles_by_step == direct.cycles_by_step
