"""Diagnostics that no other test pinned: each bad input gives one message naming what is wrong
(op, value, option, file, field), never a Python traceback.

Verifier and pass errors of the dialects are pinned by the lit `invalid*.mlir` files; this file
covers the command-line drivers (`ipu-opt`, `ipu-run`, `ipu-objdump`), `mid-to-tile`, and the
library-level errors of `device/`, `interpreters/` and `frontend/`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from e2e_support import compile_case, gemm_module
from typer.testing import CliRunner
from xdsl.dialects.builtin import f32
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException, VerifyException

from device.exchange_timeline import TimelineError, row_timeline
from device.isa import DecodeError, Send, decode
from device.model import ModelError, run_package
from device.package import Package, PackageError
from device.target import IPU21
from frontend.builder import GraphBuilder
from interpreters.graph import InterpreterError, run_function
from passes.mid_to_tile import MidToTilePass
from tools.ipu_objdump import app as objdump_app
from tools.ipu_opt import IpuOptMain
from tools.ipu_run import EXIT_DIAGNOSTIC, run_main
from tools.registry import make_context
from tools.usage import EXIT_USAGE

REPO = Path(__file__).resolve().parents[2]

GEMM = """func.func @{name}(%a: tensor<64x64x{t}>, %b: tensor<64x64x{t}>) -> tensor<64x64x{t}> {{
  %c = graph.gemm %a, %b : (tensor<64x64x{t}>, tensor<64x64x{t}>) -> tensor<64x64x{t}>
  func.return %c : tensor<64x64x{t}>
}}
"""


def write(tmp_path: Path, text: str, name: str = "input.mlir") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---- ipu-opt ---------------------------------------------------------------------------------

def ipu_opt(args: list[str], capsys) -> tuple[int, str]:
    """Run the driver in-process; (exit status, stderr)."""
    try:
        IpuOptMain(args=args).run()
        status = 0
    except SystemExit as stop:
        status = stop.code
    return status, capsys.readouterr().err


@pytest.mark.parametrize("pipeline,message", [
    ("no-such-pass", "Unrecognized passes: ['no-such-pass']"),
    ("graph-to-mid{tiles=4 bogus=1}", 'Provided arguments ["bogus"] not found'),
    ("graph-to-mid{tiles=four}", "Incompatible types: given ('four',)"),
    ("graph-to-mid{tiles=4 inputs=xx}", "Incompatible types: given ('xx',)"),
    ("graph-to-mid{tiles=4", "Malformed pass arguments"),
])
def test_ipu_opt_bad_pipeline_is_a_usage_error(pipeline, message, tmp_path, capsys):
    path = write(tmp_path, GEMM.format(name="f", t="f32"))
    status, err = ipu_opt([str(path), "-p", pipeline], capsys)
    assert status == EXIT_USAGE
    assert err.startswith(f"ipu-opt: error: pass pipeline '{pipeline}': ") and message in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("name,message", [
    ("missing.mlir", "No such file or directory"),
    ("input.txt", "Unrecognized file extension 'txt'"),
    ("a_directory", "Is a directory"),
])
def test_ipu_opt_unreadable_input_is_a_usage_error(name, message, tmp_path, capsys):
    write(tmp_path, GEMM.format(name="f", t="f32"), "input.txt")
    (tmp_path / "a_directory").mkdir()
    status, err = ipu_opt([str(tmp_path / name)], capsys)
    assert status == EXIT_USAGE
    assert err.startswith(f"ipu-opt: error: input {tmp_path / name}: ") and message in err, err


@pytest.mark.parametrize("text,pipeline,message", [
    ("", "ipu-pipeline{tiles=4}", "Could not parse entire input"),
    ("func.func @f(%a: tensor<4xf32>) {\n  %c = graph.frobnicate %a : tensor<4xf32>\n"
     "  func.return\n}\n", "ipu-pipeline{tiles=4}", "Operation graph.frobnicate is not registered"),
    (GEMM.format(name="f", t="f32").replace("%a: tensor<64x64xf32>", "%a: tensor<64x32xf32>", 1)
     .replace("(tensor<64x64xf32>, tensor", "(tensor<64x32xf32>, tensor", 1),
     "ipu-pipeline{tiles=4}", "graph.gemm: contraction extents differ: lhs [64, 32] axis -1 is 32"),
    (GEMM.format(name="f", t="f32"), "ipu-pipeline{tiles=0}",
     "graph-to-mid: tiles=0 is outside 1..1472, the tile count of target ipu21"),
    (GEMM.format(name="f", t="f32"), "ipu-pipeline{tiles=100000}",
     "graph-to-mid: tiles=100000 is outside 1..1472"),
])
def test_ipu_opt_bad_input_exits_1_with_a_diagnostic(text, pipeline, message, tmp_path, capsys):
    path = write(tmp_path, text)
    status, err = ipu_opt([str(path), "-p", pipeline], capsys)
    assert status == 1 and message in err, err
    assert "Traceback" not in err


# ---- ipu-run ---------------------------------------------------------------------------------

def ipu_run(capsys, path, **options) -> tuple[int, str, str]:
    status = run_main(path, **options)
    out, err = capsys.readouterr()
    return status, out, err


def test_ipu_run_several_functions_need_function_option(tmp_path, capsys):
    path = write(tmp_path, GEMM.format(name="first", t="f32") + GEMM.format(name="second", t="f16"))
    status, out, err = ipu_run(capsys, path, tiles=2)
    assert status == EXIT_DIAGNOSTIC and "check:" not in out
    assert err == ("ipu-run: error: the input holds 2 functions (@first, @second): choose one "
                   "with --function\n")
    status, out, _ = ipu_run(capsys, path, tiles=2, function="second")
    assert "check: PASS" in out


def test_ipu_run_function_without_results_is_a_diagnostic(tmp_path, capsys):
    path = write(tmp_path, "func.func @nothing() {\n  func.return\n}\n")
    status, out, err = ipu_run(capsys, path, tiles=2)
    assert status == EXIT_DIAGNOSTIC and "check:" not in out
    assert "ipu-run: error: @nothing has no results: nothing to run or check" in err


def test_ipu_run_negative_seed_names_the_option(tmp_path, capsys):
    path = write(tmp_path, GEMM.format(name="f", t="f32"))
    status, _, err = ipu_run(capsys, path, tiles=2, seed=-1)
    assert status == EXIT_DIAGNOSTIC
    assert "ipu-run: error: --seed must be >= 0, got -1" in err


@pytest.mark.parametrize("array,message", [
    (np.arange(64 * 64).reshape(64, 64), "--input a: dtype int64 is not a floating-point type "
                                         "(the argument holds float32)"),
    (np.ones((64, 64), np.complex64), "--input a: dtype complex64 is not a floating-point type"),
    (np.ones((64, 64), bool), "--input a: dtype bool is not a floating-point type"),
    (np.ones((64,), np.float32), "--input a: shape (64,) does not match the argument's (64, 64)"),
])
def test_ipu_run_input_of_wrong_dtype_or_shape(array, message, tmp_path, capsys):
    path = write(tmp_path, GEMM.format(name="f", t="f32"))
    np.save(tmp_path / "a.npy", array)
    status, out, err = ipu_run(capsys, path, tiles=2, inputs=[f"a={tmp_path / 'a.npy'}"])
    assert status == EXIT_DIAGNOSTIC and "check:" not in out
    assert message in err, err


@pytest.mark.parametrize("make,message", [
    (lambda p: p.mkdir(), "not a regular file"),
    (lambda p: p.write_text("not numpy"), "not a readable .npy array"),
    (lambda p: np.save(p, np.array([[None]], dtype=object)), "never unpickled"),
])
def test_ipu_run_unreadable_input_names_option_and_file(make, message, tmp_path, capsys):
    path = write(tmp_path, GEMM.format(name="f", t="f32"))
    bad = tmp_path / "bad.npy"
    make(bad)
    status, _, err = ipu_run(capsys, path, tiles=2, inputs=[f"a={bad}"])
    assert status == EXIT_DIAGNOSTIC
    assert err.startswith(f"ipu-run: error: --input a: cannot read '{bad}': ") and message in err


def test_ipu_run_unsupported_element_type(tmp_path, capsys):
    path = write(tmp_path, "func.func @f(%a: tensor<4xi16>) -> tensor<4xi16> {\n"
                           "  func.return %a : tensor<4xi16>\n}\n")
    status, _, err = ipu_run(capsys, path, tiles=2)
    assert status == EXIT_DIAGNOSTIC
    assert err.startswith(f"{path}:1:1: error: func.func @f: argument %a has element type i16; "
                          "graph tensors are f32, f16 or f8E4M3FNUZ\n"), err


def test_ipu_run_verifier_error_shows_the_op(tmp_path, capsys):
    """xDSL's own property message names neither op nor property: ipu-run gives the op's
    file:line:col and name, then the source line."""
    text = GEMM.format(name="f", t="f32").replace(
        "%c = graph.gemm %a, %b :", '%c = "graph.gemm"(%a, %b) <{transpose_lhs = 3 : i64}> :')
    path = write(tmp_path, text)
    status, _, err = ipu_run(capsys, path, tiles=2)
    assert status == EXIT_DIAGNOSTIC
    assert err.startswith(f"{path}:2:3: error: graph.gemm: 3 : i64 should be of base attribute "
                          'unit\n  %c = "graph.gemm"(%a, %b) <{transpose_lhs = 3 : i64}>'), err


@pytest.mark.parametrize("tiles", [0, -3, 100_000])
def test_ipu_run_tile_count_out_of_range(tiles, tmp_path, capsys):
    status, out, err = ipu_run(capsys, write(tmp_path, GEMM.format(name="f", t="f16")), tiles=tiles)
    assert status == EXIT_DIAGNOSTIC and "check:" not in out
    assert f"ipu-run: compile error: graph-to-mid: tiles={tiles} is outside 1..{IPU21.tiles}" in err


@pytest.mark.slow
def test_ipu_run_gemm_too_big_for_the_tiles(tmp_path, capsys):
    text = GEMM.format(name="f", t="f32").replace("64x64", "4096x4096")
    status, _, err = ipu_run(capsys, write(tmp_path, text), tiles=2)
    assert status == EXIT_DIAGNOSTIC
    assert "graph.gemm %c: no valid operator plan:" in err
    assert "an output-row tile needs" in err and "outside the code region" in err


@pytest.mark.slow
def test_command_lines_never_print_a_traceback(tmp_path):
    """The installed entry points, as a user runs them (the in-process tests above cover the
    messages; this checks the exit statuses and stderr of the real processes)."""
    two = write(tmp_path, GEMM.format(name="first", t="f32") + GEMM.format(name="second", t="f16"))
    opt = subprocess.run([sys.executable, "-m", "tools.ipu_opt", str(two), "-p",
                          "graph-to-mid{tiles=4 bogus=1}"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert opt.returncode == EXIT_USAGE and "Traceback" not in opt.stderr
    assert "ipu-opt: error: pass pipeline" in opt.stderr
    run = subprocess.run([sys.executable, "-m", "tools.ipu_run", str(two), "--seed", "-1"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == EXIT_DIAGNOSTIC and "Traceback" not in run.stderr
    assert run.stderr.startswith("ipu-run: error: ") and run.stderr.count("\n") == 1


# ---- ipu-objdump -----------------------------------------------------------------------------

@pytest.mark.parametrize("args,message,status", [
    (["100000000"], "'100000000' does not fit in 32 bits", 1),
    ([], "give exactly one of: hex words, --file, or --package with --tile", EXIT_USAGE),
    (["--package", "pkg"], "--package needs --tile", EXIT_USAGE),
])
def test_objdump_usage_errors(args, message, status):
    result = CliRunner().invoke(objdump_app, args)
    assert result.exit_code == status
    assert f"ipu-objdump: {message}" in result.output


# ---- mid-to-tile -----------------------------------------------------------------------------

def mid_gemm_module(lhs: str, out: str, returned: str = "%c") -> str:
    """A 64x64 f32 mid.gemm, compiled for 4 tiles, whose lhs and result formats are given."""
    rhs = "#mid.format<f32, amp_right, [64 x 1 pad, 64 x 1 pad], replication = 1, group = 2, standard>"
    plan = (
        '#mid.plan<"amp_gemm_f32_r16", #mid.dispatch<gemm_blocks, inner = 64, columns = 64, '
        "init = @amp_gemm_f32_init, accum = @amp_gemm_f32_accum>, accumulate = f32, "
        'amp = "A8/B8x16/C16", operands = [#mid.operand<lhs : left, #L, align = 32, tail = 16>, '
        "#mid.operand<rhs : right, #R, align = 32, tail = 0>, "
        "#mid.operand<out : output, #O, align = 32, tail = 0>], distinct = [(out, lhs)], alias = none>"
    )
    results = ", ".join(["tensor<64x64xf32, #O>"] * len(returned.split(",")))
    return (
        f"#L = {lhs}\n#R = {rhs}\n#O = {out}\n"
        'builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 4, '
        'indivisible = pad, inputs = consumer, catalog = ["amp_gemm_f32_r16"], scheduling = '
        "in_order, profiling = off>} {\n"
        f"  func.func @f(%a: tensor<64x64xf32, #L>, %b: tensor<64x64xf32, #R>) -> ({results}) {{\n"
        f"    %c = mid.gemm %a, %b plan {plan} : (tensor<64x64xf32, #L>, tensor<64x64xf32, #R>) "
        "-> tensor<64x64xf32, #O>\n"
        f"    func.return {returned} : {results}\n  }}\n}}\n"
    )


LEFT = "#mid.format<f32, amp_left, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, standard>"
OUT = "#mid.format<f32, amp_output, [16 x 2 pad, 64 x 1 pad], replication = 1, group = 2, interleaved>"


def lower_mid(text: str) -> None:
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    MidToTilePass().apply(ctx, module)


@pytest.mark.parametrize("lhs,out,returned,message", [
    (LEFT.replace("amp_left", "row_major"), OUT, "%c",
     "mid-to-tile: mid.gemm %c: lhs is stored row_major, the AMP GEMM plan needs amp_left"),
    (LEFT.replace("replication = 1, group = 2", "replication = 2, group = 4"), OUT, "%c",
     "mid-to-tile: mid.gemm %c: lhs is replicated; the AMP plan stores it once"),
    (LEFT, OUT.replace("[16 x 2 pad, 64 x 1 pad]", "[16 x 1 pad, 64 x 2 pad]"), "%c",
     "mid-to-tile: mid.gemm %c: result partitions [1, 2]; the AMP plan partitions only the rows"),
    (LEFT.replace("16 x 2 pad", "16 x 4 pad").replace("group = 2", "group = 4"), OUT, "%c",
     "mid-to-tile: mid.gemm %c: lhs rows (4 partitions of 16) and result rows (2 partitions of "
     "32) are cut differently"),
])
def test_mid_to_tile_rejects_plans_it_cannot_lower(lhs, out, returned, message):
    with pytest.raises(PassFailedException) as info:
        lower_mid(mid_gemm_module(lhs, out, returned))
    assert str(info.value) == message


# ---- device: ISA, timelines, model, package --------------------------------------------------

@pytest.mark.parametrize("words,message", [
    ([1 << 32], "word 0 (0x00000000): 4294967296 is not a 32-bit word"),
    ([0xF0000000], "word 0 (0xf0000000): sendpicp is missing its inline word"),
    ([0xF0000000, 1 << 33], "word 1 (0x00000000): 8589934592 is not a 32-bit word"),
])
def test_decode_errors_name_word_and_reason(words, message):
    with pytest.raises(DecodeError) as info:
        decode(words)
    assert str(info.value) == message


def test_timeline_rejects_unaligned_64_bit_items():
    with pytest.raises(TimelineError, match=r"send 0, 0x5001, 5: a 64-bit stream \(sctl 5\) "
                                            r"reads word address 0x5001, which is odd"):
        row_timeline([Send(0, 0x5001, 5)])


@pytest.fixture(scope="module")
def small_package() -> tuple[Package, dict]:
    case = compile_case(gemm_module([64, 64], [64, 64], f32), tiles=2)
    return case.package, case.feeds


def first_exchange(package: Package) -> int:
    return next(i for i, s in enumerate(package.steps) if hasattr(s, "row_id"))


def test_model_checks_the_package_target(small_package):
    package, feeds = small_package
    assert run_package(package, feeds).outputs  # the unmodified package runs
    with pytest.raises(ModelError, match="the package is for target 'ipu99', the model runs 'ipu21'"):
        run_package(replace(package, target="ipu99"), feeds)
    with pytest.raises(ModelError, match=f"the package uses 5000 tiles; ipu21 has {IPU21.tiles}"):
        run_package(replace(package, tiles=5000), feeds)


def test_model_rejects_malformed_exchange_steps(small_package):
    package, feeds = small_package
    index = first_exchange(package)
    step = package.steps[index]
    short = replace(package, steps=[*package.steps[:index], replace(step, row_id=step.row_id[:1]),
                                    *package.steps[index + 1:]])
    with pytest.raises(ModelError, match=rf"step {index}.*: row_id has 1 entries for 2 tiles"):
        run_package(short, feeds)
    missing_row = np.array(step.row_id)
    missing_row[0] = len(package.rows)
    bad = replace(package, steps=[*package.steps[:index], replace(step, row_id=missing_row),
                                  *package.steps[index + 1:]])
    with pytest.raises(ModelError, match=rf"tile 0 uses row {len(package.rows)}, but the package "
                                         rf"has {len(package.rows)} rows"):
        run_package(bad, feeds)


def test_model_rejects_unknown_steps_and_bad_host_metadata(small_package):
    package, feeds = small_package
    with pytest.raises(ModelError, match=rf"step {len(package.steps)}: unknown step type str"):
        run_package(replace(package, steps=[*package.steps, "halt"]), feeds)
    tensor = package.inputs[0]
    wrong_rank = replace(tensor, padded=tensor.padded[:1])
    with pytest.raises(ModelError, match=rf"input '{tensor.name}': shape .* padded shard .* and "
                                         r"origins of shape .* disagree on the rank"):
        run_package(replace(package, inputs=[wrong_rank, *package.inputs[1:]]), feeds)
    fewer = replace(tensor, addresses=tensor.addresses[:0])
    with pytest.raises(ModelError, match=rf"input '{tensor.name}': tiles, addresses and origins "
                                         r"have different shard counts"):
        run_package(replace(package, inputs=[fewer, *package.inputs[1:]]), feeds)
    outside = replace(tensor, addresses=np.full_like(tensor.addresses, IPU21.memory_end))
    with pytest.raises(ModelError, match=r"bytes \[0x[0-9a-f]+, 0x[0-9a-f]+\) are outside tile "
                                         r"memory"):
        run_package(replace(package, inputs=[outside, *package.inputs[1:]]), feeds)


def test_package_load_rejects_another_format_version(small_package, tmp_path):
    package, _ = small_package
    directory = package.save(tmp_path / "pkg")
    meta_path = next(p for p in Path(directory).iterdir() if p.suffix == ".json")
    meta = json.loads(meta_path.read_text())
    meta["format_version"] = 999
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(PackageError, match="format_version: the package has format 999, this "
                                           "ipu-stack reads format"):
        Package.load(directory)


# ---- reference interpreter and builder -------------------------------------------------------

def test_interpreter_checks_input_count_and_shapes():
    module = gemm_module([4, 8], [8, 2], f32)
    with pytest.raises(InterpreterError, match=r"@gemm takes 2 inputs \(a, b\), got 1"):
        run_function(module, [np.zeros((4, 8), np.float32)])
    with pytest.raises(InterpreterError, match=r"input b: shape \(2, 8\) does not match the "
                                               r"argument type"):
        run_function(module, [np.zeros((4, 8), np.float32), np.zeros((2, 8), np.float32)])


def test_builder_output_rules():
    g = GraphBuilder("empty")
    g.input([4, 4], f32, name="x")
    with pytest.raises(VerifyException, match=r"graph @empty has no outputs: call output\(\.\.\.\) "
                                              r"first"):
        g.build()
    g = GraphBuilder("loop")
    x = g.input([4, 4], f32, name="x")

    def body(carried, invariant, sequence):
        g.output(carried[0])
        return carried

    with pytest.raises(VerifyException, match=r"output\(\) inside a repeat body: return the "
                                              r"carried values instead"):
        g.repeat(2, body, carried=[x])


def test_interpreter_names_ops_without_semantics():
    from xdsl.dialects.test import TestOp

    module = gemm_module([4, 8], [8, 2], f32)
    gemm_op = next(op for op in module.walk() if op.name == "graph.gemm")
    gemm_op.parent.insert_op_before(TestOp(result_types=[gemm_op.result.type]), gemm_op)
    with pytest.raises(InterpreterError, match="test.op is not a graph op; the reference "
                                               "interpreter runs graph.add, graph.attention") as e:
        run_function(module, [np.zeros((4, 8), np.float32), np.zeros((8, 2), np.float32)])
    assert e.value.op is not None and e.value.op.name == "test.op"


def test_format_scale_only_on_fp8():
    from ipu_dialects.mid import AxisTilingAttr, TensorFormatAttr

    assert TensorFormatAttr("f8f143", "row_major", [AxisTilingAttr(1, 1)], scale=-3).scale.data == -3
    # f16 too: the FP8 AMP's partials, in units of the FP8 result's scale
    assert TensorFormatAttr("f16", "row_major", [AxisTilingAttr(1, 1)], scale=-3).scale.data == -3
    with pytest.raises(VerifyException,
                       match="format: only f8f143 and f16 have a scale, f32 has -3"):
        TensorFormatAttr("f32", "row_major", [AxisTilingAttr(1, 1)], scale=-3)


def test_incoming_writes_need_a_pic_first():
    from device.memory_conflicts import incoming_writes

    with pytest.raises(ValueError, match="event 0: a word arrives before any PIC set the pointer"):
        incoming_writes([], [True], 1)


@pytest.mark.parametrize("old,new,message", [
    ("inner = 64", "inner = 32", "mid-to-tile: mid.gemm %c: dispatch blocks inner = 32, columns = "
                                 "64; the AMP kernels take 64x64"),
    ("tiles = 4,", "tiles = 1,", "mid-to-tile: %a is stored on 2 tiles, but the module is "
                                 "configured for 1"),
    ("ipu.config", "ipu.other", "mid-to-tile: the module has no 'ipu.config' #mid.config "
                                "attribute; run graph-to-mid first (it records the tile count and "
                                "target)"),
    ("    func.return", "    %d = arith.constant 1 : i32\n    func.return",
     "mid-to-tile: cannot lower arith.constant (result %d): no operator of passes/operators "
     "lowers it"),
])
def test_mid_to_tile_rejects_modules_it_cannot_lower(old, new, message):
    text = mid_gemm_module(LEFT, OUT)
    assert old in text
    with pytest.raises(PassFailedException) as info:
        lower_mid(text.replace(old, new))
    assert str(info.value) == message


# ---- one exit status for a usage error, in every tool ------------------------------------------

def usage_error_status(tool: str, tmp_path: Path, capsys) -> tuple[int, str]:
    """(exit status, stderr or output) of `tool` given a bad command line."""
    from tools.ipu_as import app as as_app
    from tools.ipu_import import import_main

    if tool == "ipu-opt":
        return ipu_opt([str(write(tmp_path, GEMM.format(name="f", t="f32"))), "-p", "bogus"], capsys)
    if tool == "ipu-run":
        status = run_main(write(tmp_path, GEMM.format(name="f", t="f32")), tiles=2, seed=-1)
        return status, capsys.readouterr().err
    if tool == "ipu-import":
        return import_main(tmp_path / "missing.onnx", tmp_path / "out"), capsys.readouterr().err
    app = objdump_app if tool == "ipu-objdump" else as_app
    result = CliRunner().invoke(app, ["--address", "zz"])
    return result.exit_code, result.output


@pytest.mark.parametrize("tool,message", [
    ("ipu-opt", "ipu-opt: error: pass pipeline 'bogus': "),
    ("ipu-run", "ipu-run: error: --seed must be >= 0, got -1"),
    ("ipu-objdump", "ipu-objdump: --address 'zz' is not an integer"),
    ("ipu-as", "ipu-as: --address 'zz' is not an integer"),
    ("ipu-import", "ipu-import: error: cannot read '"),
])
def test_every_tool_exits_2_for_a_usage_error(tool, message, tmp_path, capsys):
    """As click and typer do for a bad command line: `tools.usage.EXIT_USAGE`."""
    status, text = usage_error_status(tool, tmp_path, capsys)
    assert EXIT_USAGE == 2 and status == EXIT_USAGE, text
    assert message in text and "Traceback" not in text, text
