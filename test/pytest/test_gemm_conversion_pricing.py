"""GEMM selection with its operands' conversions (`planning.gemm_selection`, `priced`): every
cut of each layout is costed with what bringing the operands into its formats costs, so a
plan that is a little slower in itself but needs a much cheaper gather wins; and the
GPT-2-small layer this changed runs right on the device model at 1472 tiles."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_support import compile_case
from xdsl.dialects.builtin import TensorType, f16

from device.model import run_package
from device.model.host import stored_of_values
from device.target import IPU21
from frontend.models import build_model
from passes.operators.costs import conversion_type_cycles
from passes.operators.formats import split_format
from planning.gemm_problem import CATALOG, GemmProblem
from planning.gemm_selection import LAYOUTS, evaluate_candidate, select_gemm_plan
from tools.ipu_run import compare

BENCH = Path(__file__).resolve().parents[2] / "bench"

# GPT-2-small's MLP up-projection, its lhs the layer norm's rows, one per tile
M, K, N, TILES = 1024, 768, 3072, 1472


def mlp_problem() -> GemmProblem:
    return GemmProblem.from_types(TensorType(f16, [M, K]), TensorType(f16, [K, N]),
                                  TensorType(f16, [M, N]), False, False)


def rows_lhs_conversion(plan) -> int:
    """What gathering the lhs from one row per tile into `plan`'s lhs format costs."""
    lhs = TensorType(f16, [M, K])
    rows = TensorType(f16, [M, K], split_format([M, K], 0, TILES, lhs, "pad"))
    wanted = TensorType(f16, [M, K], plan.operand_plan("lhs").format)
    return conversion_type_cycles(rows, wanted, IPU21)


def test_a_layout_offers_every_cut_the_best_in_itself_first():
    ksplit = next(c for c in CATALOG if c.name == "amp_gemm_f16_ksplit")
    layout = LAYOUTS[ksplit.dispatch]
    options = layout.cut_options(ksplit, mlp_problem(), TILES, IPU21)
    assert len(options) > 1
    assert options[0] == layout.cuts(ksplit, mlp_problem(), TILES, IPU21)
    assert len(set(options)) == len(options)


def test_the_lhs_gather_decides_between_cuts():
    alone = select_gemm_plan(mlp_problem(), TILES)
    priced = select_gemm_plan(mlp_problem(), TILES, priced=rows_lhs_conversion)
    assert priced.conversions == rows_lhs_conversion(priced.plan)
    assert alone.cycles is not None and priced.cycles is not None
    # in itself the chosen plan is slower, with its gather it is several times faster
    assert priced.cycles > alone.cycles
    assert 3 * priced.total_cycles < alone.cycles + rows_lhs_conversion(alone.plan)


def test_without_pricing_a_candidate_keeps_its_best_cut():
    ksplit = next(c for c in CATALOG if c.name == "amp_gemm_f16_ksplit")
    plain = evaluate_candidate(ksplit, mlp_problem(), TILES, "pad", IPU21)
    free = evaluate_candidate(ksplit, mlp_problem(), TILES, "pad", IPU21, priced=lambda _: 0)
    assert plain.plan == free.plan and plain.conversions == free.conversions == 0


@pytest.mark.slow  # a real-size layer: compile and device-model run, about half a minute
def test_the_gpt2_small_layer_passes_on_the_device_model_at_1472_tiles(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import models  # bench/models.py: the builder's GPT-2-small layer

    case = compile_case(build_model(models.case_config("gpt2-small", False)), TILES,
                        with_assembly=False)
    outcome = run_package(case.package, case.feeds)
    assert not outcome.exchange_errors
    results = [stored_of_values(t, outcome.outputs[t.name]) for t in case.package.outputs]
    check = compare(results, case.expected, case.result_types)
    assert check.passed, check
    # 4,148,742 before the GEMMs priced their lhs gathers and layout ops gathered in rounds;
    # 1,939,350 after
    assert outcome.cycles < 2_500_000
