"""The 3-D grid GEMM plan (`planning/gemm_grid3d.py`) on the device model.

L layers of one grid each sum an L-th of K into FP32 partials, A and B replicated per layer;
rounds of halving exchanges and adds sum the layers into layer 0, the last add rounding
once. These tests run it from the encoded words for every phase shape (pairs on A, on B,
no A or B phase, odd layer counts whose rounds leave a layer out), show that the model is
not fooled by a wrong reduction partner or a wrong home pointer, and pin the refusals."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from e2e_support import compile_case, gemm_module, gemm_op_counts, run_verdict
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from device import isa
from device.package import ExchangeStep, KernelStep
from device.target import IPU21
from frontend.builder import f16, f32
from planning.gemm_grid3d import ReductionRound, grid3d_of, reduction_rounds
from planning.gemm_problem import CATALOG, GemmProblem, catalog_entries, operand_geometries
from planning.gemm_selection import build_gemm_plan, evaluate_candidates, validate_gemm_plan

GRID3D_F16, GRID3D_F32 = ("amp_gemm_f16_grid3d",), ("amp_gemm_f32_grid3d",)


def chosen_shape(lhs, rhs, precision: str, tiles: int):
    problem = GemmProblem(lhs, rhs, (lhs[0], rhs[1]), precision)
    (evaluation,) = evaluate_candidates(problem, tiles, "pad", IPU21,
                                        catalog_entries([f"amp_gemm_{precision}_grid3d"]))
    assert evaluation.reason is None, evaluation.reason
    a, b, c = operand_geometries(evaluation.plan, problem)
    shape = grid3d_of(c, a, b)
    return shape.rows, shape.cols, shape.layers


@pytest.mark.parametrize("lhs,rhs,element,tiles,shape", [
    ((64, 1024), (1024, 128), f16, 32, (4, 2, 4)),  # pairs on A, two K blocks of A per tile
    ((64, 512), (512, 64), f16, 16, (4, 1, 4)),  # one grid column, R even: B to pairs
    ((48, 512), (512, 64), f16, 12, (3, 1, 4)),  # one column, R odd: no pairs
    ((16, 512), (512, 256), f16, 16, (1, 4, 4)),  # one grid row: no B phase
    ((40, 640), (640, 100), f32, 24, (1, 2, 10)),  # ten layers, padding on every axis
    ((32, 768), (768, 128), f16, 24, (2, 2, 6)),  # six layers: rounds of 3, 1, 1 senders
    ((32, 192), (192, 128), f16, 12, (2, 2, 3)),  # three layers: the first round skips one
    ((100, 320), (320, 130), f16, 30, (2, 3, 5)),  # five layers, an odd column count
])
def test_grid3d_passes_on_the_device_model(lhs, rhs, element, tiles, shape):
    precision = "f16" if element is f16 else "f32"
    assert chosen_shape(lhs, rhs, precision, tiles) == shape
    catalog = GRID3D_F16 if element is f16 else GRID3D_F32
    case = compile_case(gemm_module(lhs, rhs, element), tiles, seed=3, catalog=catalog)
    assert run_verdict(case) is None


def test_reduction_rounds_halve_the_layers_into_layer_0():
    assert reduction_rounds(2) == [ReductionRound(1, 1)]
    assert reduction_rounds(5) == [ReductionRound(3, 2), ReductionRound(2, 1),
                                   ReductionRound(1, 1)]
    assert [r.last for r in reduction_rounds(6)] == [False, False, True]


def grid3d_case():
    """(2, 2, 3): 4 tiles a layer, 12 tiles."""
    return compile_case(gemm_module((32, 192), (192, 128), f16), 12, seed=11,
                        catalog=GRID3D_F16)


def step_named(package, text: str) -> ExchangeStep | KernelStep:
    return next(s for s in package.steps if text in s.provenance)


def test_a_tile_taking_the_wrong_layers_partials_fails_the_run():
    """In the first round (layer 2 into layer 0), tile 1 must take tile 9's partials; tile 10's
    (8's) belong to another block."""
    case = grid3d_case()
    assert run_verdict(case) is None
    corrupted = copy.deepcopy(case.package)
    step = step_named(corrupted, "the f32 partials of layers 2 to 2")
    assert isinstance(step, ExchangeStep)
    row = isa.decode(corrupted.rows[int(step.row_id[1])].tolist(), step.row_address)
    assert isinstance(row[0], isa.SendPicP) and row[0].xpic == 9
    row[0] = isa.SendPicP(row[0].words_m1, row[0].address, row[0].sctl, row[0].pic_selector,
                          8, row[0].pic)
    corrupted.rows.append(np.asarray(isa.encode(row, step.row_address), dtype=np.uint32))
    step.row_id[1] = len(corrupted.rows) - 1
    verdict = run_verdict(case, corrupted)
    assert verdict is not None and verdict.startswith("outputs differ")


def test_a_layer_reading_another_layers_k_block_fails_the_run():
    """Layer 1's A holders read their own K block in place (`home`): pointed at layer 0's
    block (offset 0 of the shard), they add the wrong products."""
    case = grid3d_case()
    corrupted = copy.deepcopy(case.package)
    kernel = step_named(corrupted, "initializing gemm phase")
    assert isinstance(kernel, KernelStep)
    left = kernel.pointers[:, 1]
    # tile 4 is layer 1's holder of its A block (column 0): it reads its shard, not its slot
    assert left[4] != left[5]
    kernel.pointers[4, 1] = kernel.pointers[0, 1]
    verdict = run_verdict(case, corrupted)
    assert verdict is not None and verdict.startswith("outputs differ")


def test_tile_op_counts_grow_with_the_rounds_only():
    """The tile ops are a constant plus an exchange and an add per reduction round, whatever
    the tile count and the blocks (the rows' count after scheduling varies by the rows that
    coincide)."""
    rounds = {tiles: len(reduction_rounds(chosen_shape((512, 512), (512, 512), "f16", tiles)[2]))
              for tiles in (64, 256, 1472)}
    counts = {tiles: gemm_op_counts(tiles, GRID3D_F16)[3] for tiles in rounds}
    assert len(set(rounds.values())) > 1  # the sample covers two layer counts
    assert {counts[t] - 2 * rounds[t] for t in rounds} == {counts[64] - 2 * rounds[64]}


def grid3d_plan(problem: GemmProblem, tiles: int):
    candidate = next(c for c in CATALOG if c.name == "amp_gemm_f16_grid3d")
    return build_gemm_plan(candidate, problem, tiles, "pad", IPU21)


def test_a_batched_gemm_of_batched_b_is_refused_with_a_reason():
    problem = GemmProblem((2, 64, 128), (2, 128, 64), (2, 64, 64), "f16")
    assert validate_gemm_plan(grid3d_plan(problem, 8), problem, 8, IPU21) == (
        "the 3-D grid plan runs one GEMM; this one has 2 batch slices")


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


def test_a_grid3d_whose_operands_are_not_replicated_per_layer_is_invalid():
    problem = GemmProblem((32, 192), (192, 128), (32, 128), "f16")
    plan = grid3d_plan(problem, 12)
    assert validate_gemm_plan(plan, problem, 12, IPU21) is None
    single = with_format(plan, "lhs", replication=1)
    assert validate_gemm_plan(single, problem, 12, IPU21) == (
        "lhs and rhs must be replicated once per layer (two or more), out not at all (lhs 1, "
        "rhs 3, out 1)")
    uneven = with_format(with_format(plan, "lhs", replication=2), "rhs", replication=2)
    assert validate_gemm_plan(uneven, problem, 12, IPU21) == (
        "the 3-D grid plan gives each of its 2 layers an equal share of K; K has 3 block(s) "
        "of 64")


def test_a_k_of_one_block_has_no_layers():
    problem = GemmProblem((32, 64), (64, 64), (32, 64), "f16")
    (evaluation,) = evaluate_candidates(problem, 8, "pad", IPU21, catalog_entries(GRID3D_F16))
    assert evaluation.reason == (
        "the 3-D grid plan shares K among two or more layers; K has 1 block of 64")


@st.composite
def grid3d_cases(draw):
    m, n = draw(st.integers(1, 160)), draw(st.integers(1, 160))
    k = 64 * draw(st.integers(2, 8)) - draw(st.integers(0, 63))
    element, catalog = draw(st.sampled_from([(f16, GRID3D_F16), (f32, GRID3D_F32)]))
    tiles = draw(st.sampled_from([2, 3, 5, 8, 16, 24, 64]))
    return (m, k), (k, n), element, catalog, tiles


@settings(max_examples=10, deadline=None)
@given(grid3d_cases(), st.integers(0, 2**16))
def test_grid3d_differential(case, seed):
    """Random shapes (padding on every axis) and tile counts with the 3-D grid forced; shapes
    it refuses (tile memory) are left out: their diagnostic is tested above."""
    lhs, rhs, element, catalog, tiles = case
    problem = GemmProblem(lhs, rhs, (lhs[0], rhs[1]), "f16" if element is f16 else "f32")
    (evaluation,) = evaluate_candidates(problem, tiles, "pad", IPU21, catalog_entries(catalog))
    assume(evaluation.reason is None)
    built = compile_case(gemm_module(lhs, rhs, element), tiles, seed=seed, catalog=catalog)
    assert run_verdict(built) is None
