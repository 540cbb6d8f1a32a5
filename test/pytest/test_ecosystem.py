"""ipu-stack as an xDSL plugin and ipu-opt as an MLIR-style driver: the `xdsl.universe` entry
point, plain `xdsl-opt` running our pipeline, `ipu-opt --help/--version/--time-passes`."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from importlib.metadata import entry_points, version
from pathlib import Path

import pytest
from xdsl.universe import Universe

from ipu_dialects import get_all_dialects
from passes import get_all_passes
from passes.ipu_pipeline import STAGES
from tools.targets import get_all_targets

ROOT = Path(__file__).resolve().parents[2]
GEMM = str(ROOT / "examples" / "gemm_f16.mlir")
XDSL_OPT = Path(sys.executable).with_name("xdsl-opt")
OURS = {"graph", "mid", "tile", "exchange"}


def run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT)


def ipu_opt(*args: str) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "tools.ipu_opt", *args])


def test_registries_hold_only_our_names():
    assert set(get_all_dialects()) == OURS
    assert set(get_all_passes()) == {*STAGES, "ipu-pipeline", "convert-linalg-to-graph"}
    assert set(get_all_targets()) == {"ipu-asm", "ipu-rows"}


def test_the_entry_point_is_installed_and_merges_with_xdsl():
    (ours,) = [e for e in entry_points(group="xdsl.universe") if e.name == "ipu_stack"]
    assert ours.value == "tools.universe:IPU_UNIVERSE"
    universe = ours.load()
    assert set(universe.all_dialects) == OURS
    assert set(universe.all_passes) == set(get_all_passes())
    multiverse = Universe.get_multiverse()  # raised "Duplicate definition of arith" before
    assert OURS <= set(multiverse.all_dialects) and "arith" in multiverse.all_dialects
    assert {"ipu-pipeline", "cse"} <= set(multiverse.all_passes)
    assert {"ipu-asm", "mlir"} <= set(multiverse.all_targets)


@pytest.mark.slow
@pytest.mark.skipif(not XDSL_OPT.exists(), reason="xdsl-opt is not installed next to python")
def test_plain_xdsl_opt_runs_the_pipeline_and_emitters():
    lowered = run([str(XDSL_OPT), "-p", "ipu-pipeline{tiles=4}", GEMM])
    assert lowered.returncode == 0, lowered.stderr
    assert "#tile.tiles<0 to 4>" in lowered.stdout and "exchange.row" in lowered.stdout
    ours = ipu_opt(GEMM, "-p", "ipu-pipeline{tiles=4}")
    assert lowered.stdout == ours.stdout  # the same compiler, whichever driver
    asm = run([str(XDSL_OPT), "-p", "ipu-pipeline{tiles=4}", "-t", "ipu-asm", GEMM])
    assert asm.returncode == 0 and "# ipu-asm: function @gemm, 4 tiles" in asm.stdout


@pytest.mark.slow
@pytest.mark.skipif(not XDSL_OPT.exists(), reason="xdsl-opt is not installed next to python")
def test_readme_xdsl_opt_commands_run():
    readme = (ROOT / "README.md").read_text()
    commands = [line.split("#")[0].strip() for line in readme.splitlines()
                if line.startswith("xdsl-opt ")]
    assert len(commands) >= 2
    for command in commands:
        words = shlex.split(command)
        done = run([str(XDSL_OPT), *words[1:]])
        assert done.returncode == 0, f"{command}: {done.stderr}"


def test_version_is_ours():
    done = ipu_opt("--version")
    assert done.stdout.strip() == (
        f"ipu-opt {version('ipu-stack')} (ipu-stack, on xdsl {version('xdsl')})")


def test_help_describes_every_pass_and_its_options():
    done = ipu_opt("--help")
    assert done.returncode == 0
    passes = done.stdout[done.stdout.index("passes (-p"):]
    for name in [*STAGES, "ipu-pipeline", "convert-linalg-to-graph", "canonicalize", "cse", "dce"]:
        assert re.search(rf"^  {re.escape(name)}\n      \S", passes, re.M), name
    assert ("  graph-to-mid\n      choose an operator plan for every graph op and rewrite it to "
            "the mid level.") in passes
    ipu_pipeline = passes[passes.index("  ipu-pipeline\n"):passes.index("  canonicalize\n")]
    assert "- tiles=int | None (default none)" in ipu_pipeline
    assert "- indivisible=pad|reject (default pad)" in ipu_pipeline
    assert "- profiling=off|cycles (default off)" in ipu_pipeline


@pytest.mark.slow
def test_time_passes_reports_each_stage_on_stderr():
    plain = ipu_opt(GEMM, "-p", "ipu-pipeline{tiles=4},cse")
    timed = ipu_opt(GEMM, "-p", "ipu-pipeline{tiles=4},cse", "--time-passes")
    assert timed.returncode == 0
    assert timed.stdout == plain.stdout  # the IR is untouched by the report
    names = re.findall(r"^\s+\d+\.\d+ \(\s*[\d.]+%\)(\s+)(\S+)$", timed.stderr, re.M)
    assert [(len(indent), name) for indent, name in names] == [
        (2, "ipu-pipeline"), *((4, stage) for stage in STAGES), (2, "cse"), (2, "Total")]
    seconds = {name: value for value, name in
               re.findall(r"^\s+(\d+\.\d+) \(\s*[\d.]+%\)\s+(\S+)$", timed.stderr, re.M)}
    stages = sum(float(seconds[stage]) for stage in STAGES)
    # The pipeline's time holds its stages' (and the verification between them): on a busy
    # machine the difference is not bounded, so only the containment is a property.
    assert float(seconds["ipu-pipeline"]) >= stages - 1e-3
    assert "Total Execution Time" in timed.stderr


def test_ipu_pipeline_applied_directly_is_the_timed_stages():
    """`ipu-pipeline` as one pass (xdsl-opt, Python) and run stage by stage (ipu-opt's timer)
    give the same module."""
    from passes.ipu_pipeline import IpuPipelinePass
    from tools.ipu_run import compile_module, parse_module
    from tools.registry import make_context

    direct = parse_module(Path(GEMM))
    IpuPipelinePass(tiles=4).apply(make_context(), direct)
    staged = parse_module(Path(GEMM))
    compile_module(staged, 4, "pad")
    assert direct.is_structurally_equivalent(staged)


# ---- mlir-opt's habits (issue 27) -------------------------------------------------------------

def opt_in_process(args: list[str], capsys, stdin: bytes | None = None,
                   monkeypatch=None) -> tuple[int, str, str]:
    """`ipu-opt ARGS` in this process: (exit status, stdout, stderr)."""
    import io

    from tools.ipu_opt import IpuOptMain

    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    try:
        IpuOptMain(args=args).run()
        status = 0
    except SystemExit as done:
        status = int(done.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_nested_func_func_anchor_runs_the_function_local_passes(capsys):
    status, nested, err = opt_in_process(
        [GEMM, "--pass-pipeline=builtin.module(graph-to-mid{tiles=4},func.func(cse,canonicalize))"],
        capsys)
    assert status == 0, err
    _, flat, _ = opt_in_process([GEMM, "-p", "graph-to-mid{tiles=4},cse,canonicalize"], capsys)
    assert nested == flat and "mid.gemm" in nested
    status, _, err = opt_in_process([GEMM, "--pass-pipeline=builtin.module(any(dce))"], capsys)
    assert status == 0, err


@pytest.mark.parametrize(("spec", "message"), [
    ("builtin.module(func.func(graph-to-mid{tiles=4}))",
     "'graph-to-mid{tiles=4}' cannot be nested under func.func(...): it runs on the whole "
     "builtin.module (only canonicalize, cse, dce run per function)"),
    ("builtin.module(gpu.module(cse))", "unknown anchor 'gpu.module(...)': nest passes under "
     "func.func(...) or any(...) inside builtin.module(...)"),
    ("builtin.module(func.func(cse)", "unbalanced brackets"),
])
def test_a_bad_anchor_is_a_usage_error(spec, message, capsys):
    status, _out, err = opt_in_process([GEMM, f"--pass-pipeline={spec}"], capsys)
    assert status == 2 and message in err and "Traceback" not in err


def test_dash_reads_standard_input(capsys, monkeypatch):
    text = Path(GEMM).read_bytes()
    status, from_stdin, err = opt_in_process(["-", "-p", "graph-to-mid{tiles=4}"], capsys,
                                             stdin=text, monkeypatch=monkeypatch)
    assert status == 0, err
    _, from_file, _ = opt_in_process([GEMM, "-p", "graph-to-mid{tiles=4}"], capsys)
    assert from_stdin == from_file
    bad = b"func.func @f() {\n  %0 = graph.bogus\n}\n"
    status, _, err = opt_in_process(["-"], capsys, stdin=bad, monkeypatch=monkeypatch)
    assert status == 1 and err.startswith("stdin:3:1")


@pytest.mark.parametrize(("mlir_flag", "xdsl_flag"), [
    ("--mlir-print-debuginfo", "--print-debuginfo"),
    ("--mlir-print-ir-after-all", "--print-between-passes"),
    ("--mlir-print-op-generic", "--print-op-generic"),
])
def test_mlir_spellings_are_the_xdsl_flags(mlir_flag, xdsl_flag, capsys):
    pipeline = ["-p", "graph-to-mid{tiles=4},cse"]
    status, theirs, err = opt_in_process([GEMM, *pipeline, mlir_flag], capsys)
    assert status == 0, err
    _, ours, _ = opt_in_process([GEMM, *pipeline, xdsl_flag], capsys)
    _, plain, _ = opt_in_process([GEMM, *pipeline], capsys)
    assert theirs == ours != plain


def test_mlir_timing_is_time_passes(capsys):
    status, _out, err = opt_in_process([GEMM, "-p", "cse", "--mlir-timing"], capsys)
    assert status == 0 and "Total Execution Time" in err and re.search(r"\d \(\s*[\d.]+%\)\s+cse", err)


def test_help_names_the_values_of_catalog_and_target():
    from passes.graph_to_mid import GraphToMidPass
    from planning.gemm_problem import CATALOG_NAMES, default_catalog_names
    from tools.pass_help import pass_options

    options = {o.split("=", 1)[0]: o for o in pass_options(GraphToMidPass)}
    assert options["target"] == "target=str (default ipu21)\none of: ipu21"
    catalog = options["catalog"]
    assert catalog.startswith("catalog=NAME,NAME,... (default: those marked *)\nGEMM candidates: ")
    for name in CATALOG_NAMES:
        starred = name in default_catalog_names()
        assert re.search(rf"\b{name}{re.escape('*') if starred else ''}(,|$)", catalog), name


def test_every_tool_answers_version():
    from typer.testing import CliRunner

    from tools import ipu_as, ipu_import, ipu_objdump, ipu_run, report_compare

    expected = f"{version('ipu-stack')} (ipu-stack, on xdsl {version('xdsl')})"
    for tool, module in [("ipu-run", ipu_run), ("ipu-import", ipu_import),
                         ("ipu-objdump", ipu_objdump), ("ipu-as", ipu_as),
                         ("ipu-report-compare", report_compare)]:
        done = CliRunner().invoke(module.app, ["--version"])
        assert done.exit_code == 0 and done.output.strip() == f"{tool} {expected}", tool


def test_ipu_run_help_lists_choices_and_the_tolerances():
    from typer.testing import CliRunner

    from tools.ipu_run import app

    done = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    text = " ".join(done.output.split())
    for shown in ["<pad|reject>", "<f32|f16>", "NAME=PATH.npy", "FILE.npz",
                  "f32 0.0001, f16 0.01, f8E4M3FNUZ 0.15", "normwise"]:
        assert shown in text, shown
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "1e-4 for f32 results, 1e-2 for f16, 0.15 for FP8" in readme
    assert "which runs those six in that order" in readme


def test_repeated_inputs_files_merge_and_a_twice_given_argument_is_refused(tmp_path):
    import numpy as np
    from xdsl.dialects.func import FuncOp

    from interpreters.graph import input_names
    from tools.run_io import load_inputs, parse_module
    from tools.usage import UsageError

    module = parse_module(Path(GEMM))
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    names = input_names(func)
    a = np.full((256, 320), 0.5, np.float16)
    b = np.full((320, 192), 0.25, np.float16)
    np.savez(tmp_path / "a.npz", a=a)
    np.savez(tmp_path / "b.npz", b=b)
    arrays = load_inputs(func, names, [], 0, [str(tmp_path / "a.npz"), str(tmp_path / "b.npz")])
    assert (arrays[0] == a).all() and (arrays[1] == b).all()  # both files, neither dropped
    np.savez(tmp_path / "ab.npz", a=a, b=b)
    with pytest.raises(UsageError) as info:
        load_inputs(func, names, [], 0, [str(tmp_path / "a.npz"), str(tmp_path / "ab.npz")])
    assert str(info.value) == (f"--inputs {tmp_path / 'ab.npz'}: array 'a': given more than once "
                               f"(by --inputs {tmp_path / 'a.npz'}: array 'a')")


def test_ipu_run_takes_inputs_twice(tmp_path):
    import numpy as np
    from typer.testing import CliRunner

    from tools.ipu_run import app

    a = np.full((256, 320), 0.5, np.float16)
    b = np.full((320, 192), 0.25, np.float16)
    np.savez(tmp_path / "a.npz", a=a)
    np.savez(tmp_path / "b.npz", b=b)
    done = CliRunner().invoke(app, [GEMM, "--reference", "--inputs", str(tmp_path / "a.npz"),
                                    "--inputs", str(tmp_path / "b.npz"),
                                    "--save-outputs", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    assert (np.load(tmp_path / "out" / "result0.npy") == 320 * 0.125).all()  # a @ b, not random
    done = CliRunner().invoke(app, [GEMM, "--reference", "--inputs", str(tmp_path / "a.npz"),
                                    "--inputs", str(tmp_path / "a.npz")])
    assert done.exit_code == 2 and "given more than once" in done.output


LINALG_MATMUL = """func.func @mm(%a: tensor<64x128xf32>, %b: tensor<128x32xf32>) -> tensor<64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  %c = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x32xf32>) outs(%z : tensor<64x32xf32>) -> tensor<64x32xf32>
  func.return %c : tensor<64x32xf32>
}
"""


def test_ipu_run_takes_linalg_from_the_mlir_world(tmp_path, capsys):
    """tensor.empty + linalg.fill + linalg.matmul, as torch-mlir writes a matmul: ipu-run
    converts it (convert-linalg-to-graph), compiles it and it PASSes on the device model."""
    from tools.ipu_run import EXIT_PASS, run_main

    path = tmp_path / "mm.mlir"
    path.write_text(LINALG_MATMUL)
    assert run_main(path, tiles=4, quiet=True) == EXIT_PASS
    assert "check: PASS" in capsys.readouterr().out


def test_the_linalg_passes_stop_with_a_located_diagnostic(tmp_path, capsys):
    path = tmp_path / "mm.mlir"
    path.write_text(LINALG_MATMUL)
    status, _, err = opt_in_process([str(path), "-p", "ipu-pipeline{tiles=4}"], capsys)
    assert status == 1
    assert err.startswith(f"{path}:3:3: error: graph-to-mid: tensor.empty (result %e) is not a "
                          "graph op; run convert-linalg-to-graph first")
