"""A bias add takes over a batched GEMM's output format, cut on batch, rows and columns
(`formats.broadcast_operand_format`): the bias is stored in the output's column tiling, once
per (batch, row) block, so no conversion moves the GEMM's output. Checked on the device model
against the reference, from the package's encoded rows."""

from __future__ import annotations

from e2e_support import compile_case, run_verdict
from xdsl.parser import Parser

from passes import get_all_passes
from tools.ipu_run import make_context


def bias_module(batch: int, rows: int, depth: int, columns: int) -> str:
    a, w = f"tensor<{batch}x{rows}x{depth}xf16>", f"tensor<{depth}x{columns}xf16>"
    b, c = f"tensor<{columns}xf16>", f"tensor<{batch}x{rows}x{columns}xf16>"
    return (f"func.func @f(%x: {a}, %w: {w}, %b: {b}) -> {c} {{\n"
            f"  %y = graph.gemm %x, %w : ({a}, {w}) -> {c}\n"
            f"  %z = graph.add %y, %b : ({c}, {b}) -> {c}\n"
            f"  func.return %z : {c}\n}}\n")


def test_bias_add_follows_a_three_axis_cut_and_passes_on_the_model():
    ctx = make_context()
    text = bias_module(4, 64, 128, 256)
    lowered = Parser(ctx, text).parse_module()
    get_all_passes()["graph-to-mid"]()(tiles=64).apply(ctx, lowered)
    (add,) = [op for op in lowered.walk() if op.name == "mid.add"]
    out = add.plan.operand_plan("out").format
    rhs = add.plan.operand_plan("rhs").format
    assert add.plan.candidate.data == "add_follow0"
    assert sum(p > 1 for p in out.partitions) == 3  # batch, rows and columns cut
    assert rhs.replication.data == out.partitions[0] * out.partitions[1]
    assert run_verdict(compile_case(Parser(ctx, text).parse_module(), 64)) is None
