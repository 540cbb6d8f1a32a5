"""Compile-time benchmark: an FP16 GEMM of 2944x1024 by 1024x1024 for several tile counts.

Prints, per tile count, the wall time of each pass, of package construction and of the
supervisor assembly listing (`-t ipu-asm`, which `ipu-run` skips unless it saves the
package), and the number of xDSL ops after each level. The scale rule (docs/internals.md,
"What we build"): the op count must not grow with the tile count. On 16 tiles this GEMM
does not fit in tile memory (about 0.9 MB per output-row tile); the benchmark then prints
graph-to-mid's diagnostic for that tile count.
Usage: python bench/compile_gemm.py [--tiles 16 184 1472] [--shape M K N]
"""

from __future__ import annotations

import argparse
import time

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException

from tools.ipu_run import make_context

GEMM = """
func.func @gemm(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>) -> tensor<{m}x{n}xf16> {{
  %c = graph.gemm %a, %b : (tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16>) -> tensor<{m}x{n}xf16>
  func.return %c : tensor<{m}x{n}xf16>
}}
"""


def op_count(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())


def compile_once(tiles: int, m: int, k: int, n: int) -> list[tuple[str, float, int | str]]:
    from passes import get_all_passes
    from tools.asm_listing import format_assembly
    from tools.package_writer import build_package

    ctx = make_context()
    module = Parser(ctx, GEMM.format(m=m, k=k, n=n), "gemm").parse_module()
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
    package = build_package(module, with_assembly=False)
    rows.append(("package", time.perf_counter() - started,
                 f"{len(package.steps)} steps, {len(package.rows)} unique rows"))
    started = time.perf_counter()
    listing = format_assembly(package)
    rows.append(("assembly (-t ipu-asm)", time.perf_counter() - started,
                 f"{listing.count(chr(10))} lines"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiles", type=int, nargs="+", default=[16, 184, 1472])
    parser.add_argument("--shape", type=int, nargs=3, default=[2944, 1024, 1024],
                        metavar=("M", "K", "N"), help="[M x K] by [K x N]")
    args = parser.parse_args()
    m, k, n = args.shape
    for tiles in args.tiles:
        print(f"== {m}x{k} by {k}x{n} f16, tiles={tiles}")
        total = 0.0
        for name, seconds, ops in compile_once(tiles, m, k, n):
            total += seconds
            print(f"  {name:<22} {seconds:8.3f} s   ops/result: {ops}")
        print(f"  {'total':<22} {total:8.3f} s")


if __name__ == "__main__":
    main()
