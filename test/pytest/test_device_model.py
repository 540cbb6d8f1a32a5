"""The executable model: kernels, host I/O, loading and cycles, on hand-built packages."""

import ml_dtypes
import numpy as np
import pytest
from test_device_model_support import DATA, OUTPUT, T, kernel, required_kernel, tensor

from device.kernels import KERNELS, RECORDS
from device.layouts import AMP_BLOCK, block_bytes, panel_bytes
from device.model import ModelError, run_package
from device.package import ExchangeStep, KernelStep, Package

RNG = np.random.default_rng(7)


def gemm_package(rows: int, k_blocks: int, precision: str, right_offset: int = 0) -> Package:
    """C (rows x 64) = A (rows x 64*k_blocks) @ B (64*k_blocks x 64) on tile 1 of 2,
    one init call and k_blocks - 1 accumulating calls."""
    inner = AMP_BLOCK * k_blocks
    a_at = DATA
    b_at = a_at + k_blocks * panel_bytes(rows, precision)
    c_at = OUTPUT
    inputs = [
        tensor("a", (rows, inner), precision, "amp_left", (rows, inner), [1], [a_at], [(0, 0)]),
        tensor("b", (inner, AMP_BLOCK), precision, "amp_right", (inner, AMP_BLOCK), [1], [b_at],
               [(0, 0)]),
    ]
    outputs = [tensor("c", (rows, AMP_BLOCK), precision, "amp_output", (rows, AMP_BLOCK), [1],
                      [c_at], [(0, 0)])]
    steps = []
    for k in range(k_blocks):
        mode = "init" if k == 0 else "accum"
        pointers = [c_at, a_at + k * panel_bytes(rows, precision),
                    b_at + k * block_bytes(precision) + right_offset]
        steps.append(kernel(f"amp_gemm_{precision}_{mode}", [1], pointers, [rows]))
    return Package("ipu21", 2, [], steps, inputs, outputs)


def operands(rows, k_blocks, dtype):
    a = RNG.uniform(-1, 1, (rows, AMP_BLOCK * k_blocks)).astype(dtype)
    b = RNG.uniform(-1, 1, (AMP_BLOCK * k_blocks, AMP_BLOCK)).astype(dtype)
    return a, b


def test_registry_and_model_implement_the_same_kernels():
    implemented = {s for s, k in RECORDS.items() if k.run is not None and k.cycles is not None}
    assert implemented == {s for s, abi in KERNELS.items() if abi.implemented}


@pytest.mark.parametrize("precision, dtype, tolerance", [("f16", np.float16, 2e-3),
                                                         ("f32", np.float32, 1e-5)])
def test_single_tile_gemm_panel_matches_numpy(precision, dtype, tolerance):
    a, b = operands(32, 1, dtype)
    result = run_package(gemm_package(32, 1, precision), {"a": a, "b": b})
    reference = a.astype(np.float64) @ b.astype(np.float64)
    assert result.outputs["c"].dtype == dtype
    np.testing.assert_allclose(result.outputs["c"], reference, atol=tolerance * 8, rtol=tolerance)
    assert not result.exchange_errors


def test_f16_init_rounds_an_fp32_accumulation_once():
    # Products accumulated in FP32 then stored FP16: equals the FP32 product rounded once.
    a, b = operands(16, 1, np.float16)
    result = run_package(gemm_package(16, 1, "f16"), {"a": a, "b": b})
    fp32 = a.astype(np.float32) @ b.astype(np.float32)
    assert np.array_equal(result.outputs["c"], fp32.astype(np.float16))


@pytest.mark.parametrize("precision, dtype, tolerance", [("f16", np.float16, 4e-3),
                                                         ("f32", np.float32, 1e-5)])
def test_accumulating_calls_sum_over_inner_blocks(precision, dtype, tolerance):
    a, b = operands(48, 3, dtype)
    result = run_package(gemm_package(48, 3, precision), {"a": a, "b": b})
    reference = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(result.outputs["c"], reference, atol=tolerance * 16, rtol=tolerance)


def test_wrong_right_pointer_changes_the_result():
    a, b = operands(16, 2, np.float16)
    good = run_package(gemm_package(16, 2, "f16"), {"a": a, "b": b}).outputs["c"]
    bad = run_package(gemm_package(16, 2, "f16", right_offset=T.pace_alignment),
                      {"a": a, "b": b}).outputs["c"]
    assert not np.allclose(good, bad, atol=1e-2)


def test_misaligned_amp_pointer_is_an_error():
    a, b = operands(16, 1, np.float16)
    with pytest.raises(ModelError, match=r"amp_gemm_f16_init on tile 1: pointer 'right' = "
                                         r"0x[0-9a-f]+ is not 32-byte aligned"):
        run_package(gemm_package(16, 1, "f16", right_offset=8), {"a": a, "b": b})


