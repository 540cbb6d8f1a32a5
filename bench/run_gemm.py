"""Run-time benchmark: compile a GEMM, run it on the device model, report modeled cycles.

Prints compile and model wall time, the check against the reference, the modeled cycles
split into exchange and compute steps, and the AMP utilization the plan achieves
(MACs / (modeled cycles x tiles used x AMP MACs per cycle)).
Usage: python bench/run_gemm.py [--m 2944 --k 1024 --n 1024] [--tiles 184] [--precision f16]
"""

from __future__ import annotations

import argparse
import math
import time

from xdsl.parser import Parser

from device.model import run_package
from device.package import ExchangeStep
from device.target import IPU21
from interpreters.graph import run_function
from tools.ipu_run import compare, compile_module, find_function, make_context, random_inputs


def gemm_text(m: int, k: int, n: int, precision: str) -> str:
    a, b, c = (f"tensor<{x}x{y}x{precision}>" for x, y in ((m, k), (k, n), (m, n)))
    return (f"func.func @gemm(%a: {a}, %b: {b}) -> {c} {{\n"
            f"  %c = graph.gemm %a, %b : ({a}, {b}) -> {c}\n"
            f"  func.return %c : {c}\n}}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--m", type=int, default=2944)
    parser.add_argument("--k", type=int, default=1024)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--tiles", type=int, default=184)
    parser.add_argument("--precision", choices=["f16", "f32"], default="f16")
    args = parser.parse_args()

    module = Parser(make_context(), gemm_text(args.m, args.k, args.n, args.precision)).parse_module()
    func = find_function(module, None)
    inputs = random_inputs(func, seed=0)
    expected = run_function(module, inputs)
    started = time.perf_counter()
    package = compile_module(module, args.tiles, "pad")
    compiled = time.perf_counter()
    result = run_package(package, {t.name: a for t, a in zip(package.inputs, inputs, strict=True)})
    ran = time.perf_counter()
    check = compare([result.outputs[t.name] for t in package.outputs], expected,
                    func.function_type.outputs.data)

    exchange = sum(c for s, c in zip(package.executed(), result.cycles_by_step, strict=True)
                   if isinstance(s, ExchangeStep))
    tiles_used = package.metadata["tiles_used"]
    macs = args.m * args.k * args.n
    ideal = math.ceil(macs / (tiles_used * IPU21.amp_macs_per_cycle[args.precision]))
    print(f"gemm {args.m}x{args.k} by {args.k}x{args.n} {args.precision} on {args.tiles} tiles")
    print(f"  check: {'PASS' if check.passed and not result.exchange_errors else 'FAIL'}"
          f" (max rel error {check.max_rel:.3g})")
    print(f"  compile {compiled - started:.2f} s, device model {ran - compiled:.2f} s")
    print(f"  modeled cycles {result.cycles} (exchange+sync {exchange}, "
          f"compute {result.cycles - exchange}); "
          f"{result.cycles / IPU21.clock_hz * 1e6:.1f} us at {IPU21.clock_hz / 1e9:.2f} GHz")
    print(f"  AMP utilization {ideal / result.cycles:.1%} of {tiles_used} tiles "
          f"(ideal {ideal} cycles)")


if __name__ == "__main__":
    main()
