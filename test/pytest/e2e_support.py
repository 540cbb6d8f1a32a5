"""Shared helpers of the end-to-end GEMM tests (test_e2e_gemm.py, test_e2e_corruption.py).

A case is a graph module built with `frontend.builder.GraphBuilder`; `compile_case` computes
the NumPy reference on the untouched module first (the pipeline rewrites the module in place)
and then compiles a clone to a `device.package.Package`. `run_verdict` runs a package on the
device model and says how the run failed, or None when it passes the same check `ipu-run`
applies (outputs within `tools.ipu_run.compare`'s tolerance and no exchange errors).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from device.model import ModelError, run_package
from device.model.host import stored_of_values, values_of_stored
from device.package import Package
from frontend.builder import GraphBuilder
from interpreters.graph import find_function, run_function
from ipu_dialects.mid import DispatchKind
from planning.gemm_problem import catalog_entries
from tools.ipu_run import compare, compile_module, random_inputs
from tools.run_io import fp8_spreads


def gemm_module(lhs_shape: Sequence[int], rhs_shape: Sequence[int], element_type,
                transpose_lhs: bool = False, transpose_rhs: bool = False) -> ModuleOp:
    """`func.func @gemm(%a, %b)` returning one `graph.gemm`."""
    g = GraphBuilder("gemm")
    a = g.input(list(lhs_shape), element_type, name="a")
    b = g.input(list(rhs_shape), element_type, name="b")
    g.output(g.gemm(a, b, transpose_lhs=transpose_lhs, transpose_rhs=transpose_rhs))
    return g.build()


def write_module(module: ModuleOp, path: Path) -> Path:
    path.write_text(str(module))
    return path


@dataclass
class CompiledCase:
    package: Package
    feeds: dict[str, np.ndarray]
    expected: list[np.ndarray]
    result_types: list
    spreads: list[np.ndarray] | None = None  # the FP8 check's (`tools.run_io.fp8_spreads`)


# The row plan's candidates (the default catalog without the grid plans): for tests whose
# subject is that plan's broadcasts and kernel calls.
ROW_PLANS = tuple(c.name for c in catalog_entries(None) if c.dispatch == DispatchKind.GEMM_BLOCKS)


def compile_case(module: ModuleOp, tiles: int, indivisible: str = "pad",
                 seed: int = 0, catalog: tuple[str, ...] = (),
                 with_assembly: bool = True) -> CompiledCase:
    func = find_function(module)
    arrays = random_inputs(func, seed)
    expected = run_function(module, arrays)
    spreads = fp8_spreads(module, arrays)
    result_types = list(func.function_type.outputs.data)
    package = compile_module(module.clone(), tiles, indivisible, catalog=catalog,
                             with_assembly=with_assembly)
    feeds = {t.name: values_of_stored(t, a) for t, a in zip(package.inputs, arrays, strict=True)}
    return CompiledCase(package, feeds, expected, result_types, spreads)


def run_verdict(case: CompiledCase, package: Package | None = None) -> str | None:
    """None when `package` (default: the case's own) passes; otherwise how it failed."""
    package = case.package if package is None else package
    try:
        outcome = run_package(package, case.feeds)
    except ModelError as error:
        return f"model error: {error}"
    if outcome.exchange_errors:
        return f"exchange errors: {outcome.exchange_errors[0]}"
    results = [stored_of_values(t, outcome.outputs[t.name]) for t in package.outputs]
    check = compare(results, case.expected, case.result_types, case.spreads)
    if not check.passed:
        return f"outputs differ: max rel error {check.max_rel:.3g}"
    return None


def gemm_op_counts(tiles: int, catalog: tuple[str, ...], side: int = 512) -> list[int]:
    """Ops in the module after each pipeline stage for a `side`-cubed FP16 GEMM compiled
    with `catalog`: a plan's op counts must not grow with the tile count."""
    from xdsl.parser import Parser

    from passes import get_all_passes
    from passes.ipu_pipeline import STAGES
    from tools.ipu_run import make_context

    ctx = make_context()
    t = f"tensor<{side}x{side}xf16>"
    module = Parser(ctx, f"func.func @g(%a: {t}, %b: {t}) -> {t} {{\n"
                         f"  %c = graph.gemm %a, %b : ({t}, {t}) -> {t}\n"
                         f"  func.return %c : {t}\n}}\n").parse_module()
    registry = get_all_passes()
    registry["graph-to-mid"]()(tiles=tiles, catalog=catalog).apply(ctx, module)
    counts = []
    for stage in STAGES[1:]:
        registry[stage]()().apply(ctx, module)
        counts.append(sum(1 for _ in module.walk()))
    return counts


def scheduled_module(text: str, passes: Sequence[str]) -> ModuleOp:
    """`text` parsed and run through `passes` (registry names), verified after each."""
    from xdsl.parser import Parser

    from passes import get_all_passes
    from tools.ipu_run import make_context

    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    registry = get_all_passes()
    for name in passes:
        registry[name]()().apply(ctx, module)
        module.verify()
    return module
