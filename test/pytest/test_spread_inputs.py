"""Graph inputs stored spread over the chip (issue 28, "weights spread over the chip"): with
`graph-to-mid{spread-inputs=true}` a weight is stored on the least-loaded tiles and brought to
each consumer by a `mid.rearrange`; `ipu-pipeline` asks for it last when the program does not
fit otherwise. The proof program is many GEMMs of one small activation, each with its own
weight: every GEMM computes on the same tiles, so their weights pile up there."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import UnrealizedConversionCastOp
from xdsl.ir import BlockArgument
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from device.model import run_package
from device.model.host import stored_of_values, values_of_stored
from interpreters.graph import find_function, run_function
from ipu_dialects import mid
from passes import get_all_passes
from passes.ipu_pipeline import IpuPipelinePass, verify_after_stage
from passes.place_memory import OutOfTileMemory
from tools.ipu_run import compare, compile_module, make_context, random_inputs

TILES = 16


def heads_text(count: int, m: int = 16, k: int = 128, n: int = 128) -> str:
    """`count` GEMMs of one [m, k] activation by their own [k, n] weights, summed."""
    out = f"tensor<{m}x{n}xf32>"
    args = ", ".join([f"%x: tensor<{m}x{k}xf32>",
                      *(f"%w{i}: tensor<{k}x{n}xf32>" for i in range(count))])
    lines = [f"func.func @heads({args}) -> {out} {{"]
    lines += [f"  %g{i} = graph.gemm %x, %w{i} : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) "
              f"-> {out}" for i in range(count)]
    total = "%g0"
    for i in range(1, count):
        lines.append(f"  %s{i} = graph.add {total}, %g{i} : ({out}, {out}) -> {out}")
        total = f"%s{i}"
    lines.append(f"  func.return {total} : {out}\n}}\n")
    return "\n".join(lines)


def first_tiles_of_weights(module) -> list[int]:
    function = next(op for op in module.walk() if op.name == "func.func")
    return [arg.type.encoding.first_tile.data for arg in function.args[1:]]


def test_spread_inputs_stores_the_weights_on_different_tiles_and_rearranges_them():
    ctx = make_context()
    module = Parser(ctx, heads_text(4)).parse_module()
    get_all_passes()["graph-to-mid"]()(tiles=TILES, spread_inputs=True).apply(ctx, module)
    homes = first_tiles_of_weights(module)
    assert len(set(homes)) > 1, homes  # not all on the first consumer's tiles
    moved = 0
    for gemm in (op for op in module.walk() if isinstance(op, mid.GemmOp)):
        wanted = gemm.plan.operand_plan("rhs").format
        if isinstance(gemm.rhs, BlockArgument):  # stored where its GEMM wants it
            assert gemm.rhs.type.encoding == wanted
            continue
        bridge = gemm.rhs.owner  # else taken from its home through a bridge
        assert isinstance(bridge, UnrealizedConversionCastOp)
        home = bridge.inputs[0]
        assert isinstance(home, BlockArgument)
        assert home.type.encoding == wanted.with_changes(first_tile=home.type.encoding.first_tile.data)
        moved += 1
    assert moved >= 1
    plain = Parser(ctx, heads_text(4)).parse_module()
    get_all_passes()["graph-to-mid"]()(tiles=TILES).apply(ctx, plain)
    assert set(first_tiles_of_weights(plain)) == {0}  # the default stores them where used


def test_weights_that_pile_up_on_one_plans_tiles_fit_when_spread_and_pass_on_the_model():
    """24 weights of 64 KiB, each whole on the tiles its GEMM's row plan computes on, need
    more than a tile's memory there (the attempts that do not spread them run out of memory);
    spread, each is on those tiles only while its GEMM runs."""
    text = heads_text(24)
    first = IpuPipelinePass(tiles=TILES)
    for attempt in (first, first.without_replicating_plans()):
        ctx = make_context()
        module = Parser(ctx, text).parse_module()
        with pytest.raises(OutOfTileMemory, match="Out of memory on tile"):
            attempt.run_fitting_rows(module, lambda stages, m=module, c=ctx: PassPipeline(
                tuple(stages), verify_after_stage).apply(c, m))
    module = Parser(make_context(), text).parse_module()
    package = compile_module(module, TILES, "pad", with_assembly=False)
    assert "spread_inputs=true" in package.pipeline
    graph = Parser(make_context(), text).parse_module()
    arrays = random_inputs(find_function(graph), 0)
    expected = run_function(graph, arrays)
    feeds = {t.name: values_of_stored(t, a) for t, a in zip(package.inputs, arrays, strict=True)}
    outcome = run_package(package, feeds)
    assert not outcome.exchange_errors
    results = [stored_of_values(t, outcome.outputs[t.name]) for t in package.outputs]
    outputs = list(find_function(graph).function_type.outputs.data)
    assert compare(results, expected, outputs, None).passed
