"""Batched GEMMs with an unbatched right operand run as one GEMM over their stacked rows
(`planning/gemm_fold.py`): every layout plans the fold, the batched operands hold the folded
plan's shards, and the device model computes the right numbers from them."""

import re
from dataclasses import replace

import pytest
from gemm_support import gemm_text, run_gemm
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from device.model.host import stored_of_values
from device.target import IPU21
from interpreters.graph import run_function
from ipu_dialects import mid
from ipu_dialects.mid import AxisTilingAttr
from passes import get_all_passes
from passes.ipu_pipeline import STAGES
from planning.gemm_fold import (
    BatchFold,
    NotAFold,
    batch_fold,
    folded_problem,
    plan_fold,
    refold_plan,
    unfold_plan,
)
from planning.gemm_problem import GemmProblem, catalog_entries, with_operand_formats
from planning.gemm_selection import (
    build_gemm_plan,
    evaluate_candidates,
    explain_gemm,
    select_gemm_plan,
)
from tools.ipu_run import find_function, make_context
from tools.run_io import compare

BERT_B8_FC = GemmProblem((8, 384, 768), (768, 3072), (8, 384, 3072), "f16")


def compile_and_run(text: str, tiles: int, catalog: tuple[str, ...] | None = None):
    """(the mid.gemm's plan, whether the device model's result matches the reference, the
    device model's result) for `text` compiled on `tiles` tiles."""
    run = run_gemm(text, tiles, seed=3, catalog=catalog)
    module = Parser(make_context(), text).parse_module()
    func = find_function(module, None)
    expected = run_function(module, run.inputs, func.sym_name.data)
    results = [stored_of_values(t, run.outcome.outputs[t.name]) for t in run.package.outputs]
    check = compare(results, expected, func.function_type.outputs.data)
    return run.plan, check.passed, results[0]


def lhs_batch_partitions(plan: mid.OperatorPlanAttr) -> tuple[int, ...]:
    return plan.operand_plan("lhs").format.partitions[:-2]


def test_bert_batch8_projection_is_planned_as_its_fold():
    """BERT-base at batch 8: an MLP projection that the slice-by-slice row plan cannot fit on
    any tile count (8 slices x 16 rows x 3072 columns per output-row tile) is chosen folded,
    one slice per partition."""
    chosen = select_gemm_plan(BERT_B8_FC, 1472)
    assert lhs_batch_partitions(chosen.plan) == (8,)
    assert chosen.planned.lhs_shape == (8 * 384, 768)
    rows_only = [e for e in evaluate_candidates(BERT_B8_FC, 1472, "pad", IPU21,
                                                catalog_entries(["amp_gemm_f16_r16"]))]
    assert rows_only[0].reason is None and lhs_batch_partitions(rows_only[0].plan) == (8,)


def test_unfold_and_refold_are_inverse():
    fold = batch_fold(BERT_B8_FC, 16)
    assert fold == BatchFold((8,), 384)
    planned = folded_problem(BERT_B8_FC, fold)
    for name in ("amp_gemm_f16_r16", "amp_gemm_f16_grid", "amp_gemm_f16_ksplit"):
        (candidate,) = catalog_entries([name])
        folded = build_gemm_plan(candidate, planned, 1472, "pad", IPU21)
        batched = unfold_plan(folded, BERT_B8_FC, fold)
        assert batched is not None, name
        assert plan_fold(batched, BERT_B8_FC) == fold
        assert refold_plan(batched, fold) == folded


