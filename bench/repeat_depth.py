"""Depth does not cost: the layer of `examples/repeat_layers.mlir` repeated N times.

The weight is an invariant here and the per-layer bias the sequence: 480 distinct 128x128
weights do not fit in the SRAM of the few tiles the 128x128 GEMM uses (a sequence's element
i stays on the tiles of element 0, `passes/normalize_repeats.py`).

For each depth, compiles the module with `ipu-pipeline{tiles=T}` and prints the wall time of
the pipeline (best of `--runs`), the size of the printed pipeline output (characters), the
number of xDSL ops and, with `--package`, the package: its program steps (a repeat stays one
`LoopStep`), its listing lines (`program.s`) and whether it equals the first depth's package
up to the sequence data (the loop count, the sequence tensor's shape and the addresses that
depend on the sequence's size). The figures in the report come from running this script.
Usage: python bench/repeat_depth.py [--depths 4 48 480] [--tiles 4] [--runs 3] [--package]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException

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

NUMBER = re.compile(r"0x[0-9a-f]+|\d+")


def compile_depth(depth: int, tiles: int,
                  catalog: tuple[str, ...] = ()) -> tuple[float, ModuleOp]:
    """Seconds to compile the depth-`depth` program (`catalog`: the GEMM plans allowed, all by
    default) and the compiled module."""
    from passes.ipu_pipeline import IpuPipelinePass

    ctx = make_context()
    module = Parser(ctx, LAYERS.format(n=depth), "layers").parse_module()
    started = time.perf_counter()
    IpuPipelinePass(tiles=tiles, catalog=catalog).apply(ctx, module)
    return time.perf_counter() - started, module


def package_text(module: ModuleOp) -> tuple[int, str]:
    """Program steps and the package's metadata and listing as one text."""
    import json

    from tools.package_writer import build_package

    package = build_package(module)
    with tempfile.TemporaryDirectory() as directory:
        package.save(directory)
        meta = json.loads((Path(directory) / "metadata.json").read_text())
    return len(package.steps), json.dumps(meta["steps"]) + package.assembly


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[4, 48, 480])
    parser.add_argument("--tiles", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--package", action="store_true", help="also build the package")
    args = parser.parse_args()
    print(f"{'depth':>6} {'pipeline s':>11} {'output chars':>13} {'ops':>5}"
          + (f" {'program steps':>14} {'listing lines':>14} {'same shape':>11} "
             f"{'numbers differing':>18}"
             if args.package else ""))
    first: str | None = None
    first_numbers: list[str] = []
    for depth in args.depths:
        times = []
        try:
            for _ in range(args.runs):
                seconds, module = compile_depth(depth, args.tiles)
                times.append(seconds)
        except DiagnosticException as error:  # e.g. a sequence too deep for the tiles' SRAM
            print(f"{depth:>6} diagnostic: {error}")
            continue
        text = str(module)
        ops = sum(1 for _ in module.walk())
        line = f"{depth:>6} {min(times):>11.3f} {len(text):>13} {ops:>5}"
        if args.package:
            steps, package = package_text(module)
            shape, numbers = NUMBER.sub("#", package), NUMBER.findall(package)
            if first is None:
                first, first_numbers = shape, numbers
            differing = (sum(a != b for a, b in zip(numbers, first_numbers, strict=True))
                         if shape == first else "-")
            line += (f" {steps:>14} {package.count(chr(10)):>14} "
                     f"{'yes' if shape == first else 'no':>11} {differing:>18}")
        print(line)


if __name__ == "__main__":
    main()
