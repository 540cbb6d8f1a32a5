"""Structured repeats end to end: compiled without unrolling, run on the device model and
checked against the NumPy reference (`ipu-run`'s `run_main`, which reports PASS only when the
device model's outputs match the reference). Small examples only (the lit tests pin the IR;
`bench/repeat_depth.py` measures depth)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from ipu_dialects.tile import KernelOp, LoopOp
from passes.ipu_pipeline import IpuPipelinePass
from passes.operators.repeat import YIELD_COPY_REASON
from tools.ipu_run import EXIT_PASS, make_context, run_main

REPO = Path(__file__).resolve().parents[2]


def load(name: str) -> ModuleOp:
    path = REPO / "examples" / name
    return Parser(make_context(), path.read_text(), str(path)).parse_module()


def layers(depth: int) -> str:
    return f"""
func.func @layers(%x0: tensor<64x64xf16>, %b: tensor<64xf16>, %ws: tensor<{depth}x64x64xf16>) -> tensor<64x64xf16> {{
  %out = graph.repeat {depth} carried(%x = %x0 : tensor<64x64xf16>) invariant(%bias = %b : tensor<64xf16>) sequence(%w = %ws : tensor<{depth}x64x64xf16>) {{
    %y = graph.gemm %x, %w : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    %yb = graph.add %y, %bias : (tensor<64x64xf16>, tensor<64xf16>) -> tensor<64x64xf16>
    %next = graph.add %x, %yb : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
    graph.yield %next : tensor<64x64xf16>
  }} -> tensor<64x64xf16>
  func.return %out : tensor<64x64xf16>
}}
"""


@pytest.mark.parametrize(("example", "tiles"), [
    ("repeat_layers.mlir", 1), ("repeat_layers.mlir", 4),
    ("nested_repeat_f16.mlir", 1), ("nested_repeat_f16.mlir", 4),
])
def test_examples_pass_on_the_device_model(example, tiles, capsys):
    assert run_passes(REPO / "examples" / example, tiles, 1, capsys)


def run_passes(path: Path, tiles: int, seed: int, capsys) -> bool:
    status = run_main(path, tiles=tiles, seed=seed, json_output=True)
    summary = json.loads(capsys.readouterr().out)
    return status == EXIT_PASS and summary["check"] == "PASS"


def lowered(source: str, tiles: int) -> ModuleOp:
    ctx = make_context()
    module = Parser(ctx, source, "layers").parse_module()
    IpuPipelinePass(tiles=tiles).apply(ctx, module)
    return module


def test_the_op_count_does_not_depend_on_the_depth():
    counts = {depth: sum(1 for _ in lowered(layers(depth), 2).walk()) for depth in (2, 7)}
    assert counts[2] == counts[7]
    loops = [op for op in lowered(layers(7), 2).walk() if isinstance(op, LoopOp)]
    assert loops[0].trip_count == 7  # the repeat, outermost


def test_a_deeper_repeat_runs_too(tmp_path, capsys):
    path = tmp_path / "layers.mlir"
    path.write_text(layers(5))
    assert run_passes(path, 2, 4, capsys)


HAZARD = """func.func @hazard(%x0: tensor<64x64xf32>, %h0: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %out:2 = graph.repeat 2 carried(%x = %x0 : tensor<64x64xf32>, %h = %h0 : tensor<64x64xf32>) {
    %in = graph.repeat 2 carried(%a = %x : tensor<64x64xf32>) {
      %g1 = graph.gelu %a : tensor<64x64xf32> -> tensor<64x64xf32>
      graph.yield %g1 : tensor<64x64xf32>
    } -> tensor<64x64xf32>
    %g = graph.gelu %in : tensor<64x64xf32> -> tensor<64x64xf32>
    %k = graph.add %in, %g : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    graph.yield %g, %k : tensor<64x64xf32>, tensor<64x64xf32>
  } -> tensor<64x64xf32>, tensor<64x64xf32>
  func.return %out#0, %out#1 : tensor<64x64xf32>, tensor<64x64xf32>
}
"""


def test_values_in_a_taken_over_carried_buffer_are_not_overwritten_early(tmp_path, capsys):
    """The inner repeat takes over %x's buffer, so %in lives there: the gelu that makes the
    yielded %g must not overwrite it in place, since the add after it still reads %in
    (`in_carried_buffer`; without it the run FAILs its check)."""
    path = tmp_path / "hazard.mlir"
    path.write_text(HAZARD)
    assert run_passes(path, 2, 2, capsys)


def test_nested_example_needs_no_yield_copy():
    """Every yield of the nested example is written in place (the inner repeat takes over
    the outer carried buffer; the conversion before a yield writes the carried buffer)."""
    module = load("nested_repeat_f16.mlir")
    IpuPipelinePass(tiles=4).apply(make_context(), module)
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    assert not [k for k in kernels if k.provenance.reason.data == YIELD_COPY_REASON]
    assert all(" in graph.repeat %out" in k.provenance.op.data
               for k in kernels if k.ivs)  # everything inside the loops names the repeat