def with_gemm_pointer(package: Package, name: str, address: int) -> Package:
    """The package with one AMP pointer (`out` or `left`) of its first GEMM moved."""
    step = next(s for s in package.steps
                if isinstance(s, KernelStep) and s.symbol.startswith("amp_gemm"))
    step.pointers[:, ("out", "left", "right").index(name)] = address
    return package


def test_amp_output_outside_interleaved_memory_is_an_error():
    a, b = operands(16, 1, np.float16)
    package = with_gemm_pointer(gemm_package(16, 1, "f16"), "out", DATA + 0x8000)
    with pytest.raises(ModelError, match=r"output panel at 0x[0-9a-f]+ is not in interleaved memory"):
        run_package(package, {"a": a, "b": b})


def test_amp_output_and_left_stream_in_one_element_is_an_error():
    a, b = operands(16, 1, np.float16)
    package = with_gemm_pointer(gemm_package(16, 1, "f16"), "left", OUTPUT + 0x4000)
    with pytest.raises(ModelError, match=r"output panel at 0x[0-9a-f]+ and left panel at "
                                         r"0x[0-9a-f]+ share memory element \d+"):
        run_package(package, {"a": a, "b": b})


def test_unknown_and_required_kernels_are_errors(monkeypatch):
    required_kernel(monkeypatch)
    for symbol, message in (("amp_gemm_f64_init", "unknown kernel symbol"),
                            ("future_kernel", "status Required")):
        package = Package("ipu21", 1, [], [kernel(symbol, [0], [DATA, DATA], [4])], [], [])
        with pytest.raises(ModelError, match=message):
            run_package(package, {})


def test_kernel_argument_counts_are_checked():
    package = Package("ipu21", 1, [], [kernel("copy_words", [0], [DATA, DATA], [])], [], [])
    with pytest.raises(ModelError, match="takes 1 scalars"):
        run_package(package, {})


def test_copy_words_and_padded_shards_round_trip():
    # x (5 x 3) in two row-major shards of 3 x 4 (padded): tile 0 rows 0-2, tile 1 rows 3-5.
    x = RNG.uniform(-4, 4, (5, 3)).astype(np.float32)
    words = 3 * 4  # one shard
    src = tensor("x", (5, 3), "f32", "row_major", (3, 4), [0, 1], [DATA, DATA], [(0, 0), (3, 0)])
    dst = tensor("y", (5, 3), "f32", "row_major", (3, 4), [0, 1], [DATA + 256] * 2,
                 [(0, 0), (3, 0)])
    copy = kernel("copy_words", [0, 1], [[DATA + 256, DATA], [DATA + 256, DATA]], [words])
    result = run_package(Package("ipu21", 2, [], [copy], [src], [dst]), {"x": x})
    assert np.array_equal(result.outputs["y"], x)
    assert result.cycles_by_step == [T.vector_cycles(words * 4)]


def test_fp8_inputs_and_outputs_use_the_scale():
    x = np.array([[1.0, -0.5, 3.0, 240.0]], dtype=np.float32) * 4
    src = tensor("x", (1, 4), "f8f143", "row_major", (1, 4), [0], [DATA], [(0, 0)], scale=2)
    dst = tensor("y", (1, 4), "f8f143", "row_major", (1, 4), [0], [DATA + 64], [(0, 0)], scale=2)
    copy = kernel("copy_words", [0], [DATA + 64, DATA], [1])
    result = run_package(Package("ipu21", 1, [], [copy], [src], [dst]), {"x": x})
    expected = (x / 4).astype(ml_dtypes.float8_e4m3fnuz).astype(np.float32) * 4
    assert np.array_equal(result.outputs["y"], expected)


def test_outputs_must_be_covered_and_inputs_must_match():
    src = tensor("x", (4, 4), "f32", "row_major", (2, 4), [0], [DATA], [(0, 0)])
    package = Package("ipu21", 1, [], [], [src], [src])
    with pytest.raises(ModelError, match=r"output 'x': element \(2, 0\) is in no shard"):
        run_package(package, {"x": np.zeros((4, 4), np.float32)})
    with pytest.raises(ModelError, match="expected shape"):
        run_package(package, {"x": np.zeros((4, 5), np.float32)})
    with pytest.raises(ModelError, match=r"missing \['x'\]"):
        run_package(package, {})


