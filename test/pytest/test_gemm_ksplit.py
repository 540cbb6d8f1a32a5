"""The K-split GEMM plan (`planning/gemm_ksplit.py`) on the device model.

Two layers of a grid each sum half of K into FP32 partials; a block's rows come half from
each layer's A shards (one phase inside the layer, one across the layers, full duplex), B is
replicated per layer, and one full-duplex phase plus an `add` sum the layers' halves. These
tests run it from the encoded words, show that the model is not fooled by a wrong row or a
wrong home pointer, and pin the plan's refusals."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from e2e_support import compile_case, gemm_module, gemm_op_counts, run_verdict
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from device import isa
from device.package import ExchangeStep, KernelStep
from device.target import IPU21, latency_table
from frontend.builder import f16, f32
from planning.gemm_ksplit import KSplitShape, candidate_shapes, ranked_ksplits
from planning.gemm_problem import CATALOG, GemmProblem, catalog_entries
from planning.gemm_selection import build_gemm_plan, evaluate_candidates, validate_gemm_plan

KSPLIT_F16, KSPLIT_F32 = ("amp_gemm_f16_ksplit",), ("amp_gemm_f32_ksplit",)


@pytest.mark.parametrize("lhs,rhs,element,tiles", [
    ((128, 256), (256, 256), f16, 16),  # 2 layers of 2 x 4: pairs on A
    ((200, 384), (384, 330), f16, 30),  # padding on every axis, several panels
    ((512, 256), (256, 64), f16, 16),  # one grid column: B goes to pairs too
    ((96, 128), (128, 64), f16, 6),  # one column, 3 rows: the layers split a pair, no pairs
    ((32, 256), (256, 256), f16, 8),  # one grid row: no B phase
    ((96, 128), (128, 200), f16, 8),  # an odd number of grid columns: 32-bit A phases
    ((256, 256), (256, 256), f32, 16),
    ((64, 128), (128, 64), f16, 2),  # one tile per layer: only the phase across the layers
])
def test_ksplit_passes_on_the_device_model(lhs, rhs, element, tiles):
    catalog = KSPLIT_F16 if element is f16 else KSPLIT_F32
    case = compile_case(gemm_module(lhs, rhs, element), tiles, seed=3, catalog=catalog)
    assert run_verdict(case) is None


def ksplit_case():
    return compile_case(gemm_module((128, 256), (256, 256), f16), 16, seed=11,
                        catalog=KSPLIT_F16)


def step_named(package, text: str) -> tuple[int, ExchangeStep | KernelStep]:
    return next((i, s) for i, s in enumerate(package.steps) if text in s.provenance)


def test_a_tile_listening_to_the_wrong_partner_fails_the_run():
    """Tile 3 (layer 0) must take tile 11's half of the partials; tile 10's is wrong."""
    case = ksplit_case()
    assert run_verdict(case) is None
    corrupted = copy.deepcopy(case.package)
    _, step = step_named(corrupted, "the other layer's half of the f32 partials")
    assert isinstance(step, ExchangeStep)
    row = isa.decode(corrupted.rows[int(step.row_id[3])].tolist(), step.row_address)
    assert isinstance(row[0], isa.SendPicP) and row[0].xpic == 11
    row[0] = isa.SendPicP(row[0].words_m1, row[0].address, row[0].sctl, row[0].pic_selector,
                          10, row[0].pic)
    corrupted.rows.append(np.asarray(isa.encode(row, step.row_address), dtype=np.uint32))
    step.row_id[3] = len(corrupted.rows) - 1
    verdict = run_verdict(case, corrupted)
    assert verdict is not None and verdict.startswith("outputs differ")


def test_a_layer_one_tile_adding_the_wrong_half_fails_the_run():
    """The add's home view points layer 1's tiles at half 1 of their partials; half 0
    (the half they sent away) gives wrong sums."""
    case = ksplit_case()
    corrupted = copy.deepcopy(case.package)
    _, add = step_named(corrupted, "sum the two layers' halves")
    assert isinstance(add, KernelStep) and add.symbol == "add"
    lhs = add.pointers[:, 1]
    assert len(np.unique(lhs)) == 2  # two halves: one per layer
    add.pointers[8, 1] = add.pointers[0, 1]
    verdict = run_verdict(case, corrupted)
    assert verdict is not None and verdict.startswith("outputs differ")


def op_counts(tiles: int) -> list[int]:
    return gemm_op_counts(tiles, KSPLIT_F16)


def test_op_counts_do_not_grow_with_the_tile_count():
    assert op_counts(64) == op_counts(256) == op_counts(1472)


def test_the_roofline_shapes_choose_two_layers_that_fill_the_chip():
    latency = latency_table(IPU21, 1472)
    shape = ranked_ksplits(4096, 4096, 4096, 1472, "f16", "f16", 16, IPU21, latency)[0]
    assert shape == KSplitShape(rows=22, cols=32, half_rows=96, panels=2, a_k_blocks=2,
                                b_k_blocks=3, steps=32)
    assert shape.tiles == 1408  # 2 x 22 x 32: 1472 = 2^6 x 23 has no better split


def ksplit_plan(problem: GemmProblem, tiles: int):
    candidate = next(c for c in CATALOG if c.name == "amp_gemm_f16_ksplit")
    return build_gemm_plan(candidate, problem, tiles, "pad", IPU21)


@pytest.mark.parametrize("problem, reason", [
    (GemmProblem((64, 192), (192, 64), (64, 64), "f16"),
     "the K-split plan gives each of its two layers half of K; K has 3 block(s) of 64, an "
     "odd number"),
    (GemmProblem((2, 64, 128), (128, 64), (2, 64, 64), "f16"),
     "the K-split plan runs one GEMM; this one has 2 batch slices"),
    (GemmProblem((16, 128), (128, 64), (16, 64), "f16"),
     "the K-split plan cuts the output rows into two layers of chunks; 16 rows make 1 "
     "chunk(s) of 16 or more"),
])
def test_shapes_the_ksplit_cannot_run_are_refused_with_a_reason(problem, reason):
    assert validate_gemm_plan(ksplit_plan(problem, 8), problem, 8, IPU21) == reason


def with_format(plan, operand: str, **changes):
    from ipu_dialects.mid import OperandPlanAttr, OperatorPlanAttr

    operands = [
        OperandPlanAttr(e.operand.data, e.role.data,
                        e.format.with_changes(**changes) if e.operand.data == operand
                        else e.format, e.alignment.data, e.tail.data)
        for e in plan.operands.data
    ]
    return OperatorPlanAttr(plan.candidate.data, plan.dispatch, plan.accumulate.data,
                            plan.amp.data, operands, plan.distinct_pairs, plan.alias.data)


def test_a_ksplit_whose_b_is_not_replicated_or_cut_otherwise_is_invalid():
    from ipu_dialects.mid import AxisTilingAttr

    problem = GemmProblem((128, 256), (256, 256), (128, 256), "f16")
    plan = ksplit_plan(problem, 16)
    assert validate_gemm_plan(plan, problem, 16, IPU21) is None
    single = with_format(plan, "rhs", replication=1)
    assert validate_gemm_plan(single, problem, 16, IPU21) == (
        "rhs must be replicated in both layers (replication 2), lhs and out not at all")
    other_cut = with_format(plan, "rhs", tiling=[AxisTilingAttr(64, 1), AxisTilingAttr(64, 4)])
    assert validate_gemm_plan(other_cut, problem, 16, IPU21) == (
        "lhs and out must be cut 4 x 4 and rhs 2 x 4 (out [4, 4], lhs [4, 4], rhs [1, 4])")


def test_no_shape_without_two_row_chunks_or_an_even_k():
    assert candidate_shapes(16, 64, 128, 8) == []
    assert candidate_shapes(64, 64, 192, 8) == []


@st.composite
def ksplit_cases(draw):
    m, n = draw(st.integers(17, 200)), draw(st.integers(1, 200))
    k = 64 * 2 * draw(st.integers(1, 3)) - draw(st.integers(0, 63))  # an even block count
    element, catalog = draw(st.sampled_from([(f16, KSPLIT_F16), (f32, KSPLIT_F32)]))
    tiles = draw(st.sampled_from([2, 3, 5, 8, 16, 24, 64]))
    return (m, k), (k, n), element, catalog, tiles


@settings(max_examples=10, deadline=None)
@given(ksplit_cases(), st.integers(0, 2**16))
def test_ksplit_differential(case, seed):
    """Random shapes (padding on every axis) and tile counts with the K-split forced; shapes
    it refuses (tile memory) are left out: their diagnostic is tested above."""
    lhs, rhs, element, catalog, tiles = case
    problem = GemmProblem(lhs, rhs, (lhs[0], rhs[1]), "f16" if element is f16 else "f32")
    (evaluation,) = evaluate_candidates(problem, tiles, "pad", IPU21, catalog_entries(catalog))
    assume(evaluation.reason is None)
    compiled = compile_case(gemm_module(lhs, rhs, element), tiles, seed=seed, catalog=catalog)
    assert run_verdict(compiled) is None, case
