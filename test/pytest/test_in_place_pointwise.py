"""A pointwise op written over its dying operand computes the same numbers on the device
model (the kernels read each element before they write it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_support import compile_case, run_verdict
from xdsl.parser import Parser

from tools.ipu_run import make_context

CHAIN = (Path(__file__).resolve().parents[1] / "filecheck" / "transforms"
         / "mid-to-tile-in-place.mlir").read_text()


def in_place_calls(package) -> int:
    return sum(1 for step in package.executed() if hasattr(step, "pointers")
               and step.symbol in ("gelu", "add")
               and (step.pointers[:, 0:1] == step.pointers[:, 1:]).any())


@pytest.mark.parametrize("tiles", [1, 4, 16])
def test_the_chain_passes_with_its_in_place_gelu(tiles):
    module = Parser(make_context(), CHAIN, "chain").parse_module()
    case = compile_case(module, tiles)
    assert in_place_calls(case.package) == 1
    assert run_verdict(case) is None
