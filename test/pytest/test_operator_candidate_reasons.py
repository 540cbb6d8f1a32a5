"""The reasons the pointwise operators give for rejecting a candidate plan (they reach the user
inside `graph-to-mid`'s "no valid operator plan" diagnostic). A `follow` candidate takes over
an operand's current format, which another operator chose; these formats come from such
operators (a GEMM's amp_right operand cuts two axes, gelu's split cuts the last axis)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from xdsl.dialects.builtin import Float32Type, FloatAttr, IntegerType, TensorType, f64
from xdsl.ir import Block

from device.target import IPU21
from ipu_dialects import graph, mid
from passes.operators.add import AddOperator
from passes.operators.base import Candidate, NoValidPlan, SelectionContext
from passes.operators.embedding import EmbeddingOperator
from passes.operators.gelu import GeluOperator
from passes.operators.layer_norm import LayerNormOperator
from passes.operators.resident import ResidentMemory

F32 = Float32Type()


def ctx(tiles: int = 4) -> SelectionContext:
    return SelectionContext(tiles, "pad", "consumer", IPU21, ())


def fmt(partitions, blocks=None, order="row_major", replication=1, group=4):
    blocks = blocks or [1] * len(partitions)
    return mid.TensorFormatAttr("f32", order, [mid.AxisTilingAttr(b, p) for b, p in
                                               zip(blocks, partitions, strict=True)],
                                replication=replication, group=group)


def values(*types):
    return Block(arg_types=list(types)).args


def tensor(shape, encoding=None):
    return TensorType(F32, shape, encoding)


def reasons(operator, op) -> dict[str, str | None]:
    return {c.name: c.reason for c in operator.candidates(op, ctx())}


def test_add_follow_of_a_two_axis_cut_replicates_a_bias_over_the_rows():
    # %w as a GEMM's rhs stores it: amp_right, 64-blocks cut 2 x 2; a bias along the kept
    # last axis is stored in its tiling, once per row block (tile t holds block t mod 2)
    w, b = values(tensor([128, 128], fmt([2, 2], [64, 64], "amp_right")), tensor([128]))
    op = graph.AddOp.create(operands=[w, b], result_types=[tensor([128, 128])])
    candidates = {c.name: c for c in AddOperator().candidates(op, ctx())}
    assert candidates["add_follow0"].reason is None
    rhs = candidates["add_follow0"].plan.operand_plan("rhs").format
    assert [(t.block.data, t.partitions.data) for t in rhs.tiling.data] == [(64, 2)]
    assert rhs.replication.data == 2


def test_add_follow_cannot_serve_an_operand_broadcast_along_a_cut_after_one_it_keeps():
    # a [128, 1] column against rows and columns cut 2 x 2: the tile of row block r and
    # column block c would need row block r, but a replicated format gives tile t block t // 2
    # only when the broadcast cut comes first
    x, b = values(tensor([128, 128], fmt([2, 2], [64, 64])), tensor([128, 1]))
    op = graph.AddOp.create(operands=[x, b], result_types=[tensor([128, 128])])
    found = reasons(AddOperator(), op)
    assert found["add_follow0"] == ("rhs is broadcast along a cut axis that comes after one it "
                                    "keeps cut, or the output is replicated")
    assert found["add_split0"] is None  # a valid plan remains: no diagnostic for the user


def test_layer_norm_cannot_follow_a_format_that_cuts_the_normalized_axis():
    x, w, b = values(tensor([2, 64], fmt([1, 4])), tensor([64]), tensor([64]))
    found = reasons(LayerNormOperator(), layer_norm(x, w, b))
    assert found["layer_norm_follow0"] == "the normalized last axis would be cut across tiles"
    assert found["layer_norm_split0"] is None


def test_layer_norm_weight_is_whole_under_a_two_axis_cut_and_refused_on_replicas():
    x, w, b = values(tensor([4, 4, 8], fmt([2, 2, 1])), tensor([8]), tensor([8]))
    candidates = {c.name: c for c in LayerNormOperator().candidates(layer_norm(x, w, b), ctx())}
    assert candidates["layer_norm_follow0"].reason is None
    assert candidates["layer_norm_follow0"].plan.operand_plan("weight").format.replication.data == 4
    x, w, b = values(tensor([4, 8], fmt([2, 1], replication=2)), tensor([8]), tensor([8]))
    found = reasons(LayerNormOperator(), layer_norm(x, w, b))
    assert found["layer_norm_follow0"] == "weight cannot be whole on every tile of a replicated output"


def test_a_followed_format_on_more_tiles_than_the_pipeline_is_rejected():
    (x,) = values(tensor([8, 8], fmt([8, 1], group=8)))
    op = graph.GeluOp.create(operands=[x], result_types=[tensor([8, 8])])
    found = reasons(GeluOperator(), op)
    assert found["gelu_follow0"] == "the output format uses 8 tiles, the pipeline has 4"
    assert found["gelu_split0"] is None


def test_no_valid_plan_names_every_candidate_and_its_reason():
    (x,) = values(tensor([8, 8], fmt([8, 1], group=8)))
    op = graph.GeluOp.create(operands=[x], result_types=[tensor([8, 8])])
    rejected = [c for c in GeluOperator().candidates(op, ctx()) if c.reason is not None]
    assert str(NoValidPlan(rejected)) == (
        "no valid operator plan: gelu_follow0: the output format uses 8 tiles, the pipeline "
        "has 4")


def layer_norm(x, w, b):
    shape = x.type.get_shape()
    return graph.LayerNormOp.create(operands=[x, w, b], result_types=[tensor(list(shape))],
                                    properties={"eps": FloatAttr(1e-5, f64)})


def gather_candidates(live: int) -> dict[str, Candidate]:
    """graph.gather of 4 rows of an 8000 x 16 f32 table (512,000 bytes) on 4 tiles, with
    `live` bytes of other inputs on each tile (`ResidentMemory`)."""
    table, ids = values(tensor([8000, 16]), TensorType(IntegerType(32), [4]))
    op = graph.GatherOp.create(operands=[table, ids], result_types=[tensor([4, 16])])
    resident = ResidentMemory(4, np.full(4, live), np.zeros(4, dtype=np.int64),
                              sequence_counts=(1, 1), new_inputs=(True, True))
    candidates = EmbeddingOperator().candidates(op, replace(ctx(), resident=resident))
    return {c.name: c for c in candidates}


def test_a_table_gathered_whole_on_tile_0_is_refused_beside_other_inputs():
    alone = gather_candidates(0)
    assert alone["gather_whole"].reason is None and alone["gather_split1"].reason is None
    crowded = gather_candidates(200_000)  # 512,000 + 200,000 bytes > tile memory
    assert "does not fit beside what its tiles already hold" in crowded["gather_whole"].reason
    assert crowded["gather_whole"].cycles is None
    assert crowded["gather_split1"].reason is None  # a quarter of the table on each tile


def test_when_no_candidate_fits_beside_tile_0_the_valid_ones_stay_valid():
    # the memory fallbacks of the pipeline answer that case, not selection
    crowded = gather_candidates(600_000)
    assert {name for name, c in crowded.items() if c.reason is None} == {
        name for name, c in gather_candidates(0).items() if c.reason is None}