def test_no_fold_where_a_tile_would_hold_rows_of_two_slices():
    """Rows per tile that do not divide a slice's rows have no batched format: no fold."""
    problem = GemmProblem((3, 48, 64), (64, 64), (3, 48, 64), "f16")
    fold = batch_fold(problem, 16)
    assert fold is not None
    (candidate,) = catalog_entries(["amp_gemm_f16_r16"])
    # on 3 tiles the 9 row blocks go 3 per tile: 48 rows per tile, one slice each (a fold)
    assert unfold_plan(build_gemm_plan(candidate, folded_problem(problem, fold), 3, "pad",
                                       IPU21), problem, fold) is not None
    # on 2 tiles it is 80 rows per tile, across slices: planned slice by slice
    assert unfold_plan(build_gemm_plan(candidate, folded_problem(problem, fold), 2, "pad",
                                       IPU21), problem, fold) is None
    chosen = select_gemm_plan(problem, 2)
    assert chosen.planned is problem and lhs_batch_partitions(chosen.plan) == (1,)


def test_a_fold_that_splits_slices_is_padded_to_the_plans_rows_and_planned_again():
    """`refit_fold`: on 4 tiles the K-split plan of 4 slices of 40 rows padded to 48 puts
    96 rows on a tile, two slices; padded to 96 rows each, the same layout folds them."""
    problem = GemmProblem((4, 40, 96), (96, 80), (4, 40, 80), "f16")
    (candidate,) = catalog_entries(["amp_gemm_f16_ksplit"])
    first = batch_fold(problem, candidate.row_block)
    assert first is not None
    first_plan = build_gemm_plan(candidate, folded_problem(problem, first), 4, "pad", IPU21)
    assert unfold_plan(first_plan, problem, first) is None
    (evaluation,) = evaluate_candidates(problem, 4, "pad", IPU21, [candidate])
    assert evaluation.reason is None
    assert evaluation.planned.lhs_shape == (4 * 96, 96) != folded_problem(problem, first).lhs_shape


@pytest.mark.parametrize("problem", [
    GemmProblem((4, 40, 96), (96, 80), (4, 40, 80), "f16", transpose_lhs=True),
    GemmProblem((4, 40, 96), (4, 96, 80), (4, 40, 80), "f16"),  # a batched B
    GemmProblem((40, 96), (96, 80), (40, 80), "f16"),
    GemmProblem((1, 40, 96), (96, 80), (1, 40, 80), "f16"),  # one slice: nothing to fold
])
def test_what_does_not_fold(problem):
    assert batch_fold(problem, 16) is None


def test_the_fold_is_never_costlier_than_slice_by_slice():
    """Every candidate keeps the cheaper of its fold and its slice-by-slice plan."""
    problem = GemmProblem((4, 40, 96), (96, 80), (4, 40, 80), "f16")
    for tiles in (1, 4, 16, 64):
        for evaluation in evaluate_candidates(problem, tiles, "pad", IPU21):
            if evaluation.reason is not None:
                continue
            sliced = build_gemm_plan(evaluation.candidate, problem, tiles, "pad", IPU21)
            from planning.gemm_selection import estimate_cycles, validate_gemm_plan
            if validate_gemm_plan(sliced, problem, tiles, IPU21) is None:
                assert evaluation.cycles is not None
                assert evaluation.cycles <= estimate_cycles(sliced, problem, tiles, IPU21)


def test_explain_says_the_plan_is_folded():
    problem = GemmProblem((4, 40, 96), (96, 80), (4, 40, 80), "f16")
    chosen = [line for line in explain_gemm(problem, 16) if line.startswith("*")]
    assert chosen and chosen[0].endswith(
        "batch folded: 4 slices as one [192, 96] x [96, 80] GEMM")


FOLDED_RUNS = [
    # (lhs, rhs, out, element, flags, tiles, catalog)
    ((4, 40, 96), (96, 80), (4, 40, 80), "f16", "", 16, "amp_gemm_f16_r16"),
    ((4, 40, 96), (96, 80), (4, 40, 80), "f16", "", 16, "amp_gemm_f16_grid"),
    ((4, 40, 96), (96, 80), (4, 40, 80), "f16", "", 16, "amp_gemm_f16_ksplit"),
    ((2, 3, 32, 130), (1, 130, 70), (2, 3, 32, 70), "f32", "", 12, "amp_gemm_f32_r16"),
    ((3, 40, 130), (70, 130), (3, 40, 70), "f16", "transpose_rhs ", 6, "amp_gemm_f16_r16"),
    ((2, 32, 192), (192, 64), (2, 32, 64), "f8E4M3FNUZ", "", 8, "amp_gemm_f8_r16"),
]


