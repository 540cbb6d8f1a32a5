"""A GEMM's selection looks at the GEMMs its result feeds (`GemmOperator.cheapest_with_consumers`):
of its few cheapest plans it takes the one cheapest with what the next GEMM then pays to read
the result (through the bias add and gelu that follow it), so that an MLP's first GEMM writes
the cut its second reads."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdsl.parser import Parser

import passes.operators.gemm as gemm_operator
from device.target import IPU21
from frontend.builder import GraphBuilder, as_element_type
from planning.gemm_problem import GemmProblem, catalog_entries, default_catalog_names
from planning.gemm_selection import ranked_gemm_cuts, select_gemm_plan
from tools.ipu_run import EXIT_PASS, compile_module, make_context, run_main

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gemm_roofline import package_cycles


def mlp_text(batch: int = 2, seq: int = 128, d: int = 128, hidden: int = 512) -> str:
    """gelu(x @ w1 + b1) @ w2, FP16."""
    g = GraphBuilder("mlp")
    f16 = as_element_type("f16")
    x = g.input([batch, seq, d], f16, name="x")
    w1 = g.input([d, hidden], f16, name="w1")
    b1 = g.input([hidden], f16, name="b1")
    w2 = g.input([hidden, d], f16, name="w2")
    g.output(g.gelu(x @ w1 + b1) @ w2)
    return str(g.build())


def modeled_cycles(text: str, tiles: int) -> int:
    module = Parser(make_context(), text).parse_module()
    return sum(package_cycles(compile_module(module, tiles, "pad", with_assembly=False)))


@pytest.mark.parametrize("tiles", [16, 64])
def test_the_first_gemm_writes_what_the_second_reads_in_fewer_cycles(tiles, monkeypatch):
    """Against each GEMM taking its own cheapest plan (one plan priced: the look is off), the
    whole MLP runs in fewer modeled cycles (16 tiles: 176,065 -> 150,457)."""
    chained = modeled_cycles(mlp_text(), tiles)
    monkeypatch.setattr(gemm_operator, "CONSUMER_PRICED_PLANS", 1)
    alone = modeled_cycles(mlp_text(), tiles)
    assert chained < alone


def test_the_chained_mlp_runs_on_the_device_model(tmp_path):
    path = tmp_path / "mlp.mlir"
    path.write_text(mlp_text())
    assert run_main(path, tiles=16, quiet=True) == EXIT_PASS


CASES = [((128, 128), (128, 128), (128, 128), 16), ((128, 128), (128, 128), (128, 128), 1472),
         ((1024, 768), (768, 3072), (1024, 3072), 64), ((1024, 768), (768, 3072), (1024, 3072), 1472),
         ((8, 384, 768), (768, 768), (8, 384, 768), 1472), ((64, 4096), (4096, 64), (64, 64), 1472)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-{c[3]}")
def test_the_cheapest_ranked_cut_is_the_selected_plan(case):
    """`ranked_gemm_cuts` ranks every cut of every layout; its first is what
    `select_gemm_plan` chooses with the same fits and prices, so a GEMM whose consumers do
    not care keeps its plan."""
    lhs, rhs, out, tiles = case
    problem = GemmProblem(lhs, rhs, out, "f16")
    catalog = catalog_entries(default_catalog_names("f32"))
    ranked = ranked_gemm_cuts(problem, tiles, "pad", IPU21, catalog, lambda e: True,
                              lambda plan: 0, "none")
    chosen = select_gemm_plan(problem, tiles, "pad", IPU21, catalog, lambda e: True,
                              lambda plan: 0, "none")
    assert ranked[0].plan == chosen.plan
    assert [e.total_cycles for e in ranked] == sorted(e.total_cycles for e in ranked)
    assert all(e.reason is None for e in ranked)
