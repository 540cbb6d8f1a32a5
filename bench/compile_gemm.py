"""Compile-time benchmark: an FP16 GEMM of 2944x1024 by 1024x1024 for several tile counts.

Prints, per tile count, the wall time of each pass and of package construction, and the
number of xDSL ops after each level. DESIGN.md section 4: the op count must not grow with
the tile count. On 16 tiles this GEMM does not fit in tile memory (about 0.9 MB per output-row
tile); the benchmark then prints graph-to-mid's diagnostic for that tile count.
Usage: python bench/compile_gemm.py [--tiles 16 184 1472]
"""

from __future__ import annotations

import argparse
import time

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException

from tools.ipu_run import make_context

GEMM = """
func.func @gemm(%a: tensor<2944x1024xf16>, %b: tensor<1024x1024xf16>) -> tensor<2944x1024xf16> {
  %c = graph.gemm %a, %b : (tensor<2944x1024xf16>, tensor<1024x1024xf16>) -> tensor<2944x1024xf16>
  func.return %c : tensor<2944x1024xf16>
}
"""


def op_count(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())


def compile_once(tiles: int) -> list[tuple[str, float, int | str]]:
    from passes import get_all_passes
    from tools.package_writer import build_package

    ctx = make_context()
    module = Parser(ctx, GEMM, "gemm").parse_module()
    passes = get_all_passes()
    pipeline = [("graph-to-mid", {"tiles": tiles}), ("insert-conversions", {}),
                ("mid-to-tile", {}), ("place-memory", {}), ("schedule-exchange", {})]
    rows: list[tuple[str, float, int | str]] = [("graph (parsed)", 0.0, op_count(module))]
    for name, options in pipeline:
        started = time.perf_counter()
        try:
            passes[name]()(**options).apply(ctx, module)
        except DiagnosticException as error:
            rows.append((name, time.perf_counter() - started, f"diagnostic: {error}"))
            return rows
        rows.append((name, time.perf_counter() - started, op_count(module)))
    started = time.perf_counter()
    package = build_package(module)
    rows.append(("package", time.perf_counter() - started,
                 f"{len(package.steps)} steps, {len(package.rows)} unique rows"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiles", type=int, nargs="+", default=[16, 184, 1472])
    args = parser.parse_args()
    for tiles in args.tiles:
        print(f"== tiles={tiles}")
        total = 0.0
        for name, seconds, ops in compile_once(tiles):
            total += seconds
            print(f"  {name:<20} {seconds:8.3f} s   ops/result: {ops}")
        print(f"  {'total':<20} {total:8.3f} s")


if __name__ == "__main__":
    main()
