"""`ipu-run --reference --save-outputs` writes exactly what `run_function` computes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.parser import Parser

from interpreters.graph import find_function, run_function
from ipu_dialects import get_all_dialects
from tools.ipu_run import random_inputs

REPO = Path(__file__).resolve().parents[2]


def parse_file(path: Path):
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
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
