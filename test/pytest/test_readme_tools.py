"""The README's Tools section works as written: every command of its shell block runs, in
order, in a scratch directory (the inputs it names made first), and what the text around it
promises about `--json`, `--report`, `--time-passes`, `--help` and the `xdsl-opt` route holds."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from passes.ipu_pipeline import IpuPipelinePass

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def tools_commands() -> list[str]:
    """The command lines of the first ```sh block under `## Tools` (comments dropped)."""
    section = README.read_text().split("\n## Tools\n", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the Tools section has no shell block"
    lines = [line.split(" #", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    work = tmp_path_factory.mktemp("tools")
    (work / "examples").symlink_to(ROOT / "examples")
    rng = np.random.default_rng(0)  # the inputs the README passes by name (gemm_f16's a, b)
    np.save(work / "a.npy", rng.standard_normal((256, 320)).astype(np.float16))
    np.save(work / "b.npy", rng.standard_normal((320, 192)).astype(np.float16))
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(work)}
    results = {}
    for command in tools_commands():  # in order: later commands read earlier ones' packages
        results[command] = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command], cwd=work, env=env,
            capture_output=True, text=True, timeout=300)
    results["report files"] = subprocess.CompletedProcess(
        [], 0, "\n".join(sorted(p.name for p in (work / "report").iterdir())), "")
    return results


@pytest.mark.slow
def test_every_tools_command_succeeds(ran):
    commands = tools_commands()
    assert len(commands) >= 15
    for command in commands:
        proc = ran[command]
        assert proc.returncode == 0, f"{command}\n{proc.stderr}"
        assert proc.stdout.strip(), command


def test_the_section_shows_json_report_and_the_xdsl_opt_route():
    commands = tools_commands()
    assert any(c.startswith("ipu-run ") and c.endswith(" --json") for c in commands)
    assert any(re.search(r"ipu-run .* --report \S+", c) for c in commands)
    assert any(c.startswith("xdsl-opt ") and "-p 'ipu-pipeline{" in c for c in commands)
    section = README.read_text().split("\n## Tools\n", 1)[1].split("\n## ", 1)[0]
    for picture in re.findall(r"!\[[^]]*\]\((docs/[^)]+\.png)\)", section):
        assert (ROOT / picture).stat().st_size > 1000  # pictures of the report, checked in
    assert "docs/report_memory.png" in section and "docs/report_cycles.png" in section


@pytest.mark.slow
def test_json_objects_have_the_documented_fields(ran):
    (compiled,) = [c for c in tools_commands() if c.startswith("ipu-run examples/")
                   and c.endswith(" --json")]
    summary = json.loads(ran[compiled].stdout)
    assert summary["check"] == "PASS" and summary["tiles_used"] > 0
    assert {"max_abs_error", "max_rel_error"} <= summary.keys()
    cycles = summary["modeled_cycles"]
    assert set(cycles["by_phase"]) == {"sync", "exchange", "compute"}
    assert sum(cycles["by_phase"].values()) == cycles["total"] > 0
    assert cycles["by_kernel"] and cycles["by_graph_op"]
    stages = [f"ipu-pipeline/{p.name}" for p in IpuPipelinePass(tiles=1).stage_passes()]
    assert set(stages) | {"build-package"} <= summary["compile_seconds"]["per_pass"].keys()
    (package,) = [c for c in tools_commands() if c.startswith("ipu-run pkg/")]
    saved = json.loads(ran[package].stdout)
    assert saved["check"] == "PASS" and saved["modeled_cycles"] == cycles["total"]


@pytest.mark.slow
def test_report_time_passes_help_and_xdsl_opt_outputs(ran):
    files = ran["report files"].stdout.split()
    # tile 0 over the program, and the tile with the highest peak when that is another
    assert "liveness_tile0.png" in files and len([f for f in files if f.startswith("liveness")]) <= 2
    assert [f for f in files if not f.startswith("liveness_tile")] == [
        "cycles.png", "exchange.png", "memory.png", "op_phases.png", "report.html", "summary.json",
        "trace.json"]
    (timed,) = [c for c in tools_commands() if "--time-passes" in c]
    assert "execution time report" in ran[timed].stderr
    for stage in IpuPipelinePass(tiles=1).stage_passes():
        assert f" {stage.name}\n" in ran[timed].stderr
    help_text = ran["ipu-opt --help"].stdout
    for name in ("graph-to-mid", "ipu-pipeline", "schedule-exchange"):
        assert f"\n  {name}\n" in help_text
    routes = [c for c in tools_commands() if c.startswith("xdsl-opt ")]
    assert any("exchange.row @" in ran[c].stdout for c in routes)
    assert any(ran[c].stdout.startswith("# Supervisor code") for c in routes)
