"""mid dialect attributes from Python, and graph-to-mid / insert-conversions in process."""

from typing import get_args

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f16
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException, VerifyException

from ipu_dialects import graph, mid
from passes.graph_to_mid import GraphToMidPass
from passes.insert_conversions import InsertConversionsPass
from passes.ipu_pipeline import STAGES, IpuPipelinePass
from tools.registry import make_context


def context():
    return make_context()


def left_format(**changes):
    fmt = mid.TensorFormatAttr("f16", "amp_left", [mid.AxisTilingAttr(16, 4), mid.AxisTilingAttr(64, 1)],
                               replication=1, group=4)
    return fmt.with_changes(**changes) if changes else fmt


def test_format_prints_and_parses_back():
    fmt = left_format(scale=-3, precision="f8f143", memory="interleaved")
    text = str(fmt)
    assert text == ("#mid.format<f8f143<-3>, amp_left, [16 x 4 pad, 64 x 1 pad], "
                    "replication = 1, group = 4, interleaved>")
    assert Parser(context(), text).parse_attribute() == fmt
    t = TensorType(f16, [128, 64], fmt)
    assert Parser(context(), str(t)).parse_type() == t


@pytest.mark.parametrize("changes,message", [
    (dict(group=3), "tile group 3 is smaller than replication 1 x 4 partitions = 4 tiles"),
    (dict(replication=2, group=4), "tile group 4 is smaller than replication 2 x 4"),
    (dict(precision="f32", scale=2), "only f8f143 and f16 have a scale"),
    (dict(precision="f16", scale=40), "f16 scale 40 is outside -31..31"),
    (dict(precision="f8f143", scale=40), "f8f143 scale 40 is outside -31..31"),
    (dict(order="col_major"), "element order 'col_major' is not one of"),
    (dict(memory="fast"), "memory class 'fast' is not one of"),
])
def test_format_verifier(changes, message):
    with pytest.raises(VerifyException, match=message):
        left_format(**changes)


def test_plan_and_config_accessors():
    plan = mid.OperatorPlanAttr(
        "p", mid.OperatorDispatchAttr("gemm_blocks", 64, 64, "amp_gemm_f16_init", "amp_gemm_f16_accum"),
        "f32", "A16/B16x16/C16",
        [mid.OperandPlanAttr("lhs", "left", left_format(), 32, 16)], distinct=(), alias="none")
    assert plan.dispatch.init_symbol == "amp_gemm_f16_init" and plan.dispatch.inner_block == 64
    assert plan.operand_plan("lhs").tail.data == 16
    with pytest.raises(KeyError):
        plan.operand_plan("rhs")
    assert Parser(context(), str(plan)).parse_attribute() == plan
    config = mid.PipelineConfigAttr("ipu21", 16, catalog=["a", "b"])
    assert config.catalog_names == ("a", "b")
    assert Parser(context(), str(config)).parse_attribute() == config


def gemm_chain_module(m=64, k=64, n=128) -> ModuleOp:
    a, b, w = TensorType(f16, [m, k]), TensorType(f16, [k, n]), TensorType(f16, [n, k])
    body = Block(arg_types=[a, b, w])
    c = graph.GemmOp(body.args[0], body.args[1])
    d = graph.GemmOp(c.result, body.args[2])
    body.add_ops([c, d, func.ReturnOp(d.result)])
    return ModuleOp([func.FuncOp("chain", ((a, b, w), (d.result.type,)), Region(body))])


def test_graph_to_mid_then_insert_conversions_in_process():
    module = gemm_chain_module()
    GraphToMidPass(tiles=4).apply(context(), module)
    module.verify()
    config = module.attributes[mid.CONFIG_ATTR_NAME]
    assert isinstance(config, mid.PipelineConfigAttr) and config.tiles.data == 4
    names = [op.name for op in module.walk()]
    assert names.count("mid.gemm") == 2 and "graph.gemm" not in names
    assert names.count("builtin.unrealized_conversion_cast") == 1
    InsertConversionsPass().apply(context(), module)
    module.verify()
    names = [op.name for op in module.walk()]
    assert "builtin.unrealized_conversion_cast" not in names and names.count("mid.rearrange") == 1
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    gemms = [op for op in module.walk() if isinstance(op, mid.GemmOp)]
    # signature carries the formats the plans want: the host writes inputs in that layout
    assert function.args[0].type.encoding == gemms[0].plan.operand_plan("lhs").format
    assert function.function_type.outputs.data[0].encoding == gemms[1].plan.operand_plan("out").format


@pytest.mark.parametrize("tiles", [0, -1, 1473])
def test_bad_tile_counts_are_diagnostics(tiles):
    with pytest.raises(PassFailedException, match=f"tiles={tiles} is outside 1..1472"):
        GraphToMidPass(tiles=tiles).apply(context(), gemm_chain_module())


def test_option_literals_are_their_enums_values():
    """The options' `Literal` types (xDSL pass options and typer take no StrEnum) name the
    values of the enums the configuration stores, in their order."""
    from ipu_dialects.mid_attrs import IndivisibleOption
    from ipu_dialects.mid_config import InputPolicyOption, ProfilingOption

    assert get_args(IndivisibleOption) == tuple(mid.Indivisible)
    assert get_args(InputPolicyOption) == tuple(mid.InputPolicy)
    assert get_args(ProfilingOption) == tuple(mid.ProfilingPolicy)


def test_pipeline_stage_order_and_graph_to_mid_options():
    assert STAGES == ("graph-to-mid", "insert-conversions", "normalize-repeats", "mid-to-tile",
                      "place-memory", "schedule-exchange")
    stages = IpuPipelinePass(tiles=4, indivisible="reject").stage_passes()
    assert [s.name for s in stages] == list(STAGES)
    assert (stages[0].tiles, stages[0].indivisible) == (4, "reject")


def test_pipeline_lowers_a_single_gemm_below_mid():
    a, b = TensorType(f16, [64, 128]), TensorType(f16, [128, 64])
    body = Block(arg_types=[a, b])
    c = graph.GemmOp(body.args[0], body.args[1])
    body.add_ops([c, func.ReturnOp(c.result)])
    module = ModuleOp([func.FuncOp("f", ((a, b), (c.result.type,)), Region(body))])
    IpuPipelinePass(tiles=4).apply(context(), module)
    dialects = {op.dialect_name() for op in module.walk()}
    assert "graph" not in dialects and "mid" not in dialects
    assert module.attributes[mid.CONFIG_ATTR_NAME].tiles.data == 4
