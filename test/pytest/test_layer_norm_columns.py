"""The column-split layer norm (`passes/operators/layer_norm.py`, `layer_norm_cols_*`): where
its input's format cuts the normalized last axis (a GEMM's output in 64-column panels), the
layer norm keeps that cut: `layer_norm_stats` writes each row's (mean, M2) over the tile's
columns, C exchange phases send every column part's block to its row group, and
`layer_norm_apply` merges them and normalizes. These tests run it on the device model from
the encoded words (padding rows and columns, f32, a part with no real column), hold the
estimate equal to the modeled cycles, show that a wrong statistics block fails the run, and
pin the kernels' refusals."""

from __future__ import annotations

import copy
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from e2e_support import compile_case, run_verdict
from xdsl.parser import Parser

from device.package import ExchangeStep, KernelStep
from device.shard_geometry import decode_descriptor
from tools.ipu_run import compile_module
from tools.registry import make_context

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gemm_roofline import package_cycles

# a GEMM, the residual add in its output's cut, the layer norm, the next GEMM
BLOCK = """
func.func @block(%x: tensor<{m}x{d}x{t}>, %w1: tensor<{d}x{d}x{t}>, %g: tensor<{d}x{t}>,
                 %b: tensor<{d}x{t}>, %w2: tensor<{d}x{d}x{t}>) -> tensor<{m}x{d}x{t}> {{
  %h = graph.gemm %x, %w1 : (tensor<{m}x{d}x{t}>, tensor<{d}x{d}x{t}>) -> tensor<{m}x{d}x{t}>
  %r = graph.add %h, %x : (tensor<{m}x{d}x{t}>, tensor<{m}x{d}x{t}>) -> tensor<{m}x{d}x{t}>
  %n = graph.layer_norm %r, %g, %b eps 1.0e-05 : (tensor<{m}x{d}x{t}>, tensor<{d}x{t}>, tensor<{d}x{t}>) -> tensor<{m}x{d}x{t}>
  %y = graph.gemm %n, %w2 : (tensor<{m}x{d}x{t}>, tensor<{d}x{d}x{t}>) -> tensor<{m}x{d}x{t}>
  func.return %y : tensor<{m}x{d}x{t}>
}}
"""
CASES = [  # (rows, width, element type, tiles)
    (128, 256, "f16", 64),
    (128, 256, "f32", 64),
    (120, 200, "f16", 64),  # padding rows and a last column part of 8 real columns
    (64, 256, "f16", 16),
]


def block(m: int, d: int, t: str):
    return Parser(make_context(), BLOCK.format(m=m, d=d, t=t)).parse_module()


def layer_norm_plan(package_module) -> str:
    from ipu_dialects import mid
    return next(op.plan.candidate.data for op in package_module.walk()
                if isinstance(op, mid.LayerNormOp))


def lowered(m: int, d: int, t: str, tiles: int):
    from passes.graph_to_mid import GraphToMidPass
    module = block(m, d, t)
    GraphToMidPass(tiles=tiles).apply(make_context(), module)
    return module


@pytest.mark.parametrize("m,d,t,tiles", CASES)
def test_the_layer_norm_keeps_the_gemm_output_cut_and_passes(m, d, t, tiles):
    assert layer_norm_plan(lowered(m, d, t, tiles)).startswith("layer_norm_cols_")
    case = compile_case(block(m, d, t), tiles, seed=5)
    assert any(isinstance(s, KernelStep) and s.symbol == "layer_norm_apply"
               for s in case.package.steps)
    assert run_verdict(case) is None


@pytest.mark.parametrize("m,d,t,tiles", CASES)
def test_the_estimate_is_the_modeled_cycles(m, d, t, tiles):
    package = compile_module(block(m, d, t), tiles, "pad", with_assembly=False)
    assert package.metadata["estimated_cycles"] == sum(package_cycles(package))


# a layer norm of a graph input (GPT-2's first): the host writes the input as the layer norm
# wants it, so the next GEMM's A panels are among its candidates (`wanted_by_consumers`)
PRE_NORM = """
func.func @pre(%x: tensor<{m}x{d}x{t}>, %g: tensor<{d}x{t}>, %b: tensor<{d}x{t}>,
               %w: tensor<{d}x{d}x{t}>) -> tensor<{m}x{d}x{t}> {{
  %n = graph.layer_norm %x, %g, %b eps 1.0e-05 : (tensor<{m}x{d}x{t}>, tensor<{d}x{t}>, tensor<{d}x{t}>) -> tensor<{m}x{d}x{t}>
  %y = graph.gemm %n, %w : (tensor<{m}x{d}x{t}>, tensor<{d}x{d}x{t}>) -> tensor<{m}x{d}x{t}>
  func.return %y : tensor<{m}x{d}x{t}>
}}
"""


def pre_norm(m: int = 128, d: int = 256, t: str = "f16"):
    return Parser(make_context(), PRE_NORM.format(m=m, d=d, t=t)).parse_module()


