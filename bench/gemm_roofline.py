"""GEMM against the AMP roofline: modeled cycles / (M*K*N / (AMP MACs per cycle x tiles)).

For each shape the GEMM is compiled to a package (the default pipeline) and its cycles are
found one of two ways, named in the `how` column:

- `model`: the package runs on the executable device model (`device.model.run_package`) with
  random inputs, and its result is checked against the NumPy reference;
- `cycle functions`: the run would take too long, so every step of the package is charged
  with the device model's own cycle functions (`package_cycles`: `exchange_step_cycles` of
  the phase's longest row, `kernel_cycles` of each call on its slowest tile), which is what
  `run_package` adds up, without moving data. For the shapes small enough to run, `--check`
  runs both and asserts they agree.

The roofline is the AMP bound when every tile of the run computes: M*K*N / (rate x tiles),
rate = `Target.amp_macs_per_cycle[precision]` (FP8: the FP8 rate).
Usage: python bench/gemm_roofline.py [--check] [--run-limit MACS] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np
from xdsl.parser import Parser

from device.exchange_timeline import row_timeline
from device.kernels import step_cycles
from device.model import run_package
from device.model.cycles import exchange_step_cycles
from device.model.host import stored_of_values, values_of_stored
from device.package import ExchangeStep, KernelStep, Package
from device.target import IPU21, Target
from interpreters.graph import run_function
from tools.ipu_run import compare, compile_module, find_function, make_context, random_inputs


@dataclass(frozen=True)
class Case:
    m: int
    k: int
    n: int
    tiles: int
    precision: str  # graph element type: f16, f32 or f8E4M3FNUZ

    @property
    def name(self) -> str:
        return f"{self.precision} {self.m}x{self.k}x{self.n} on {self.tiles}"

    @property
    def rate_precision(self) -> str:
        return {"f8E4M3FNUZ": "f8f143"}.get(self.precision, self.precision)

    def roofline(self, target: Target) -> float:
        rate = target.amp_macs_per_cycle[self.rate_precision]
        return self.m * self.k * self.n / (rate * self.tiles)


CASES = (
    Case(1024, 1024, 1024, 256, "f16"),
    Case(2944, 1024, 1024, 1472, "f16"),
    Case(4096, 4096, 4096, 1472, "f16"),
    Case(1024, 1024, 1024, 256, "f32"),
    Case(2944, 1024, 1024, 1472, "f32"),
    Case(1024, 1024, 1024, 256, "f8E4M3FNUZ"),
    Case(2944, 1024, 1024, 1472, "f8E4M3FNUZ"),
)


def gemm_text(case: Case) -> str:
    a, b, c = (f"tensor<{x}x{y}x{case.precision}>"
               for x, y in ((case.m, case.k), (case.k, case.n), (case.m, case.n)))
    if case.precision.startswith("f8"):
        c = f"tensor<{case.m}x{case.n}x{case.precision}, #graph.fp8_scale<4>>"
    return (f"func.func @gemm(%a: {a}, %b: {b}) -> {c} {{\n"
            f"  %c = graph.gemm %a, %b : ({a}, {b}) -> {c}\n"
            f"  func.return %c : {c}\n}}\n")


def package_cycles(package: Package, target: Target = IPU21) -> list[int]:
    """Cycles of every step as `run_package` charges them, from the package alone: an
    exchange step lasts a sync plus its longest row's events, a kernel step its slowest
    tile's call (`device.kernels.step_cycles`: the record's cycles of all the step's tiles at
    once where it has a step-wide form; `device.model.cycles`). A step that repeats (a loop
    body, unrolled) is computed once."""
    lengths: dict[int, int] = {}
    steps: dict[tuple, int] = {}
    result = []
    for step in package.executed():  # loops unrolled, as the device runs them
        if isinstance(step, ExchangeStep):
            ids = np.unique(np.asarray(step.row_id).reshape(-1))
            events = 0
            for rid in ids[ids >= 0].tolist():
                if rid not in lengths:
                    words = [int(w) for w in package.rows[rid]]
                    lengths[rid] = row_timeline(words, step.row_address).total_events
                events = max(events, lengths[rid])
            result.append(exchange_step_cycles(events, target))
        else:
            assert isinstance(step, KernelStep)
            tiles = np.asarray(step.tiles, dtype=np.int64).reshape(-1)
            key = (step.symbol, tuple(step.scalars), tiles.tobytes())
            if key not in steps:
                steps[key] = step_cycles(step.symbol, step.scalars, tiles, target)
            result.append(steps[key])
    return result


@dataclass(frozen=True)
class Row:
    case: Case
    cycles: int
    how: str
    compile_seconds: float
    tiles_used: int
    exchange_share: float
    check: str


def measure(case: Case, run_limit: int, check: bool) -> Row:
    module = Parser(make_context(), gemm_text(case)).parse_module()
    func = find_function(module, None)
    inputs = random_inputs(func, seed=0)
    run = case.m * case.k * case.n <= run_limit
    expected = run_function(module, inputs) if run else None  # before the pipeline rewrites it
    outputs = func.function_type.outputs.data
    started = time.perf_counter()
    package = compile_module(module, case.tiles, "pad", with_assembly=False)
    compile_seconds = time.perf_counter() - started
    static = package_cycles(package)
    exchange = sum(c for s, c in zip(package.executed(), static, strict=True)
                   if isinstance(s, ExchangeStep))
    cycles, how, verdict = sum(static), "cycle functions", "-"
    if expected is not None:
        feeds = {t.name: values_of_stored(t, a) for t, a in zip(package.inputs, inputs,
                                                                  strict=True)}
        result = run_package(package, feeds)
        outcome = compare([stored_of_values(t, result.outputs[t.name]) for t in package.outputs],
                          expected, outputs)
        verdict = "PASS" if outcome.passed and not result.exchange_errors else "FAIL"
        if check and result.cycles_by_step != static:
            raise SystemExit(f"{case.name}: the model's cycles {result.cycles} differ from "
                             f"the cycle functions' {sum(static)}")
        cycles, how = result.cycles, "model"
    return Row(case, cycles, how, compile_seconds, int(package.metadata["tiles_used"]),
               exchange / max(cycles, 1), verdict)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-limit", type=int, default=4096 ** 3,
                        help="run the device model when M*K*N is at most this (default 2**36: "
                             "every case; 4096^3 on 1472 tiles takes about 2 minutes)")
    parser.add_argument("--check", action="store_true",
                        help="where the model runs, also assert it charges what "
                             "package_cycles computes")
    parser.add_argument("--only", nargs="*", default=None,
                        help="case names containing any of these strings")
    args = parser.parse_args()
    header = (f"{'case':<34} {'modeled cycles':>14} {'roofline':>10} {'ratio':>7} "
              f"{'exch+sync':>9} {'tiles used':>10} {'compile s':>9} {'check':>5}  how")
    print(header)
    print("-" * len(header))
    for case in CASES:
        if args.only and not any(s in case.name for s in args.only):
            continue
        row = measure(case, args.run_limit, args.check)
        roofline = case.roofline(IPU21)
        print(f"{case.name:<34} {row.cycles:>14,} {math.ceil(roofline):>10,} "
              f"{row.cycles / roofline:>7.2f} {row.exchange_share:>9.0%} {row.tiles_used:>10} "
              f"{row.compile_seconds:>9.2f} {row.check:>5}  {row.how}", flush=True)


if __name__ == "__main__":
    main()
