"""Depth does not cost: the layer of `examples/repeat_layers.mlir` repeated N times.

The weight is an invariant here and the per-layer bias the sequence: 480 distinct 128x128
weights do not fit in the SRAM of the few tiles the 128x128 GEMM uses (a sequence's element
i stays on the tiles of element 0, `passes/normalize_repeats.py`).

For each depth, compiles the module with `ipu-pipeline{tiles=T}` and prints the wall time of
the pipeline (best of `--runs`), the size of the printed pipeline output (characters, and
characters without `tile.exchange` properties, whose per-iteration row selections and
patches hold one entry per iteration of the loop nest by design: `schedule-exchange`), the
number of xDSL ops, and, with `--package`, the package's size (steps, which the package writer
expands per iteration). The figures in the report come from running this script.
Usage: python bench/repeat_depth.py [--depths 4 48 480] [--tiles 4] [--runs 3] [--package]
"""

from __future__ import annotations

import argparse
import re
import time

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from tools.ipu_run import make_context

LAYERS = """
func.func @layers(%x0: tensor<64x128xf32>, %w: tensor<128x128xf32>, %bs: tensor<{n}x128xf32>) -> tensor<64x128xf32> {{
  %out = graph.repeat {n} carried(%x = %x0 : tensor<64x128xf32>) \
invariant(%wi = %w : tensor<128x128xf32>) sequence(%bias = %bs : tensor<{n}x128xf32>) {{
    %y = graph.gemm %x, %wi : (tensor<64x128xf32>, tensor<128x128xf32>) -> tensor<64x128xf32>
    %yb = graph.add %y, %bias : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    %g = graph.gelu %yb : tensor<64x128xf32> -> tensor<64x128xf32>
    %next = graph.add %x, %g : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
    graph.yield %next : tensor<64x128xf32>
  }} -> tensor<64x128xf32>
  func.return %out : tensor<64x128xf32>
}}
"""

# per-iteration data of a scheduled exchange: `sender_rows array<...>`, `patches [...]`
PER_ITERATION = re.compile(r" (sender_rows|receiver_rows) array<[^>]*>| patches \[[^\]]*\]")


def compile_depth(depth: int, tiles: int) -> tuple[float, ModuleOp]:
    from passes.ipu_pipeline import IpuPipelinePass

    ctx = make_context()
    module = Parser(ctx, LAYERS.format(n=depth), "layers").parse_module()
    started = time.perf_counter()
    IpuPipelinePass(tiles=tiles).apply(ctx, module)
    return time.perf_counter() - started, module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[4, 48, 480])
    parser.add_argument("--tiles", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--package", action="store_true", help="also build the package")
    args = parser.parse_args()
    print(f"{'depth':>6} {'pipeline s':>11} {'output chars':>13} {'w/o per-iter':>13} "
          f"{'ops':>5}" + (f" {'package steps':>14}" if args.package else ""))
    for depth in args.depths:
        times = []
        for _ in range(args.runs):
            seconds, module = compile_depth(depth, args.tiles)
            times.append(seconds)
        text = str(module)
        structural = PER_ITERATION.sub("", text)
        ops = sum(1 for _ in module.walk())
        line = f"{depth:>6} {min(times):>11.3f} {len(text):>13} {len(structural):>13} {ops:>5}"
        if args.package:
            from tools.package_writer import build_package

            line += f" {len(build_package(module, with_assembly=False).steps):>14}"
        print(line)


if __name__ == "__main__":
    main()
