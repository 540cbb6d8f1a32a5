"""One conversion per value and format: the Q, K and V projections of one layer norm take the
same `mid.rearrange` (graph-to-mid reuses an earlier consumer's bridge in the same block,
`GraphToMidLowering.operand_in_format`), selection prices it once (at the first consumer:
`SelectionContext.converted`; its look-ahead too, `LookAhead.gemm_extra_cycles`), and the
program estimate stays the modeled cycles. The layer norm's input is computed (a gelu): of
a graph input, which the host writes as the layer norm wants, it takes the GEMMs' A panels
and there is nothing to convert (`test_layer_norm_columns.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

from xdsl.parser import Parser

from device.target import IPU21
from frontend.run import compile_and_run
from ipu_dialects import mid
from passes.graph_to_mid import GraphToMidPass
from passes.insert_conversions import InsertConversionsPass
from passes.operators.costs import conversion_type_cycles
from tools.ipu_run import compile_module
from tools.registry import make_context

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gemm_roofline import package_cycles

QKV = """
func.func @qkv(%x: tensor<128x256xf16>, %w: tensor<256xf16>, %b: tensor<256xf16>,
               %wq: tensor<256x256xf16>, %wk: tensor<256x256xf16>, %wv: tensor<256x256xf16>)
    -> (tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>) {
  %h = graph.gelu %x : tensor<128x256xf16> -> tensor<128x256xf16>
  %n = graph.layer_norm %h, %w, %b eps 1.0e-05 : (tensor<128x256xf16>, tensor<256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
  %q = graph.gemm %n, %wq : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  %k = graph.gemm %n, %wk : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  %v = graph.gemm %n, %wv : (tensor<128x256xf16>, tensor<256x256xf16>) -> tensor<128x256xf16>
  func.return %q, %k, %v : tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>
}
"""
TILES = 64


def parsed():
    return Parser(make_context(), QKV).parse_module()


def lowered_to_mid():
    module = parsed()
    ctx = make_context()
    GraphToMidPass(tiles=TILES).apply(ctx, module)
    InsertConversionsPass().apply(ctx, module)
    return module


def test_the_three_projections_take_one_rearrange():
    module = lowered_to_mid()
    rearranges = [op for op in module.walk() if isinstance(op, mid.RearrangeOp)]
    gemms = [op for op in module.walk() if isinstance(op, mid.GemmOp)]
    assert len(rearranges) == 1 and len(gemms) == 3
    converted = rearranges[0].results[0]
    assert all(gemm.operands[0] is converted for gemm in gemms)


def test_the_conversion_is_priced_at_its_first_consumer_only():
    module = lowered_to_mid()
    (rearrange,) = [op for op in module.walk() if isinstance(op, mid.RearrangeOp)]
    q, k, v = [op.attributes[mid.ESTIMATE_ATTR_NAME].value.data
               for op in module.walk() if isinstance(op, mid.GemmOp)]
    cost = conversion_type_cycles(rearrange.operands[0].type, rearrange.results[0].type, IPU21)
    assert cost > 0 and k == v and q == k + cost


def test_the_estimate_is_the_modeled_cycles_and_the_answer_is_right():
    package = compile_module(parsed(), TILES, "pad", with_assembly=False)
    assert package.metadata["estimated_cycles"] == sum(package_cycles(package))
    run = compile_and_run(parsed(), TILES)
    assert run.passed, (run.max_abs_error, run.max_rel_error)


def test_the_look_ahead_prices_one_conversion_for_the_three_projections():
    """Pricing the layer norm's result in a format for its GEMM consumers
    (`LookAhead.consumers_cycles`), the conversion the first GEMM takes is free for the
    other two, which share its bridge: they pay only their plan's cycles above their
    cheapest."""
    from passes.graph_to_mid import GraphToMidLowering
    from passes.operators.formats import split_format, with_format

    module = parsed()
    function = next(op for op in module.walk() if op.name == "func.func")
    pass_ = GraphToMidPass(tiles=TILES)
    target = pass_.checked_target()
    look_ahead = GraphToMidLowering(function, pass_.pipeline_config(target), target).look_ahead
    norm = next(op for op in function.walk() if op.name == "graph.layer_norm").results[0]
    q, k, v = [use.operation for use in norm.uses]
    fmt = split_format(norm.type.get_shape(), 0, TILES, norm.type, "pad")
    alone = look_ahead.gemm_extra_cycles(q, 0, norm, fmt)
    options = look_ahead.gemm_options[q]
    base = with_format(norm.type, fmt)
    taken, taken_cycles = min(
        ((plan.operand_plan("lhs").format, cycles + conversion_type_cycles(
            base, with_format(norm.type, plan.operand_plan("lhs").format), IPU21))
         for plan, cycles in options), key=lambda found: found[1])
    conversion = conversion_type_cycles(base, with_format(norm.type, taken), IPU21)
    assert conversion > 0 and taken_cycles - options[0][1] == alone
    shared = alone - conversion  # k and v: the same plan, its conversion made already
    assert look_ahead.consumers_cycles(norm, fmt) == alone + 2 * shared
    assert k.operands[0] is norm and v.operands[0] is norm
