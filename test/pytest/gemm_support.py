"""Shared helpers of the GEMM plan tests that compile one `graph.gemm` from text and run it on
the device model (test_gemm_cost_model.py, test_gemm_fold.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.parser import Parser

from device.model import run_package
from device.model.host import values_of_stored
from device.model.run import RunResult
from device.package import Package
from ipu_dialects import mid
from passes import get_all_passes
from passes.ipu_pipeline import STAGES
from tools.ipu_run import find_function, make_context, random_inputs
from tools.package_writer import build_package


def gemm_text(lhs, rhs, out, element, flags=""):
    """`func.func @g(%a, %b)` returning one `graph.gemm` (`flags`: its transpose flags)."""
    a, b, c = (f"tensor<{'x'.join(map(str, s))}x{element}>" for s in (lhs, rhs, out))
    return (f"func.func @g(%a: {a}, %b: {b}) -> {c} {{\n"
            f"  %c = graph.gemm %a, %b {flags}: ({a}, {b}) -> {c}\n"
            f"  func.return %c : {c}\n}}\n")


@dataclass(frozen=True)
class GemmRun:
    plan: mid.OperatorPlanAttr  # the mid.gemm's, as graph-to-mid chose it
    package: Package
    inputs: list[np.ndarray]  # the seeded random inputs, as ipu-run draws them
    outcome: RunResult  # the device model's run (no exchange errors)


def run_gemm(text: str, tiles: int, seed: int, catalog: tuple[str, ...] | None = None) -> GemmRun:
    """`text` compiled on `tiles` tiles (with `catalog`: from those candidates only) and run on
    the device model with ipu-run's inputs of `seed`."""
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    inputs = random_inputs(find_function(module, None), seed=seed)
    registry = get_all_passes()
    options = {"tiles": tiles} | ({"catalog": catalog} if catalog else {})
    registry["graph-to-mid"]()(**options).apply(ctx, module)
    plan = next(o for o in module.walk() if isinstance(o, mid.GemmOp)).plan
    for stage in STAGES[1:]:
        registry[stage]()().apply(ctx, module)
    package = build_package(module, with_assembly=False)
    feeds = {t.name: values_of_stored(t, a) for t, a in zip(package.inputs, inputs, strict=True)}
    outcome = run_package(package, feeds)
    assert not outcome.exchange_errors
    return GemmRun(plan, package, inputs, outcome)
