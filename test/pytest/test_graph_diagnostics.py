"""Malformed graph IR through `ipu-opt FILE`: a located diagnostic and exit 1, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CASES = {
    "unknown_op": (
        """func.func @f(%a: tensor<4xf32>) {
  %b = graph.frobnicate %a : tensor<4xf32>
  func.return
}""",
        ["2:", "Operation graph.frobnicate is not registered"],
    ),
    "wrong_element_type": (
        """func.func @f(%a: tensor<4xi32>) {
  %b = graph.gelu %a : tensor<4xi32> -> tensor<4xi32>
  func.return
}""",
        ["wrong_element_type.mlir:2:3: error: graph.gelu: input has element type i32"],
    ),
    "not_a_tensor": (
        """func.func @f(%a: f32) {
  %b = graph.gelu %a : f32 -> f32
  func.return
}""",
        ["2:19", "graph.gelu: f32 should be of base attribute tensor"],
    ),
    "gemm_shape_mismatch": (
        """func.func @f(%a: tensor<4x8xf32>, %b: tensor<6x4xf32>) {
  %c = graph.gemm %a, %b : (tensor<4x8xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
  func.return
}""",
        ["gemm_shape_mismatch.mlir:2:3: error: graph.gemm: contraction extents differ: "
         "lhs [4, 8] axis -1 is 8"],
    ),
    "repeat_without_yield": (
        """func.func @f(%x0: tensor<4xf32>) {
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) {
    %y = graph.gelu %x : tensor<4xf32> -> tensor<4xf32>
  } -> tensor<4xf32>
  func.return
}""",
        ["repeat_without_yield.mlir:2:3: error: graph.repeat: body must end with graph.yield"],
    ),
    "yield_outside_repeat": (
        """func.func @f(%x0: tensor<4xf32>) {
  graph.yield %x0 : tensor<4xf32>
}""",
        ['"graph.yield"(%x0)', "expects parent op 'graph.repeat'"],
    ),
    "repeat_bad_syntax": (
        """func.func @f(%x0: tensor<4xf32>) {
  %r = graph.repeat 2 carried(%x : tensor<4xf32>) {
    graph.yield %x : tensor<4xf32>
  }
  func.return
}""",
        ["2:", "'='"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_input_gives_diagnostic(name, tmp_path):
    text, expected = CASES[name]
    path = tmp_path / f"{name}.mlir"
    path.write_text(text + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "tools.ipu_opt", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    for fragment in expected:
        assert fragment in proc.stderr, proc.stderr
