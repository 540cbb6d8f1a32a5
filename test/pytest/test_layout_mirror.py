"""Layout results that carry their operand's cut (`passes/operators/layout_mirror.py`) or take
the format their GEMM or attention consumer's plan wants (`LayoutOperator.result_formats`).

The formats are checked against what a tile holds (`is_local_view`: every result element's
source on the same tile), and a small BERT layer at batch 2, whose head split reads a batched
GEMM output cut on batch, rows and columns, is run on the device model against the
reference."""

from __future__ import annotations

import dataclasses

from e2e_support import compile_case, run_verdict
from xdsl.dialects.builtin import Float16Type, TensorType

from device.index_views import IndexView, row_major_strides
from frontend.models import MODELS, build_model, tiny
from ipu_dialects import mid
from passes.graph_to_mid import GraphToMidPass
from passes.operators.layout import is_local_view
from passes.operators.layout_mirror import permuted_format, reshaped_format, transposed_format
from tools.registry import make_context


def fmt(tiling, order="row_major", group=None):
    tiles = 1
    for _, parts in tiling:
        tiles *= parts
    return mid.TensorFormatAttr("f16", order, [mid.AxisTilingAttr(b, p) for b, p in tiling],
                                group=group or tiles)


def typed(shape, encoding):
    return TensorType(Float16Type(), shape, encoding)


def reshape_view(out_shape):
    return IndexView((0,) * len(out_shape), tuple(out_shape), row_major_strides(tuple(out_shape)),
                     0)


def test_a_gemm_output_cut_into_column_blocks_reshapes_into_heads_on_the_same_tiles():
    src = fmt([(1, 2), (16, 2), (64, 4)], "amp_output")  # [2, 64, 256]: batch, rows, columns
    out = reshaped_format(src, reshape_view((2, 64, 4, 64)), (2, 64, 256), (2, 64, 4, 64))
    assert out is not None
    assert [(t.block.data, t.partitions.data) for t in out.tiling.data] == [
        (1, 2), (32, 2), (1, 4), (1, 1)]
    assert out.order.data == "row_major" and out.group.data == src.group.data
    assert is_local_view(reshape_view((2, 64, 4, 64)), typed([2, 64, 256], src),
                         typed([2, 64, 4, 64], out))


def test_a_reshape_cut_inside_a_merged_group_or_unevenly_has_no_mirror():
    inner_cut = fmt([(1, 1), (1, 3)])  # [4, 6] cut on its inner axis, merged into [24]
    assert reshaped_format(inner_cut, reshape_view((24,)), (4, 6), (24,)) is None
    uneven = fmt([(1, 3), (1, 1)])  # [4, 6] cut into chunks of 2, 2 and 0 rows
    assert reshaped_format(uneven, reshape_view((2, 2, 6)), (4, 6), (2, 2, 6)) is None


def test_a_transpose_mirrors_a_cut_only_when_the_cut_axes_keep_their_order():
    src = fmt([(1, 2), (32, 2), (1, 4), (1, 1)])  # [2, 64, 4, 64]
    kept = transposed_format(src, (0, 1, 3, 2))
    assert kept is not None
    assert [t.partitions.data for t in kept.tiling.data] == [2, 2, 1, 4]
    permutation = (0, 1, 3, 2)
    strides = row_major_strides((2, 64, 4, 64))
    view = IndexView((0,) * 4, (2, 64, 64, 4), tuple(strides[p] for p in permutation), 0)
    assert is_local_view(view, typed([2, 64, 4, 64], src), typed([2, 64, 64, 4], kept))
    assert transposed_format(src, (0, 2, 1, 3)) is None  # heads before rows: tiles renumbered


def test_a_transpose_that_reorders_cut_axes_keeps_the_cut_but_moves_whole_shards():
    """Heads before rows renumber the tiles: the permuted cut is a candidate all the same,
    each shard moving whole to one tile (`gather.GatherRounds.group_inner`), not local."""
    src = fmt([(1, 2), (32, 2), (1, 4), (1, 1)])  # [2, 64, 4, 64]
    permuted = permuted_format(src, (0, 2, 1, 3))
    assert [t.partitions.data for t in permuted.tiling.data] == [2, 4, 2, 1]
    strides = row_major_strides((2, 64, 4, 64))
    view = IndexView((0,) * 4, (2, 4, 64, 64), tuple(strides[p] for p in (0, 2, 1, 3)), 0)
    assert not is_local_view(view, typed([2, 64, 4, 64], src), typed([2, 4, 64, 64], permuted))


def test_a_batched_layer_merges_heads_through_the_permuted_cut_and_passes():
    """Batch 4, 4 heads on 256 tiles: the attention output (batch, heads, query blocks) goes
    back to (batch, rows, heads) with the same cut (`transpose_permuted_gather`), and the
    layer PASSes on the device model."""
    config = dataclasses.replace(tiny(MODELS["bert-base-b8"]), seq=64, d_model=128, heads=4,
                                 mlp=256, batch=4)
    lowered = build_model(config)
    GraphToMidPass(tiles=256).apply(make_context(), lowered)
    plans = [op.plan.candidate.data for op in lowered.walk() if isinstance(op, mid.TransposeOp)]
    assert "transpose_permuted_gather" in plans
    assert run_verdict(compile_case(build_model(config), 256)) is None


def test_a_batched_layer_splits_heads_without_an_intermediate_gather_and_passes():
    ctx = make_context()
    config = tiny(MODELS["bert-base-b8"])
    lowered = build_model(config)
    GraphToMidPass(tiles=64).apply(ctx, lowered)
    plans = [op.plan.candidate.data for op in lowered.walk()
             if isinstance(op, mid.ReshapeOp | mid.TransposeOp)]
    assert "reshape_mirror_local" in plans and "transpose_mirror_local" in plans
    assert "reshape_consumer_gather" in plans
    assert run_verdict(compile_case(build_model(config), 64)) is None
