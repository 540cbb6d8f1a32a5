"""Issue 23: the selector's estimate of a whole program equals the device model's modeled
cycles. graph-to-mid records on every mid op it selects a plan for the cycles the selector
expects it to cost (`ipu.estimate`: the plan's work and its operands' conversions into the
plan's formats, not the consumer look-ahead it ranked by); a repeat records its yield,
initial and invariant conversions; mid-to-tile sums them (each op once per iteration of
every repeat around it, `planning/program_estimate.py`) with the copies the repeat's
lowering adds, and keeps the total on the function; the package carries it
(`metadata["estimated_cycles"]`) and `ipu-run` prints it.

Measured when it was written: exact for every example at 1, 4, 16, 64, 256 and 1472 tiles and
for every `bench/models.py` case at 1472 (GPT-2-small 644,088, the BERT-base x12 stack
5,543,190)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdsl.parser import Parser

from frontend.models import MODELS, build_model, tiny
from ipu_dialects import mid
from passes.ipu_pipeline import IpuPipelinePass
from planning.program_estimate import op_estimates, program_estimate
from tools.ipu_run import compile_module
from tools.registry import make_context

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gemm_roofline import package_cycles

ROOT = Path(__file__).resolve().parents[2]

EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.mlir"))
TILE_COUNTS = (1, 16, 1472)


def example(name: str):
    return Parser(make_context(), (ROOT / "examples" / name).read_text()).parse_module()


def estimate_and_cycles(module, tiles: int) -> tuple[int, int]:
    package = compile_module(module, tiles, "pad", with_assembly=False)
    return package.metadata["estimated_cycles"], sum(package_cycles(package))


@pytest.mark.parametrize("tiles", TILE_COUNTS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_the_estimate_of_an_example_is_its_modeled_cycles(name, tiles):
    estimated, modeled = estimate_and_cycles(example(name), tiles)
    assert estimated == modeled


@pytest.mark.parametrize("case", ["gpt2-small", "bert-base-b8", "bert-base-x12"])
def test_the_estimate_of_a_small_transformer_is_its_modeled_cycles(case):
    estimated, modeled = estimate_and_cycles(build_model(tiny(MODELS[case])), 64)
    assert estimated == modeled


def test_the_estimate_is_the_cycles_the_device_model_runs():
    from device.model import run_package
    from device.model.host import values_of_stored
    from interpreters.graph import find_function
    from tools.run_io import random_inputs

    module = example("transformer_block.mlir")
    arrays = random_inputs(find_function(module.clone(), None), 0)
    package = compile_module(module, 16, "pad", with_assembly=False)
    feeds = {t.name: values_of_stored(t, a)
             for t, a in zip(package.inputs, arrays, strict=True)}
    assert run_package(package, feeds).cycles == package.metadata["estimated_cycles"]


def test_a_repeat_body_counts_once_per_iteration():
    """The body's ops carry one iteration's estimate; the function's sums them times the
    count, and the repeat's own is its yield conversions times the count."""
    module = example("repeat_layers.mlir")
    stages = IpuPipelinePass(tiles=16, indivisible="pad").stage_passes()
    ctx = make_context()
    stages[0].apply(ctx, module)  # graph-to-mid
    estimates = op_estimates(module)
    repeat = next(e for e in estimates if isinstance(e.op, mid.RepeatOp))
    body = [e for e in estimates if e.op.parent_op() is repeat.op]
    assert body and all(e.runs == repeat.op.count.value.data == 4 for e in body)
    assert repeat.runs == 1
    assert program_estimate(module) == sum(e.cycles * e.runs for e in estimates)


def test_a_hand_written_mid_function_has_no_estimate():
    """Only selected plans have estimates: mid IR without them (written by hand, or here
    stripped of them) compiles to a function and a package without one."""
    from tools.package_writer import build_package

    module = example("mlp_f16.mlir")
    stages = IpuPipelinePass(tiles=16, indivisible="pad").stage_passes()
    ctx = make_context()
    stages[0].apply(ctx, module)
    for op in module.walk():
        op.attributes.pop(mid.ESTIMATE_ATTR_NAME, None)
    for stage in stages[1:]:
        stage.apply(ctx, module)
    funcs = [op for op in module.walk() if op.name == "func.func"]
    assert funcs and all(mid.ESTIMATE_ATTR_NAME not in f.attributes for f in funcs)
    assert "estimated_cycles" not in build_package(module, with_assembly=False).metadata


@pytest.mark.parametrize("tiles", (16, 1472))
@pytest.mark.parametrize("name", EXAMPLES)
def test_offering_the_opt_in_layouts_never_costs_the_program_more(name, tiles):
    """With program-layouts, graph-to-mid also lowers with the opt-in layouts and keeps the
    lowering its estimate says is cheaper: never slower than the default catalog alone."""
    from planning.gemm_problem import default_catalog_names

    offered = sum(package_cycles(compile_module(example(name), tiles, "pad",
                                                with_assembly=False, program_layouts=True)))
    default = sum(package_cycles(compile_module(example(name), tiles, "pad",
                                                with_assembly=False,
                                                catalog=default_catalog_names())))
    assert offered <= default


def test_the_3d_grid_is_taken_where_the_program_gains():
    """examples/gemm_f16.mlir on 1472 tiles with program-layouts: the 3-D grid's lowering is
    estimated cheaper, kept, recorded in the config's catalog, and the package is faster."""
    from planning.gemm_problem import default_catalog_names

    module = example("gemm_f16.mlir")
    stages = IpuPipelinePass(tiles=1472, indivisible="pad", program_layouts=True).stage_passes()
    stages[0].apply(make_context(), module)
    assert "gemm_grid3d" in str(module)
    assert "amp_gemm_f16_grid3d" in module.attributes[mid.CONFIG_ATTR_NAME].catalog_names
    package = compile_module(example("gemm_f16.mlir"), 1472, "pad", with_assembly=False,
                             program_layouts=True)
    offered = sum(package_cycles(package))
    assert package.metadata["estimated_cycles"] == offered
    default = sum(package_cycles(compile_module(example("gemm_f16.mlir"), 1472, "pad",
                                                with_assembly=False,
                                                catalog=default_catalog_names())))
    assert offered < default