@pytest.mark.parametrize("lhs,rhs,out,element,flags,tiles,candidate", FOLDED_RUNS)
def test_folded_plans_compute_the_reference_on_the_device_model(lhs, rhs, out, element, flags,
                                                                 tiles, candidate):
    plan, passed, _ = compile_and_run(gemm_text(lhs, rhs, out, element, flags), tiles,
                                      (candidate,))
    assert plan.candidate.data == candidate
    assert any(p > 1 for p in lhs_batch_partitions(plan)), "the plan must be the fold"
    assert passed


def test_a_small_batched_gemm_is_not_refused_for_want_of_a_tile():
    """The issue's 130x2x2x1 x 1x1x1x4 (8 KB): each slice padded to 16 rows, one per tile."""
    plan, passed, result = compile_and_run(
        gemm_text((130, 2, 2, 1), (1, 1, 1, 4), (130, 2, 2, 4), "f32"), 1472)
    assert lhs_batch_partitions(plan) == (130, 2)
    assert passed and result.shape == (130, 2, 2, 4)


def test_a_hand_written_batch_cut_that_is_no_fold_is_refused_in_mid_to_tile():
    """A mid.gemm whose batch axes hold two slices per partition: no fold places it, and
    mid-to-tile says so instead of lowering it as a fold."""
    ctx = make_context()
    module = Parser(ctx, gemm_text((4, 32, 64), (64, 64), (4, 32, 64), "f16")).parse_module()
    registry = get_all_passes()
    registry["graph-to-mid"]()(tiles=8, catalog=("amp_gemm_f16_r16",)).apply(ctx, module)
    for stage in STAGES[1:STAGES.index("mid-to-tile")]:
        registry[stage]()().apply(ctx, module)
    text = str(module)
    assert "[1 x 4 pad," in text
    module = Parser(make_context(), text.replace("[1 x 4 pad,", "[1 x 2 pad,")).parse_module()
    module.verify()
    with pytest.raises(PassFailedException, match=(
            r"mid-to-tile: mid.gemm %c: lhs batch axis 0 is tiled 1 x 2; a fold holds one "
            r"slice per partition \(1 x 4\)")):
        registry["mid-to-tile"]()().apply(make_context(), module)


def test_a_batch_cut_on_a_gemm_that_has_no_fold_is_named():
    problem = GemmProblem((4, 32, 64), (64, 64), (4, 32, 64), "f16")
    plan = select_gemm_plan(problem, 8).plan
    with pytest.raises(NotAFold, match=re.escape(
            "lhs's batch axes are cut, which only a folded GEMM does (an untransposed lhs with "
            "several batch slices, a result batched as lhs, no rhs batch axis above 1)")):
        plan_fold(plan, replace(problem, transpose_lhs=True))


def test_a_fold_whose_lhs_and_result_pad_rows_differently_is_named():
    problem = GemmProblem((4, 40, 96), (96, 80), (4, 40, 80), "f16")
    plan = select_gemm_plan(problem, 16).plan
    assert plan_fold(plan, problem) is not None
    out = plan.operand_plan("out").format
    *batch, rows, columns = out.tiling.data
    assert (rows.block.data, rows.partitions.data) == (16, 3)  # a slice's 40 rows pad to 48
    one_block = AxisTilingAttr(64, 1, rows.indivisible.data)  # pads them to 64
    edited = with_operand_formats(plan, {"out": out.with_changes(
        tiling=[*batch, one_block, columns])})
    with pytest.raises(NotAFold, match=r"lhs and the result pad their rows differently "
                                       r"\(\[48, 64\]\)"):
        plan_fold(edited, problem)
