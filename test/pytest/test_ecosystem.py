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
    assert set(get_all_passes()) == {*STAGES, "ipu-pipeline"}
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
    for name in [*STAGES, "ipu-pipeline", "canonicalize", "cse", "dce"]:
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