def test_a_layer_norm_of_a_graph_input_takes_it_in_the_next_gemms_panels():
    """Its input has no format: the layer norm takes it cut as the GEMM's A (amp_left 64-column
    panels, which the host writes), splits the columns, and the GEMM reads its output where
    it is (no conversion between them); it runs and its estimate is the modeled cycles."""
    from ipu_dialects import mid
    from passes.graph_to_mid import GraphToMidPass
    from passes.insert_conversions import InsertConversionsPass

    module, ctx = pre_norm(), make_context()
    GraphToMidPass(tiles=64).apply(ctx, module)
    InsertConversionsPass().apply(ctx, module)
    norm = next(op for op in module.walk() if isinstance(op, mid.LayerNormOp))
    gemm = next(op for op in module.walk() if isinstance(op, mid.GemmOp))
    assert norm.plan.candidate.data == "layer_norm_cols_wanted0"
    assert norm.input.type.encoding.order.data == "amp_left"
    assert gemm.operands[0] is norm.results[0]
    case = compile_case(pre_norm(), 64, seed=3)
    assert run_verdict(case) is None
    package = compile_module(pre_norm(), 64, "pad", with_assembly=False)
    assert package.metadata["estimated_cycles"] == sum(package_cycles(package))


def statistics_case():
    return compile_case(block(128, 256, "f16"), 64, seed=7)


def test_a_tile_that_misses_a_statistics_block_fails_the_run():
    """In the first round tile 0 sends its block to tiles 1, 2 and 3 of its row group; tile 1
    made to run no row in that phase keeps the zeros its own kernel wrote there and
    normalizes with the wrong mean and variance."""
    case = statistics_case()
    corrupted = copy.deepcopy(case.package)
    first = next(s for s in corrupted.steps if isinstance(s, ExchangeStep)
                 and "statistics to its row group" in s.provenance)
    rows = np.asarray(first.row_id).copy()
    assert rows[0] >= 0 and rows[1] >= 0 and rows[0] != rows[1]  # a sender, a receiver
    rows[1] = -1
    first.row_id = rows
    verdict = run_verdict(case, corrupted)
    assert verdict is not None and verdict.startswith("outputs differ")


def test_apply_refuses_weights_cut_otherwise():
    """layer_norm_apply reads weight and bias for its tile's columns: given src's descriptor
    in weight's place (a 2-D shard where a [C] vector cut as the columns is expected), the
    model stops and names 'weight'."""
    case = statistics_case()
    corrupted = copy.deepcopy(case.package)
    apply = next(s for s in corrupted.steps
                 if isinstance(s, KernelStep) and s.symbol == "layer_norm_apply")
    scalars = list(apply.scalars)
    spans, position = [], 1  # the descriptors of out, src, weight, bias, stats after eps
    for _ in range(5):
        _, end = decode_descriptor(tuple(scalars), position)
        spans.append((position, end))
        position = end
    (src_start, src_end), (weight_start, weight_end) = spans[1], spans[2]
    scalars[weight_start:weight_end] = scalars[src_start:src_end]
    apply.scalars = tuple(scalars)
    verdict = run_verdict(case, corrupted)
    assert verdict is not None and "'weight'" in verdict


def with_descriptor(symbol: str, pointer: int, make) -> str | None:
    """The verdict of the statistics case with descriptor `pointer` of every `symbol` call
    replaced by `make(descriptors)` (the call's decoded descriptors, in pointer order)."""
    case = statistics_case()
    corrupted = copy.deepcopy(case.package)
    step = next(s for s in corrupted.steps if isinstance(s, KernelStep) and s.symbol == symbol)
    scalars = list(step.scalars)
    named = 1 if symbol == "layer_norm_apply" else 0
    spans, geometries, position = [], [], named
    for _ in range(2 if symbol == "layer_norm_stats" else 5):
        geom, end = decode_descriptor(tuple(scalars), position)
        spans.append((position, end))
        geometries.append(geom)
        position = end
    start, end = spans[pointer]
    scalars[start:end] = make(geometries).encode()
    step.scalars = tuple(scalars)
    return run_verdict(case, corrupted)


@pytest.mark.parametrize("symbol,pointer,make,fragment", [
    # src a [C] vector: no rows
    ("layer_norm_stats", 1, lambda g: dataclasses.replace(g[1], shape=(256,), blocks=(64,),
                                                          partitions=(4,), pads=(True,),
                                                          order="row_major"),
     "the column-split layer norm needs rows (rank >= 2) stored once"),
    # the statistics in f16
    ("layer_norm_stats", 0, lambda g: dataclasses.replace(g[0], precision="f16"),
     "(C blocks of rows x 2 f32)"),
    # out in the statistics' shape
    ("layer_norm_apply", 0, lambda g: g[4], "the column-split layer norm keeps the shape and the cut"),
    # weight cut 8 ways where the columns are cut 4 ways
    ("layer_norm_apply", 2, lambda g: dataclasses.replace(g[2], blocks=(32,), partitions=(8,),
                                                          replication=4),
     "on this tile is not cut as this tile's columns"),
])
def test_the_kernels_refuse_what_they_cannot_read(symbol, pointer, make, fragment):
    verdict = with_descriptor(symbol, pointer, make)
    assert verdict is not None and verdict.startswith("model error") and fragment in verdict, verdict
