"""`ipu-run --reference --save-outputs` writes exactly what `run_function` computes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from interpreters.graph import find_function, run_function
from tools.ipu_run import random_inputs
from tools.registry import make_context

REPO = Path(__file__).resolve().parents[2]


def parse_file(path: Path):
    ctx = make_context()
    return Parser(ctx, path.read_text(), str(path)).parse_module()


@pytest.mark.parametrize("example", ["transformer_block.mlir", "repeat_layers.mlir"])
def test_reference_outputs_saved_by_ipu_run(example, tmp_path):
    path = REPO / "examples" / example
    proc = subprocess.run(
        [sys.executable, "-m", "tools.ipu_run", str(path), "--reference", "--seed", "3",
         "--save-outputs", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    module = parse_file(path)
    expected = run_function(module, random_inputs(find_function(module), 3))
    saved = sorted(tmp_path.glob("*.npy"))
    assert [p.name for p in saved] == [f"result{i}.npy" for i in range(len(expected))]
    for file, want in zip(saved, expected):
        got = np.load(file)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    # a different seed gives different numbers, so the comparison above is not vacuous
    other = run_function(module, random_inputs(find_function(module), 4))
    assert not np.array_equal(other[0], expected[0])


# ---- malformed input: a located diagnostic and exit 2, with or without --reference ----------

from tools.ipu_run import EXIT_DIAGNOSTIC, EXIT_PASS, run_main  # noqa: E402

BAD_INPUTS = {
    # name: (text, first line of stderr after "<path>:")
    "attention_zero_head_dim": (
        """func.func @f(%q: tensor<1x4x0xf32>) -> tensor<1x4x0xf32> {
  %o = graph.attention %q, %q, %q : (tensor<1x4x0xf32>, tensor<1x4x0xf32>, tensor<1x4x0xf32>) -> tensor<1x4x0xf32>
  func.return %o : tensor<1x4x0xf32>
}""",
        "2:3: error: graph.attention: query has shape [1, 4, 0] with extent 0 at axis 2; "
        "graph tensors need every extent >= 1",
    ),
    "attention_zero_keys": (
        """func.func @f(%q: tensor<1x4x2xf32>, %k: tensor<1x0x2xf32>) -> tensor<1x4x2xf32> {
  %o = graph.attention %q, %k, %k : (tensor<1x4x2xf32>, tensor<1x0x2xf32>, tensor<1x0x2xf32>) -> tensor<1x4x2xf32>
  func.return %o : tensor<1x4x2xf32>
}""",
        "2:3: error: graph.attention: key has shape [1, 0, 2] with extent 0 at axis 1; "
        "graph tensors need every extent >= 1",
    ),
    "repeat_missing_yield": (
        """func.func @f(%x0: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) {
    %y = graph.gelu %x : tensor<4xf32> -> tensor<4xf32>
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}""",
        "2:3: error: graph.repeat: body must end with graph.yield",
    ),
    "gemm_mixed_types": (
        """func.func @f(%a: tensor<4x4xf32>) -> tensor<4x4xf16> {
  %b = graph.gemm %a, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf16>
  func.return %b : tensor<4x4xf16>
}""",
        "2:3: error: graph.gemm: result element type f16 differs from lhs element type f32",
    ),
    "return_types": (
        """func.func @f(%a: tensor<4xf32>) -> tensor<8xf32> {
  %b = graph.gelu %a : tensor<4xf32> -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}""",
        "3:3: error: func.return: Expected arguments to have the same types as the function "
        "output types",
    ),
}


@pytest.mark.parametrize("reference", [True, False])
@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_verifier_errors_name_the_op_and_its_position(name, reference, tmp_path, capsys):
    text, first_line = BAD_INPUTS[name]
    path = tmp_path / f"{name}.mlir"
    path.write_text(text + "\n")
    status = run_main(path, tiles=2, reference=reference)
    out, err = capsys.readouterr()
    assert status == EXIT_DIAGNOSTIC and "check:" not in out and "reference:" not in out
    assert err.startswith(f"{path}:{first_line}"), err
    line, column = (int(n) for n in first_line.split(":")[:2])
    source_line, caret = err.splitlines()[1:3]
    assert source_line == text.splitlines()[line - 1]  # the op's own line, then a caret under it
    assert caret == " " * (column - 1) + "^"


@pytest.mark.parametrize("text,message", [
    # attribute and count range errors are parse errors at the offending text
    ("func.func @f(%a: tensor<3xf8E4M3FNUZ, #graph.fp8_scale<99>>) -> tensor<3xf8E4M3FNUZ> {\n"
     "  %c = graph.gelu %a : tensor<3xf8E4M3FNUZ, #graph.fp8_scale<99>> -> tensor<3xf8E4M3FNUZ>\n"
     "  func.return %c : tensor<3xf8E4M3FNUZ>\n}\n",
     ":1:56: error: #graph.fp8_scale: exponent 99 is outside -31..31\n"),
    ("func.func @f(%x0: tensor<4xf32>) -> tensor<4xf32> {\n"
     "  %r = graph.repeat 99999999999999999999999 carried(%x = %x0 : tensor<4xf32>) {\n"
     "    graph.yield %x : tensor<4xf32>\n  } -> tensor<4xf32>\n"
     "  func.return %r : tensor<4xf32>\n}\n",
     ":2:21: error: graph.repeat: iteration count 99999999999999999999999 does not fit in a "
     "signed 64-bit integer\n"),
])
def test_range_errors_point_at_the_text(text, message, tmp_path, capsys):
    path = tmp_path / "range.mlir"
    path.write_text(text)
    assert run_main(path, tiles=2, reference=True) == EXIT_DIAGNOSTIC
    err = capsys.readouterr().err
    assert err.startswith(f"{path}{message}"), err
    assert "Traceback" not in err


# ---- parse errors: MLIR style, message on the first line, then the line and carets -----------


@pytest.mark.parametrize("text,line,column,message,carets", [
    ("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
     "  %b = graph.gelu %a : tensor<2xf32> -> tensor<2xf3>\n"
     "  func.return %b : tensor<2xf32>\n}\n",
     2, 50, "Expected shape type.", "^^"),
    ("this is not mlir\n", 1, 6, "Operation this is not registered", "^^"),
])
def test_parse_errors_are_mlir_style(text, line, column, message, carets, tmp_path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    assert run_main(path, tiles=2, reference=True) == EXIT_DIAGNOSTIC
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"{path}:{line}:{column}: error: {message}",
        text.splitlines()[line - 1],
        " " * (column - 1) + carets,
    ]


def test_a_parse_error_past_the_last_line_has_no_source_line(tmp_path, capsys):
    path = tmp_path / "undefined.mlir"
    path.write_text("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                    "  func.return %undefined : tensor<2xf32>\n}\n")
    assert run_main(path, tiles=2, reference=True) == EXIT_DIAGNOSTIC
    assert capsys.readouterr().err == (
        f"{path}:4:1: error: values used but not defined: [%undefined]\n"
    )


def test_ipu_run_command_prints_parse_errors_mlir_style(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                    "  %b = graph.gelu %a : tensor<2xf32> -> tensor<2xf3>\n}\n")
    proc = subprocess.run([sys.executable, "-m", "tools.ipu_run", str(path), "--reference"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == EXIT_DIAGNOSTIC
    assert proc.stderr.startswith(f"{path}:2:50: error: Expected shape type.\n"), proc.stderr


# ---- tensors too large to run: a located diagnostic before anything is allocated --------------


@pytest.mark.parametrize("text,first_line", [
    ("func.func @f(%a: tensor<99999999999999999999xf32>) -> tensor<99999999999999999999xf32> {\n"
     "  func.return %a : tensor<99999999999999999999xf32>\n}\n",
     "1:1: error: func.func: argument %a tensor<99999999999999999999xf32> has "
     "99999999999999999999 elements (399999999999999999996 bytes), more than the whole ipu21 "
     "memory (1472 tiles x 638976 bytes = 940572672 bytes): it can never run on the device"),
    ("func.func @f(%a: tensor<100000x100000x100000xf32>) -> tensor<2xf32> {\n"
     "  %b = graph.gelu %a : tensor<100000x100000x100000xf32> -> tensor<100000x100000x100000xf32>\n"
     "  %c = graph.gelu %b : tensor<100000x100000x100000xf32> -> tensor<100000x100000x100000xf32>\n"
     "  func.return %a : tensor<2xf32>\n}\n",
     None),  # the verifier's return-type error comes first: no size check on unverified IR
    ("func.func @f(%a: tensor<3000000000xf32>) -> tensor<3000000000xf32> {\n"
     "  %b = graph.gelu %a : tensor<3000000000xf32> -> tensor<3000000000xf32>\n"
     "  func.return %b : tensor<3000000000xf32>\n}\n",
     "1:1: error: func.func: argument %a tensor<3000000000xf32> has 3000000000 elements "
     "(12000000000 bytes), more than the whole ipu21 memory"),
])
def test_huge_tensors_are_diagnostics(text, first_line, tmp_path):
    path = tmp_path / "huge.mlir"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "tools.ipu_run", str(path), "--reference"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == EXIT_DIAGNOSTIC and "Traceback" not in proc.stderr, proc.stderr
    if first_line is not None:
        assert proc.stderr.startswith(f"{path}:{first_line}"), proc.stderr
        assert proc.stderr.splitlines()[1] == text.splitlines()[0]


def test_non_utf8_input_is_a_diagnostic(tmp_path, capsys):
    path = tmp_path / "binary.mlir"
    path.write_bytes(b"func.func @f() {\xff\xfe}\n")
    assert run_main(path, reference=True) == EXIT_DIAGNOSTIC
    err = capsys.readouterr().err
    assert err.startswith(f"ipu-run: error: {path} is not UTF-8 text: 'utf-8' codec can't decode "
                          "byte 0xff"), err


def test_ipu_opt_non_utf8_input_is_a_usage_error(tmp_path):
    path = tmp_path / "binary.mlir"
    path.write_bytes(b"func.func @f() {\xff\xfe}\n")
    proc = subprocess.run([sys.executable, "-m", "tools.ipu_opt", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"ipu-opt: error: input {path} is not UTF-8 text"), proc.stderr


# ---- FP8 results: saved as float32 values, read back by --input ------------------------------

FP8_FUNC = """func.func @f(%a: tensor<8xf8E4M3FNUZ, #graph.fp8_scale<-2>>) -> tensor<8xf8E4M3FNUZ, #graph.fp8_scale<-2>> {
  %g = graph.gelu %a : tensor<8xf8E4M3FNUZ, #graph.fp8_scale<-2>> -> tensor<8xf8E4M3FNUZ, #graph.fp8_scale<-2>>
  func.return %g : tensor<8xf8E4M3FNUZ, #graph.fp8_scale<-2>>
}
"""


def test_fp8_outputs_round_trip_through_input(tmp_path, capsys):
    from interpreters.graph import FP8

    path = tmp_path / "fp8.mlir"
    path.write_text(FP8_FUNC)
    module = parse_file(path)
    inputs = random_inputs(find_function(module), 5)
    (stored,) = run_function(module, inputs)
    assert stored.dtype == FP8
    first = tmp_path / "first"
    assert run_main(path, seed=5, reference=True, save_dir=first) == EXIT_PASS
    saved = np.load(first / "result0.npy")
    # float32 values q * 2**-2 of the stored FP8 numbers (exact), not raw bytes
    assert saved.dtype == np.float32
    np.testing.assert_array_equal(saved, stored.astype(np.float32) * 0.25)
    assert np.abs(saved).max() > 0
    # fed back as the input of the same signature, it is the same stored FP8 tensor again
    second = tmp_path / "second"
    assert run_main(path, reference=True, inputs=[f"a={first / 'result0.npy'}"],
                    save_dir=second) == EXIT_PASS
    (again,) = run_function(module, [stored])
    np.testing.assert_array_equal(np.load(second / "result0.npy"),
                                  again.astype(np.float32) * 0.25)
    capsys.readouterr()
