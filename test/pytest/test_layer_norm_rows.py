"""A layer norm after a batched GEMM whose output is cut into 64-column blocks: it cannot follow
that cut (its rows must be whole on a tile), so it takes the input's cut on batch and rows with
the rows whole, or that cut k times finer (`layer_norm.rows_of`), where each input shard goes
to its rows' tiles instead of to a one-axis split that every input tile feeds. The look-ahead
prices a GEMM consumer by the cheapest of its plans given the producer's format
(`LookAhead.gemm_extra_cycles`), not by the plan the GEMM would pick alone."""

from __future__ import annotations

from e2e_support import compile_case, run_verdict
from xdsl.dialects.builtin import Float16Type, TensorType
from xdsl.parser import Parser

from ipu_dialects import mid
from passes import get_all_passes
from passes.operators.layer_norm import rows_of
from tools.registry import make_context


def block_module(batch: int, rows: int, width: int) -> str:
    a, w, b = f"tensor<{batch}x{rows}x{width}xf16>", f"tensor<{width}x{width}xf16>", \
        f"tensor<{width}xf16>"
    return (f"func.func @f(%x: {a}, %w: {w}, %b: {b}, %g: {b}, %h: {b}) -> {a} {{\n"
            f"  %y = graph.gemm %x, %w : ({a}, {w}) -> {a}\n"
            f"  %z = graph.add %y, %b : ({a}, {b}) -> {a}\n"
            f"  %n = graph.layer_norm %z, %g, %h eps 1.0e-05 : ({a}, {b}, {b}) -> {a}\n"
            f"  func.return %n : {a}\n}}\n")


def test_rows_keep_the_leading_cut_and_refine_the_row_axis():
    fmt = mid.TensorFormatAttr("f16", "amp_output", [mid.AxisTilingAttr(1, 4),
                                                     mid.AxisTilingAttr(16, 4),
                                                     mid.AxisTilingAttr(64, 4)], group=64)
    found = dict(rows_of(fmt, TensorType(Float16Type(), [4, 64, 256]), 64))
    assert [(t.block.data, t.partitions.data) for t in found["rows"].tiling.data] == [
        (1, 4), (16, 4), (1, 1)]
    assert [(t.block.data, t.partitions.data) for t in found["rows4"].tiling.data] == [
        (1, 4), (4, 16), (1, 1)]
    assert found["rows"].order.data == "row_major" and found["rows4"].group.data == 64
    assert "rows8" not in found  # 128 tiles: more than the pipeline has
    whole_rows = fmt.with_changes(tiling=[mid.AxisTilingAttr(1, 4), mid.AxisTilingAttr(16, 4),
                                          mid.AxisTilingAttr(1, 1)])
    assert rows_of(whole_rows, TensorType(Float16Type(), [4, 64, 256]), 64) == []  # follow it


def test_a_layer_norm_after_a_batched_gemm_takes_its_rows_and_passes_on_the_model(monkeypatch):
    """Without the column-split layer norm (which keeps the add's column blocks:
    `test/pytest/test_layer_norm_columns.py`), the rows of the add's cut."""
    import passes.operators.layer_norm as layer_norm

    monkeypatch.setattr(layer_norm, "column_split_kinds", lambda op, outputs: [])
    norm, add, text = lowered_block()
    assert norm.plan.candidate.data.startswith("layer_norm_rows")
    add_cut, norm_cut = (op.plan.operand_plan("out").format.partitions for op in (add, norm))
    assert add_cut[-1] > 1 and norm_cut[-1] == 1  # the add keeps the GEMM's column blocks
    assert norm_cut[0] == add_cut[0] and norm_cut[1] % add_cut[1] == 0  # its rows, refined
    assert run_verdict(compile_case(Parser(make_context(), text).parse_module(), 64)) is None


def test_with_the_column_split_the_layer_norm_keeps_the_add_cut_and_passes():
    norm, add, text = lowered_block()
    assert norm.plan.candidate.data.startswith("layer_norm_cols_")
    add_cut, norm_cut = (op.plan.operand_plan("out").format.partitions for op in (add, norm))
    assert norm_cut == add_cut and add_cut[-1] > 1
    assert run_verdict(compile_case(Parser(make_context(), text).parse_module(), 64)) is None


def lowered_block():
    """The batched GEMM, bias add and layer norm at 64 tiles after graph-to-mid: (the layer
    norm, the add, the module's text)."""
    ctx = make_context()
    text = block_module(4, 64, 256)
    lowered = Parser(ctx, text).parse_module()
    get_all_passes()["graph-to-mid"]()(tiles=64).apply(ctx, lowered)
    (norm,) = [op for op in lowered.walk() if isinstance(op, mid.LayerNormOp)]
    (add,) = [op for op in lowered.walk() if isinstance(op, mid.AddOp)]
    return norm, add, text


def test_a_gemm_consumer_is_priced_by_its_cheapest_plans_given_the_format():
    """The extra a GEMM pays for an operand format is at most the conversion into the plan it
    would pick alone (the cheapest by its own cycles), and never negative."""
    from passes.graph_to_mid import GraphToMidLowering, GraphToMidPass
    from passes.operators.costs import conversion_type_cycles
    from passes.operators.formats import split_format, with_format

    ctx = make_context()
    module = Parser(ctx, block_module(4, 64, 256)).parse_module()
    function = next(op for op in module.walk() if op.name == "func.func")
    pass_ = GraphToMidPass(tiles=64)
    target = pass_.checked_target()
    lowering = GraphToMidLowering(function, pass_.pipeline_config(target), target)
    gemm = next(op for op in function.walk() if op.name == "graph.gemm")
    look_ahead = lowering.look_ahead
    lhs = gemm.operands[0]
    lhs_type = lhs.type
    for axis in (0, 1, 2):
        fmt = split_format(lhs_type.get_shape(), axis, 64, lhs_type, "pad")
        extra = look_ahead.gemm_extra_cycles(gemm, 0, lhs, fmt)
        alone = look_ahead.gemm_options[gemm][0][0].operand_plan("lhs").format
        into_alone = conversion_type_cycles(with_format(lhs_type, fmt),
                                            with_format(lhs_type, alone), target)
        assert 0 <= extra <= into_alone
