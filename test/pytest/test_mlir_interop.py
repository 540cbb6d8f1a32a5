"""Upstream MLIR reads what we print, and we read what it prints back.

For every level of the default pipeline (graph, mid, tile before placement, tile with
addresses and exchange rows), the generic form printed by `ipu-opt --print-op-generic` is
parsed by `mlir-opt --allow-unregistered-dialect` and printed again in generic form; `ipu-opt`
parses that text and the module must be the one we started from (structurally: MLIR renames
SSA values).

mlir-opt is found on PATH as `mlir-opt` or `mlir-opt-NN` (Debian: `apt-get install
mlir-19-tools`). Without it the test is skipped with a reason saying so; set
`IPU_REQUIRE_MLIR_OPT=1` (CI) to make its absence a failure instead.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from tools.ipu_run import make_context
from tools.source_locations import parse_located_module

ROOT = Path(__file__).resolve().parents[2]

LEVELS = {
    "graph": "",
    "mid": "graph-to-mid{tiles=4}",
    "tile": "graph-to-mid{tiles=4},insert-conversions,mid-to-tile",
    "exchange": "ipu-pipeline{tiles=4}",
}
EXAMPLES = ["gemm_f16.mlir", "gemm_f32_batched.mlir"]
GRAPH_ONLY = ["transformer_block.mlir", "repeat_layers.mlir"]  # no plans below graph yet


def find_mlir_opt() -> str | None:
    candidates = ["mlir-opt", *(f"mlir-opt-{v}" for v in range(30, 14, -1))]
    for name in candidates:
        if found := shutil.which(name):
            return found
    installed = sorted(glob.glob("/usr/lib/llvm-*/bin/mlir-opt"))
    return installed[-1] if installed else None


@pytest.fixture(scope="module")
def mlir_opt() -> str:
    found = find_mlir_opt()
    if found is None:
        message = ("mlir-opt is not on PATH (Debian: apt-get install mlir-19-tools): the "
                   "upstream-MLIR round trip was NOT checked")
        if os.environ.get("IPU_REQUIRE_MLIR_OPT"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def ipu_opt_generic(example: str, pipeline: str) -> str:
    command = [sys.executable, "-m", "tools.ipu_opt", str(ROOT / "examples" / example),
               "--print-op-generic"]
    if pipeline:
        command += ["-p", pipeline]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def through_mlir_opt(mlir_opt: str, text: str) -> str:
    done = subprocess.run([mlir_opt, "--allow-unregistered-dialect", "--mlir-print-op-generic"],
                          input=text, capture_output=True, text=True)
    assert done.returncode == 0, f"mlir-opt rejected our generic output:\n{done.stderr}"
    return done.stdout


def parsed(text: str, name: str) -> ModuleOp:
    module = parse_located_module(make_context(), text, name)
    module.verify()
    return module


CASES = [(e, level) for e in EXAMPLES for level in LEVELS] + [(e, "graph") for e in GRAPH_ONLY]


@pytest.mark.parametrize(("example", "level"), CASES)
def test_mlir_opt_round_trip(mlir_opt: str, example: str, level: str):
    ours = ipu_opt_generic(example, LEVELS[level])
    theirs = through_mlir_opt(mlir_opt, ours)
    assert "tile.tiles" in theirs or level in ("graph", "mid")
    original, reread = parsed(ours, "ipu-opt"), parsed(theirs, "mlir-opt")
    assert original.is_structurally_equivalent(reread), (
        f"{example} at the {level} level changed through mlir-opt:\n{theirs}")


def test_old_tile_range_spelling_is_what_mlir_opt_rejected(mlir_opt: str):
    """The reason for `#tile.tiles<0 to 4>`: MLIR's pretty-name lexer needs balanced
    brackets, so the half-open `[0, 4)` of earlier versions could not be read upstream."""
    old = '"test.op"() {tiles = #tile.tiles<[0, 4)>} : () -> ()\n'
    done = subprocess.run([mlir_opt, "--allow-unregistered-dialect"], input=old,
                          capture_output=True, text=True)
    assert done.returncode != 0 and "unbalanced '['" in done.stderr
    new = '"test.op"() {tiles = #tile.tiles<0 to 4>, listed = #tile.tiles<[0, 1, 5]>} : () -> ()\n'
    done = subprocess.run([mlir_opt, "--allow-unregistered-dialect"], input=new,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
