"""`graph-to-mid{inputs=row_major}` end to end: the host writes every argument row-major, whole,
on tile 0, and the device rearranges it into the formats the plans want. A GEMM and the MLP
example compiled so PASS on the device model against the NumPy reference.

Neither `ipu-run` nor `ipu-pipeline` has an `inputs` option (only `graph-to-mid` does), so
this runs the default pipeline's stages with `graph-to-mid`'s policy set, then the package
writer and the device model, and checks as `ipu-run` does (tools.ipu_run.compare, no exchange
errors).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_support import gemm_module
from xdsl.dialects.builtin import ModuleOp, TensorType

from device.model import run_package
from device.model.host import stored_of_values, values_of_stored
from device.package import Package
from frontend.builder import f16
from interpreters.graph import find_function, run_function
from ipu_dialects import mid
from passes.graph_to_mid import GraphToMidPass
from passes.ipu_pipeline import IpuPipelinePass
from tools.ipu_run import compare, make_context, parse_module, random_inputs
from tools.package_writer import build_package

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TILES = (1, 4, 16)


def compile_row_major(module: ModuleOp, tiles: int) -> tuple[ModuleOp, Package]:
    """The default pipeline with `graph-to-mid{tiles=N inputs=row_major}` as its first stage."""
    ctx = make_context()
    module = module.clone()
    stages = IpuPipelinePass(tiles=tiles).stage_passes()
    assert isinstance(stages[0], GraphToMidPass)
    for stage in [GraphToMidPass(tiles=tiles, inputs="row_major"), *stages[1:]]:
        stage.apply(ctx, module)
        module.verify()
    return module, build_package(module, with_assembly=False)


def run_row_major(module: ModuleOp, tiles: int, seed: int = 0):
    func = find_function(module)
    arrays = random_inputs(func, seed)
    expected = run_function(module, arrays)
    compiled, package = compile_row_major(module, tiles)
    feeds = {t.name: values_of_stored(t, a) for t, a in zip(package.inputs, arrays, strict=True)}
    outcome = run_package(package, feeds)
    results = [stored_of_values(t, outcome.outputs[t.name]) for t in package.outputs]
    check = compare(results, expected, list(func.function_type.outputs.data))
    return compiled, package, check, outcome


def assert_inputs_row_major_on_tile_0(package: Package) -> None:
    for tensor in package.inputs:
        assert tensor.order == "row_major", tensor
        assert tensor.tiles.tolist() == [0], tensor  # one shard, the whole tensor
        assert tensor.padded == tensor.shape, tensor


def rearrangements(compiled: ModuleOp) -> int:
    """Tile work that came from a mid.rearrange (its provenance names the consumer)."""
    return sum(1 for op in compiled.walk()
               if op.name == "tile.kernel" and op.properties["callee"].string_value()
               in ("gather_shard", "convert_shard"))


@pytest.mark.parametrize("tiles", TILES)
def test_gemm_with_row_major_inputs_passes(tiles):
    module = gemm_module((96, 128), (128, 64), f16)
    compiled, package, check, outcome = run_row_major(module, tiles)
    assert check.passed and not outcome.exchange_errors, (check, outcome.exchange_errors[:1])
    assert_inputs_row_major_on_tile_0(package)
    assert rearrangements(compiled) >= 2  # both operands are moved into their AMP layouts


@pytest.mark.parametrize("tiles", TILES)
def test_mlp_example_with_row_major_inputs_passes(tiles):
    module = parse_module(EXAMPLES / "mlp_f16.mlir")
    compiled, package, check, outcome = run_row_major(module, tiles)
    assert check.passed and not outcome.exchange_errors, (check, outcome.exchange_errors[:1])
    assert_inputs_row_major_on_tile_0(package)
    # x, w1, b1 and w2 all arrive row-major on tile 0; each consumer's format differs
    assert rearrangements(compiled) >= 4


def test_row_major_policy_is_recorded_and_inputs_stay_whole():
    module = parse_module(EXAMPLES / "mlp_f16.mlir")
    compiled, _ = compile_row_major(module, 4)
    config = compiled.attributes[mid.CONFIG_ATTR_NAME]
    assert isinstance(config, mid.PipelineConfigAttr)
    assert config.inputs.data == "row_major"
    origins = [op.properties["origin"] for op in compiled.walk()
               if op.name == "tile.buffer" and op.properties["kind"].data == "input"]
    assert len(origins) == 4
    for origin in origins:
        assert isinstance(origin, TensorType)
        fmt = origin.encoding
        assert isinstance(fmt, mid.TensorFormatAttr)
        assert fmt.order.data == "row_major" and fmt.partition_count == 1
