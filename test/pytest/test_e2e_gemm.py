"""End to end: graph GEMM -> `ipu-pipeline` -> package -> device model, checked against NumPy.

Every PASS case goes through `tools.ipu_run.run_main`, the function behind the `ipu-run`
command, on a graph module written to a file; the differential test and the output checks
drive `compile_module` and `run_package` directly and compare with the reference interpreter.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from e2e_support import compile_case, gemm_module, run_verdict, write_module
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import TensorType

from device.model import ModelError, run_package
from frontend.builder import f16, f32
from interpreters.graph import find_function, run_function
from tools import ipu_run
from tools.ipu_run import (
    EXIT_DIAGNOSTIC,
    EXIT_FAIL,
    EXIT_PASS,
    compare,
    compile_module,
    parse_module,
    random_inputs,
    run_main,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def gemm_file(tmp_path: Path, lhs, rhs, element_type, **transposes) -> Path:
    return write_module(gemm_module(lhs, rhs, element_type, **transposes), tmp_path / "gemm.mlir")


# ---- ipu-run PASSes ----------------------------------------------------------------------

PASS_CASES = [
    # (lhs shape, rhs shape, element type, tiles, indivisible)
    ([64, 64], [64, 64], f16, 1, "pad"),
    ([128, 192], [192, 128], f16, 4, "reject"),  # every extent divisible: reject accepts it
    ([100, 72], [72, 40], f16, 7, "pad"),  # no extent a multiple of 64: zero-padded
    ([130, 70], [70, 66], f16, 16, "pad"),
    ([96, 128], [128, 64], f32, 64, "pad"),
    ([130, 130], [130, 130], f32, 16, "pad"),
    ([64, 128], [128, 64], f32, 1, "reject"),
    ([2, 1, 100, 72], [3, 72, 40], f32, 4, "pad"),  # NumPy broadcast batches -> [2, 3, ...]
    ([2, 1, 48, 64], [3, 64, 80], f16, 7, "pad"),
    ([100, 72], [2, 72, 40], f32, 7, "pad"),  # rank 2 x rank 3
    ([2, 64, 64], [64, 128], f16, 16, "pad"),  # rank 3 x rank 2
    ([3, 1, 32, 64], [1, 2, 64, 64], f32, 4, "reject"),  # both operands broadcast
    # M = 16: a single output-row tile receives every rhs block from its home tile.
    ([16, 128], [128, 256], f16, 4, "pad"),
    ([16, 256], [256, 64], f32, 4, "pad"),
]


def case_id(case) -> str:
    lhs, rhs, element_type, tiles, indivisible = case
    shape = "x".join(map(str, lhs)) + "_" + "x".join(map(str, rhs))
    return f"{element_type}-{shape}-T{tiles}-{indivisible}"


@pytest.mark.parametrize("case", PASS_CASES, ids=[case_id(c) for c in PASS_CASES])
def test_ipu_run_passes(case, tmp_path, capsys):
    lhs, rhs, element_type, tiles, indivisible = case
    path = gemm_file(tmp_path, lhs, rhs, element_type)
    status = run_main(path, tiles=tiles, seed=1, indivisible=indivisible)
    out, err = capsys.readouterr()
    assert status == EXIT_PASS, out + err
    assert "check: PASS" in out
    assert f" of {tiles}" in out


@pytest.mark.parametrize("example,tiles", [("gemm_f16.mlir", 4), ("gemm_f32_batched.mlir", 7)])
def test_examples_pass(example, tiles, capsys):
    status = run_main(EXAMPLES / example, tiles=tiles)
    out, err = capsys.readouterr()
    assert status == EXIT_PASS, out + err
    assert "check: PASS" in out


# ---- diagnostics (exit 2) ------------------------------------------------------------------

REJECTED = [
    # (lhs, rhs, element type, the axis named in the message)
    ([100, 64], [64, 64], f16, "lhs axis -2 extent 100"),
    ([128, 72], [72, 64], f32, "lhs axis -1 extent 72"),
    ([128, 64], [64, 40], f16, "rhs axis -1 extent 40"),
]


@pytest.mark.parametrize("lhs,rhs,element_type,axis", REJECTED)
def test_reject_names_op_axis_and_extent(lhs, rhs, element_type, axis, tmp_path, capsys):
    path = gemm_file(tmp_path, lhs, rhs, element_type)
    status = run_main(path, tiles=4, indivisible="reject")
    out, err = capsys.readouterr()
    assert status == EXIT_DIAGNOSTIC
    assert "graph.gemm" in err and axis in err and "rejects padding" in err, err
    assert "check:" not in out
    # the same GEMM with padding compiles and passes: the rejection is about the tiling alone
    assert run_main(path, tiles=4, indivisible="pad") == EXIT_PASS


@pytest.mark.parametrize("transpose", ["transpose_lhs", "transpose_rhs"])
@pytest.mark.parametrize("tiles", [1, 4, 7])
def test_transposed_operand_runs_as_stored(transpose, tiles, tmp_path, capsys):
    """A transposed operand is stored transposed (amp_left_t / amp_right_t) and read by the AMP
    as the untransposed operand: the model's result must equal the reference's transpose-aware
    product, so a plan that ignored the flag would FAIL."""
    lhs, rhs = ([128, 64], [128, 96]) if transpose == "transpose_lhs" else ([64, 128], [96, 128])
    path = gemm_file(tmp_path, lhs, rhs, f16, **{transpose: True})
    assert run_main(path, tiles=tiles) == EXIT_PASS
    out, _ = capsys.readouterr()
    assert "check: PASS" in out


# ---- differential test -------------------------------------------------------------------

BATCH_PATTERNS = {
    "none": lambda b, c: ([], []),
    "shared": lambda b, c: ([b], [b]),
    "lhs_only": lambda b, c: ([b], []),
    "rhs_only": lambda b, c: ([], [c]),
    "broadcast": lambda b, c: ([b, 1], [c]),
}


@st.composite
def gemm_cases(draw):
    extent = st.integers(1, 130)
    m, k, n = draw(extent), draw(extent), draw(extent)
    pattern = draw(st.sampled_from(sorted(BATCH_PATTERNS)))
    lhs_batch, rhs_batch = BATCH_PATTERNS[pattern](draw(st.integers(1, 2)),
                                                   draw(st.integers(1, 2)))
    element_type = draw(st.sampled_from([f16, f32]))
    tiles = draw(st.sampled_from([1, 2, 3, 4, 7, 16]))
    transpose_lhs, transpose_rhs = draw(st.booleans()), draw(st.booleans())
    lhs = lhs_batch + ([k, m] if transpose_lhs else [m, k])
    rhs = rhs_batch + ([n, k] if transpose_rhs else [k, n])
    return lhs, rhs, element_type, tiles, transpose_lhs, transpose_rhs


@settings(max_examples=10, deadline=None)
@given(gemm_cases(), st.integers(0, 2**16))
def test_device_model_matches_reference(case, seed):
    lhs, rhs, element_type, tiles, transpose_lhs, transpose_rhs = case
    module = gemm_module(lhs, rhs, element_type, transpose_lhs, transpose_rhs)
    compiled = compile_case(module, tiles, seed=seed)
    assert compiled.package.tiles == tiles
    assert run_verdict(compiled) is None, (lhs, rhs, element_type, tiles)


# ---- the command-line contract -------------------------------------------------------------

def test_save_outputs_are_the_model_outputs(tmp_path, capsys):
    path = gemm_file(tmp_path, [2, 40, 72], [72, 64], f32)
    assert run_main(path, tiles=4, seed=5, save_dir=tmp_path / "out") == EXIT_PASS
    saved = np.load(tmp_path / "out" / "result0.npy")
    compiled = compile_case(parse_module(path), 4, seed=5)
    model = run_package(compiled.package, compiled.feeds).outputs["result0"]
    assert saved.dtype == model.dtype and saved.shape == (2, 40, 64)
    np.testing.assert_array_equal(saved, model)
    assert np.abs(saved).max() > 0  # random inputs: a vacuous all-zero result would not do


def test_input_file_is_used(tmp_path, capsys):
    path = gemm_file(tmp_path, [48, 64], [64, 80], f16)
    lhs = (np.arange(48 * 64).reshape(48, 64) % 7 - 3).astype(np.float16)
    np.save(tmp_path / "a.npy", lhs)
    status = run_main(path, tiles=4, seed=9, inputs=[f"a={tmp_path / 'a.npy'}"],
                      save_dir=tmp_path / "out")
    assert status == EXIT_PASS
    saved = np.load(tmp_path / "out" / "result0.npy")
    module = parse_module(path)
    rhs = random_inputs(find_function(module), 9)[1]  # b stays random, from the same seed
    (want,) = run_function(module, [lhs, rhs])
    np.testing.assert_allclose(saved.astype(np.float64), want.astype(np.float64),
                               rtol=0, atol=1e-2 * np.abs(want).max())
    (random_result,) = run_function(module, random_inputs(find_function(module), 9))
    assert not np.allclose(saved, random_result)


@pytest.mark.parametrize("spec,message", [
    ("a", "--input expects NAME=PATH.npy"),
    ("q={dir}/ok.npy", "no argument 'q'"),
    ("a={dir}/missing.npy", "missing.npy"),
    ("a={dir}/wrong_shape.npy", "does not match"),
])
def test_bad_input_is_a_diagnostic(spec, message, tmp_path, capsys):
    path = gemm_file(tmp_path, [32, 64], [64, 64], f32)
    np.save(tmp_path / "ok.npy", np.zeros((32, 64), np.float32))
    np.save(tmp_path / "wrong_shape.npy", np.zeros((64, 32), np.float32))
    status = run_main(path, tiles=2, inputs=[spec.format(dir=tmp_path)])
    out, err = capsys.readouterr()
    assert status == EXIT_DIAGNOSTIC
    assert message in err and err.startswith("ipu-run: error:"), err
    assert "check:" not in out


def test_an_input_given_twice_is_a_diagnostic(tmp_path, capsys):
    path = gemm_file(tmp_path, [32, 64], [64, 64], f32)
    np.save(tmp_path / "ok.npy", np.zeros((32, 64), np.float32))
    spec = f"a={tmp_path / 'ok.npy'}"
    assert run_main(path, tiles=2, inputs=[spec, spec]) == EXIT_DIAGNOSTIC
    assert "ipu-run: error: --input a: given more than once" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["save_dir", "package_dir"])
@pytest.mark.parametrize("reference", [False, True])
def test_an_output_path_that_is_a_file_is_a_diagnostic(option, reference, tmp_path, capsys):
    path = gemm_file(tmp_path, [32, 64], [64, 64], f32)
    in_the_way = tmp_path / "a_file"
    in_the_way.write_text("not a directory")
    status = run_main(path, tiles=2, reference=reference, **{option: str(in_the_way)})
    out, err = capsys.readouterr()
    flag = {"save_dir": "--save-outputs", "package_dir": "--package"}[option]
    assert status == EXIT_DIAGNOSTIC, err
    assert err.startswith(f"ipu-run: error: {flag}: cannot use '{in_the_way}' as an output directory")
    assert "Traceback" not in err and "check:" not in out


def test_overflow_to_inf_where_the_reference_overflows_too_passes(tmp_path, capsys):
    """FP16 products past 65504 are inf in the reference and on the device alike: the check
    compares the finite elements and requires the infinities to agree."""
    path = gemm_file(tmp_path, [64, 64], [64, 64], f16)
    lhs = np.full((64, 64), 200.0, np.float16)
    lhs[1:] = 0.5  # only row 0 overflows: 64 * 200 * 200 = 2.56e6 > 65504
    np.save(tmp_path / "a.npy", lhs)
    np.save(tmp_path / "b.npy", np.full((64, 64), 200.0, np.float16))
    inputs = [f"a={tmp_path / 'a.npy'}", f"b={tmp_path / 'b.npy'}"]
    assert run_main(path, tiles=1, inputs=inputs, save_dir=tmp_path / "out") == EXIT_PASS
    out = capsys.readouterr().out
    saved = np.load(tmp_path / "out" / "result0.npy")
    assert np.isinf(saved[0]).all() and np.isfinite(saved[1:]).all()
    assert "max abs error: 0 " in out


def test_compare_needs_matching_infinities_no_nan_and_something_finite():
    types = [TensorType(f32, [2])]
    want = [np.array([1.0, np.inf], np.float32)]
    assert compare([np.array([1.0, np.inf], np.float32)], want, types).passed
    assert not compare([np.array([1.0, 3.0e38], np.float32)], want, types).passed
    assert not compare([np.array([1.0, -np.inf], np.float32)], want, types).passed
    assert not compare([np.array([np.nan, np.inf], np.float32)], want, types).passed
    nan = [np.array([np.nan, 2.0], np.float32)]
    assert not compare([np.array([np.nan, 2.0], np.float32)], nan, types).passed
    all_inf = [np.array([np.inf, np.inf], np.float32)]
    assert not compare(all_inf, all_inf, types).passed  # nothing finite was compared


def test_wrong_outputs_exit_1(tmp_path, capsys, monkeypatch):
    """A package computing wrong outputs makes ipu-run print FAIL and exit 1."""
    path = gemm_file(tmp_path, [64, 64], [64, 64], f16)

    def compile_with_wrong_lhs_panel(module, tiles, indivisible, profiling="off", **options):
        package = compile_module(module, tiles, indivisible, profiling, **options)
        # every GEMM call reads its left panel 32 bytes too far: wrong numbers, same shapes
        for step in package.steps:
            if getattr(step, "symbol", "").startswith("amp_gemm"):
                step.pointers[:, 1] += 32
        return package

    assert run_main(path, tiles=1) == EXIT_PASS
    capsys.readouterr()
    monkeypatch.setattr(ipu_run, "compile_module", compile_with_wrong_lhs_panel)
    assert run_main(path, tiles=1) == EXIT_FAIL
    out, _ = capsys.readouterr()
    assert "check: FAIL" in out


def test_model_error_exits_1(tmp_path, capsys, monkeypatch):
    path = gemm_file(tmp_path, [64, 64], [64, 64], f32)

    def stopping_model(package, inputs, **options):  # options: progress
        raise ModelError("step 0: stopped on purpose")

    monkeypatch.setattr("device.model.run_package", stopping_model)
    assert run_main(path, tiles=1) == EXIT_FAIL
    out, err = capsys.readouterr()
    assert "check: FAIL" in out and "stopped on purpose" in err


@pytest.mark.slow
def test_cli_exit_codes_and_no_traceback(tmp_path):
    """The installed command: 0 on PASS, 2 with a one-line message on a bad --input."""
    path = gemm_file(tmp_path, [32, 64], [64, 64], f16)
    command = [sys.executable, "-m", "tools.ipu_run", str(path), "--tiles", "4"]
    passed = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert passed.returncode == EXIT_PASS, passed.stderr
    assert "check: PASS" in passed.stdout
    np.save(tmp_path / "b.npy", np.zeros((3, 3), np.float16))
    bad = subprocess.run(command + ["--input", f"b={tmp_path / 'b.npy'}"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == EXIT_DIAGNOSTIC
    assert "Traceback" not in bad.stderr
    assert "--input b: shape (3, 3) does not match" in bad.stderr


def test_function_option_runs_one_function_of_several(tmp_path, capsys):
    """`--function NAME` compiles and runs that function alone, whatever else the file holds."""
    path = tmp_path / "two.mlir"
    path.write_text(
        "func.func @first(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> {\n"
        "  %c = graph.gemm %a, %b : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>\n"
        "  func.return %c : tensor<64x64xf16>\n}\n"
        "func.func @second(%a: tensor<48x64xf32>, %b: tensor<64x80xf32>) -> tensor<48x80xf32> {\n"
        "  %c = graph.gemm %a, %b : (tensor<48x64xf32>, tensor<64x80xf32>) -> tensor<48x80xf32>\n"
        "  func.return %c : tensor<48x80xf32>\n}\n")
    for name in ("first", "second"):
        status = run_main(path, tiles=4, function=name, save_dir=tmp_path / name)
        out, err = capsys.readouterr()
        assert status == EXIT_PASS, out + err
    assert np.load(tmp_path / "second" / "result0.npy").shape == (48, 80)


# ---- the cycle profile (profiling = cycles) -----------------------------------------------

def test_profile_groups_steps_by_work_and_adds_up_to_the_modeled_cycles(tmp_path, capsys):
    path = gemm_file(tmp_path, [130, 70], [70, 200], f16)
    assert run_main(path, tiles=4, profile=True) == EXIT_PASS
    out = capsys.readouterr().out
    total = int(out.split("modeled cycles: ")[1].split()[0])
    table = out.split("compile time:")[1].splitlines()[2:]  # after the header line
    cycles = [int(line.split()[0]) for line in table]
    kinds = {line.split()[3] for line in table}
    assert sum(cycles) == total and cycles == sorted(cycles, reverse=True)
    # the grid plan: its tiles read the blocks they hold in place, no home-tile copies
    assert kinds == {"exchange", "amp_gemm_f16p32_init", "amp_gemm_f16p32_accum",
                     "convert_shard"}
    assert not any("[" in line for line in table)  # iterations folded into one line per work


def test_no_profile_unless_asked(tmp_path, capsys):
    path = gemm_file(tmp_path, [64, 64], [64, 64], f32)
    assert run_main(path, tiles=2) == EXIT_PASS
    assert "share" not in capsys.readouterr().out


def test_cycle_profile_needs_one_count_per_step():
    from device.model.profile import cycle_profile

    compiled = compile_case(gemm_module([64, 64], [64, 64], f32), 2)
    steps = len(compiled.package.steps)
    with pytest.raises(ValueError, match=f"{steps - 1} step cycle counts for a package of {steps} steps"):
        cycle_profile(compiled.package, [0] * (steps - 1))


def test_an_f16_partial_sum_overflow_fails_with_an_explanation(tmp_path, capsys):
    """K = 128: block 0 sums to 76800 (> 65504, inf in f16), block 1 cancels it. The reference
    sums in float64 and gets 0; with gemm-partials=f16 the plan stores its partials in f16
    between blocks. The default FP32 partials get it right."""
    path = gemm_file(tmp_path, [64, 128], [128, 64], f16)
    lhs = np.full((64, 128), 30.0, np.float16)
    lhs[:, 64:] = -30.0
    np.save(tmp_path / "a.npy", lhs)
    np.save(tmp_path / "b.npy", np.full((128, 64), 40.0, np.float16))
    inputs = [f"a={tmp_path / 'a.npy'}", f"b={tmp_path / 'b.npy'}"]
    assert run_main(path, tiles=1, inputs=inputs, gemm_partials="f16") == EXIT_FAIL
    out, err = capsys.readouterr()
    assert "check: FAIL" in out
    assert f"note: {ipu_run.OVERFLOW_NOTE}" in err
    assert run_main(path, tiles=1, inputs=inputs) == EXIT_PASS
    out, err = capsys.readouterr()
    assert "check: PASS" in out and "overflows" not in err
