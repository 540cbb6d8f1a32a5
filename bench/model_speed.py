"""Device-model speed: the NumPy reference and the device model, side by side in one process.

For each case (an FP16 GEMM, or the transformer block of examples/transformer_block.mlir) it
compiles the package (not timed against the model), runs the graph interpreter's NumPy
reference and the device model on the same inputs, checks the model's result against the
reference, and prints model time / reference time and modeled cycles per wall second. The peak
resident memory of the process (`resource.getrusage`) is printed last; it must stay under 8 GiB.

Cases: 2944x1024x1024 on 184 tiles and the transformer block on 64 and 1472 tiles always;
4096x4096x4096 on 1472 tiles with `--large` (compiling it takes a minute or more).
`--model NAME ... --tiles N` runs the layers of `frontend/models.py` instead (`bench/models.py`'s
cases at their real size, e.g. `--model gpt2-small --tiles 1472`); `--by-kind` also prints,
for the last case, the device model's CPU seconds per kind of step (exchange phases, then
each kernel symbol), from the step loop's progress hook.
Usage: python bench/model_speed.py [--large] [--only-large] [--case M K N TILES]
                                   [--model NAME ... [--tiles N]] [--by-kind]
                                   [--profile FILE.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.parser import Parser

from device.model import run_package
from device.package import ExchangeStep
from interpreters.graph import run_function
from tools.ipu_run import compare, compile_module, find_function, make_context, random_inputs
from tools.progress import terminal_progress

PEAK_LIMIT_GIB = 8.0
TRANSFORMER_BLOCK = Path(__file__).resolve().parents[1] / "examples" / "transformer_block.mlir"


@dataclass(frozen=True)
class Case:
    name: str
    text: str  # a graph function
    tiles: int
    build: Callable | None = None  # builds the module instead of parsing `text`


def model_case(name: str, tiles: int) -> Case:
    """A layer of `frontend/models.py` at its real size."""
    from frontend.models import MODELS, build_model

    return Case(f"{name}, {tiles} tiles", "", tiles, lambda: build_model(MODELS[name]))


@dataclass
class StepTimes:
    """A progress hook for `run_package` that charges the CPU time between two steps to the
    kind of the first (an exchange phase, or the kernel's symbol)."""

    seconds: Counter = field(default_factory=Counter)
    steps: Counter = field(default_factory=Counter)

    def __call__(self, items, description="", total=None):
        kind, started = None, 0.0
        for item in items:
            now = time.process_time()
            if kind is not None:
                self.seconds[kind] += now - started
                self.steps[kind] += 1
            step = item[1]
            kind = "exchange" if isinstance(step, ExchangeStep) else step.symbol
            started = time.process_time()
            yield item
        if kind is not None:
            self.seconds[kind] += time.process_time() - started
            self.steps[kind] += 1

    def table(self) -> str:
        lines = [f"{'step kind':<32} {'steps':>7} {'cpu s':>8} {'ms/step':>8}"]
        for kind, seconds in self.seconds.most_common():
            lines.append(f"{kind:<32} {self.steps[kind]:>7} {seconds:>8.2f} "
                         f"{1000 * seconds / self.steps[kind]:>8.2f}")
        return "\n".join(lines)


def gemm_case(m: int, k: int, n: int, tiles: int) -> Case:
    return Case(f"{m}x{k}x{n} f16, {tiles} tiles", gemm_text(m, k, n), tiles)


def transformer_case(tiles: int) -> Case:
    return Case(f"transformer block f16, {tiles} tiles", TRANSFORMER_BLOCK.read_text(), tiles)


@dataclass
class Measurement:
    case: str
    compile_s: float
    reference_s: float
    model_s: float
    reference_cpu_s: float
    model_cpu_s: float
    cycles: int
    check: str

    def row(self) -> str:
        return (f"{self.case:<34} {self.compile_s:>9.2f} {self.reference_s:>7.2f} "
                f"{self.model_s:>8.2f} {self.model_s / self.reference_s:>9.1f}x "
                f"{self.model_cpu_s / self.reference_cpu_s:>9.1f}x "
                f"{self.cycles:>10} {self.cycles / self.model_s:>10.0f}  {self.check}")


# Wall times; "cpu ratio" divides the process CPU times instead, which other work on a
# shared machine disturbs less.
HEADER = (f"{'case':<34} {'compile s':>9} {'ref s':>7} {'model s':>8} {'model/ref':>10} "
          f"{'cpu ratio':>10} {'cycles':>10} {'cycles/s':>10}  check")


def gemm_text(m: int, k: int, n: int) -> str:
    a, b, c = (f"tensor<{x}x{y}xf16>" for x, y in ((m, k), (k, n), (m, n)))
    return (f"func.func @gemm(%a: {a}, %b: {b}) -> {c} {{\n"
            f"  %c = graph.gemm %a, %b : ({a}, {b}) -> {c}\n"
            f"  func.return %c : {c}\n}}\n")


def measure(case: Case, profile: str | None, step_times: StepTimes | None = None) -> Measurement:
    tiles = case.tiles
    module = case.build() if case.build else Parser(make_context(), case.text).parse_module()
    func = find_function(module, None)
    inputs = random_inputs(func, seed=0)
    started = time.perf_counter()
    package = compile_module(module.clone(), tiles, "pad", with_assembly=False,
                             progress=terminal_progress())
    compiled, compiled_cpu = time.perf_counter(), time.process_time()
    expected = run_function(module, inputs)
    referenced, referenced_cpu = time.perf_counter(), time.process_time()
    feeds = {t.name: a for t, a in zip(package.inputs, inputs, strict=True)}
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    result = run_package(package, feeds, progress=step_times or terminal_progress())
    if profiler and profile:
        profiler.disable()
        profiler.dump_stats(profile)
    modeled, modeled_cpu = time.perf_counter(), time.process_time()
    check = compare([result.outputs[t.name] for t in package.outputs], expected,
                    func.function_type.outputs.data)
    passed = check.passed and not result.exchange_errors
    return Measurement(case.name, compiled - started,
                       referenced - compiled, modeled - referenced,
                       referenced_cpu - compiled_cpu, modeled_cpu - referenced_cpu, result.cycles,
                       f"{'PASS' if passed else 'FAIL'} (rel {check.max_rel:.2g})")


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # ru_maxrss is KiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large", action="store_true",
                        help="also run 4096x4096x4096 on 1472 tiles")
    parser.add_argument("--only-large", action="store_true",
                        help="run only 4096x4096x4096 on 1472 tiles")
    parser.add_argument("--case", type=int, nargs=4, action="append", metavar=("M", "K", "N", "TILES"),
                        help="run this GEMM instead (repeatable)")
    parser.add_argument("--model", nargs="+", metavar="NAME",
                        help="run these layers of frontend/models.py instead (real size)")
    parser.add_argument("--tiles", type=int, default=1472,
                        help="tiles for --model (default 1472)")
    parser.add_argument("--by-kind", action="store_true",
                        help="print the last case's model CPU seconds per kind of step")
    parser.add_argument("--profile", metavar="FILE",
                        help="cProfile the device model of the last case into FILE")
    args = parser.parse_args()
    large = gemm_case(4096, 4096, 4096, 1472)
    default = [gemm_case(2944, 1024, 1024, 184), transformer_case(64), transformer_case(1472)]
    cases = [large] if args.only_large else default + ([large] if args.large else [])
    cases = [gemm_case(*c) for c in args.case] if args.case else cases
    cases = [model_case(name, args.tiles) for name in args.model] if args.model else cases
    print(HEADER, flush=True)
    step_times = StepTimes() if args.by_kind else None
    for index, case in enumerate(cases):
        last = index == len(cases) - 1
        print(measure(case, profile=args.profile if last else None,
                      step_times=step_times if last else None).row(), flush=True)
    if step_times is not None:
        print(step_times.table())
    peak = peak_gib()
    print(f"peak resident memory: {peak:.2f} GiB (limit {PEAK_LIMIT_GIB:.0f} GiB)")
    return 0 if peak < PEAK_LIMIT_GIB else 1


if __name__ == "__main__":
    sys.exit(main())