def test_image_outside_memory_names_tile_and_address():
    row_id = np.array([-1, 0], np.int32)
    bad = T.memory_end - 4
    package = Package("ipu21", 2, [np.zeros(2, np.uint32)], [ExchangeStep(bad, row_id)], [], [])
    with pytest.raises(ModelError, match=rf"image of tile 1 \(segment at {bad:#x}\)"):
        run_package(package, {})


def test_cycles_add_up_per_step():
    a, b = operands(32, 2, np.float16)
    result = run_package(gemm_package(32, 2, "f16"), {"a": a, "b": b})
    per_call = T.amp_cycles(32 * AMP_BLOCK * AMP_BLOCK, "f16")
    assert result.cycles_by_step == [per_call, per_call]
    assert result.cycles == sum(result.cycles_by_step)
    f32 = run_package(gemm_package(32, 1, "f32"), {"a": a[:, :64].astype(np.float32),
                                                   "b": b[:64].astype(np.float32)})
    assert f32.cycles_by_step == [T.amp_cycles(32 * AMP_BLOCK * AMP_BLOCK, "f32")]
    assert f32.cycles > per_call  # FP32 AMP is slower than FP16


def test_rows_sharing_a_slot_with_different_words_are_an_error():
    rows = [np.array([0x40A00000], np.uint32), np.array([0x40A00001], np.uint32)]
    steps = [ExchangeStep(DATA, np.array([i], np.int32)) for i in (0, 1)]
    package = Package("ipu21", 1, rows, steps, [], [])
    with pytest.raises(ModelError, match=rf"tile 0: the exchange row at {DATA:#x} .* another row"):
        run_package(package, {})


def test_input_written_over_a_row_is_an_error():
    rows = [np.array([0x40A00000], np.uint32)]
    x = tensor("x", (1, 4), "f32", "row_major", (1, 4), [0], [DATA], [(0, 0)])
    package = Package("ipu21", 1, rows, [ExchangeStep(DATA, np.array([0], np.int32))], [x], [])
    with pytest.raises(ModelError, match="overwritten by an input shard"):
        run_package(package, {"x": np.ones((1, 4), np.float32)})


# ---- package checks, each message pinned in full -----------------------------------------------
def copy_package(tiles: int, copy) -> Package:
    return Package("ipu21", tiles, [], [copy], [], [])


@pytest.mark.parametrize("package,message", [
    (copy_package(1, kernel("copy_words", [0], [DATA, DATA], [])),
     "step 0: kernel copy_words takes 1 scalars (words), the step gives 0"),
    (copy_package(1, kernel("copy_words", [0], [DATA, DATA, DATA], [4])),
     "step 0: kernel copy_words takes 2 pointers (out, src) on each of 1 tiles; the step's "
     "pointer array has shape (1, 3)"),
    (copy_package(2, kernel("copy_words", [0, 0], [[DATA, DATA], [DATA, DATA]], [4])),
     "step 0: kernel copy_words lists a tile more than once"),
    (copy_package(1, kernel("copy_words", [3], [DATA, DATA], [4])),
     "step 0: kernel copy_words: tile 3 does not exist (the package has 1 tiles)"),
    (Package("ipu21", 1, [np.array([0x40A00000], np.uint32), np.array([0x40A00001], np.uint32)],
             [ExchangeStep(DATA, np.array([i], np.int32)) for i in (0, 1)], [], []),
     f"tile 0: the exchange row at {DATA:#x} (1 words) is overwritten by another row of the "
     "tile image"),
])
def test_malformed_packages_are_named_errors(package, message):
    with pytest.raises(ModelError) as info:
        run_package(package, {})
    assert str(info.value) == message


def test_a_required_kernel_is_refused_in_full(monkeypatch):
    required_kernel(monkeypatch)
    with pytest.raises(ModelError) as info:
        run_package(copy_package(1, kernel("future_kernel", [0], [DATA, DATA], [4])), {})
    assert str(info.value) == (
        "step 0: kernel 'future_kernel' has status Required in the ABI registry: its ABI is "
        "fixed but no implementation exists, so the package cannot run")


def test_uncovered_outputs_and_unknown_inputs_are_named_in_full():
    src = tensor("x", (4, 4), "f32", "row_major", (2, 4), [0], [DATA], [(0, 0)])
    package = Package("ipu21", 1, [], [], [src], [src])
    with pytest.raises(ModelError) as info:
        run_package(package, {"x": np.zeros((4, 4), np.float32)})
    assert str(info.value) == "output 'x': element (2, 0) is in no shard (8 elements uncovered)"
    with pytest.raises(ModelError) as info:
        run_package(package, {"y": np.zeros((4, 4), np.float32)})
    assert str(info.value) == ("inputs do not match the package: missing ['x'], unknown ['y'] "
                               "(the package's inputs: ['x'])")
