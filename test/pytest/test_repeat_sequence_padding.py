"""normalize-repeats pads a sequence element whose shard is not a multiple of its consumers'
alignment, instead of refusing a valid graph; what it cannot pad stays a diagnostic."""

from __future__ import annotations

import pytest
from e2e_support import compile_case, run_verdict
from xdsl.dialects.builtin import TensorType, f32
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from ipu_dialects import mid
from passes.normalize_repeats import RepeatNormalizer, padded_element
from tools.ipu_run import make_context

ODD = """
func.func @odd(%x0: tensor<4x3xf32>, %bs: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4x3xf32>) sequence(%b = %bs : tensor<2x3xf32>) {
    %y = graph.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %g = graph.gelu %y : tensor<4x3xf32> -> tensor<4x3xf32>
    graph.yield %g : tensor<4x3xf32>
  } -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}
"""


@pytest.mark.parametrize("tiles", [1, 4, 16])
def test_a_misaligned_sequence_element_is_padded_and_runs(tiles):
    module = Parser(make_context(), ODD, "odd").parse_module()
    assert run_verdict(compile_case(module, tiles)) is None


def row_major(block: int) -> mid.TensorFormatAttr:
    return mid.TensorFormatAttr("f32", "row_major", [mid.AxisTilingAttr(block, 1)], 1, 1,
                                "standard")


def test_padding_grows_an_unpartitioned_axis_to_the_alignment():
    padded = padded_element(TensorType(f32, [3]), row_major(1), 16)
    assert padded is not None
    assert [(a.block.data, a.partitions.data) for a in padded.tiling.data] == [(4, 1)]


def test_a_blocked_order_is_not_padded_and_stays_a_diagnostic():
    element = mid.TensorFormatAttr("f32", "amp_right", [mid.AxisTilingAttr(3, 1)] * 2)
    assert padded_element(TensorType(f32, [3, 3]), element, 64) is None


def test_the_unpaddable_stride_diagnostic():
    ctx = make_context()
    module = Parser(ctx, ODD, "odd").parse_module()
    from passes.ipu_pipeline import IpuPipelinePass

    stages = IpuPipelinePass(tiles=1).stage_passes()
    for stage in stages[:2]:  # graph-to-mid, insert-conversions
        stage.apply(ctx, module)
    repeat = next(op for op in module.walk() if isinstance(op, mid.RepeatOp))
    arg = repeat.sequence_args[0]
    with pytest.raises(PassFailedException, match="normalize-repeats: sequence operand #0 of "
                       "the repeat has elements of 12 bytes per tile, not a multiple of the "
                       "8-byte alignment its body's consumer asks for; consecutive blocks "
                       "cannot be aligned"):
        RepeatNormalizer.check_stride(repeat, 0, arg.type, arg.type.encoding, 8)
