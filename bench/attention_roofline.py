"""Attention against the AMP roofline: modeled cycles / (both products' MACs / (64 x tiles)).

Each case is compiled with the default pipeline (`tools.ipu_run.compile_module`) and run on the
executable device model, whose result is checked against the NumPy reference; the plan the
selector chose, the model's cycles of the attention steps and the wall time of the run are
printed. The roofline counts Q . K^T and P . V unmasked (2 x rows x keys x head_dim per
slice, causal or not) at the FP16 AMP rate on every tile, as issue 28 does.
Usage: python bench/attention_roofline.py [--tiles N ...] [--no-run] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import time

from device.model import run_package
from device.model.host import stored_of_values, values_of_stored
from device.target import IPU21
from frontend.models import attention_program
from interpreters.graph import run_function
from planning.attention_plans import attention_macs
from tools.ipu_run import compare, compile_module, find_function, random_inputs

# name: (query shape, key shape, element, causal)
CASES = {
    "example causal [2,4,64,64] f16": ((2, 4, 64, 64), (2, 4, 64, 64), "f16", True),
    "example plain [3,32,32]x[3,96,32] f32": ((3, 32, 32), (3, 96, 32), "f32", False),
    "GPT-2-small [1,12,1024,64] f16 causal": ((1, 12, 1024, 64), (1, 12, 1024, 64), "f16", True),
    "BERT-base [1,12,384,64] f16": ((1, 12, 384, 64), (1, 12, 384, 64), "f16", False),
}


def roofline(query, key, tiles: int) -> float:
    return attention_macs(query, key) / (IPU21.amp_macs_per_cycle["f16"] * tiles)


def measure(name: str, tiles: int, run: bool) -> str:
    query, key, element, causal = CASES[name]
    graph = attention_program(query, key, element, causal)
    func = find_function(graph, None)
    arrays = random_inputs(func, 0)
    started = time.perf_counter()
    package = compile_module(graph.clone(), tiles, "pad")
    compiled = time.perf_counter() - started
    symbols = sorted({s.symbol for s in package.executed() if hasattr(s, "symbol")})
    if not run:
        return f"{name:40} {tiles:5} compile {compiled:5.1f}s  kernels {', '.join(symbols)}"
    feeds = {t.name: values_of_stored(t, a) for t, a in zip(package.inputs, arrays, strict=True)}
    started = time.perf_counter()
    result = run_package(package, feeds)
    wall = time.perf_counter() - started
    outputs = [stored_of_values(t, result.outputs[t.name]) for t in package.outputs]
    check = compare(outputs, run_function(graph, arrays), list(func.function_type.outputs.data))
    verdict = "PASS" if check.passed and not result.exchange_errors else "FAIL"
    bound = roofline(query, key, tiles)
    return (f"{name:40} {tiles:5} {result.cycles:>10,} cycles  roofline {bound:>9,.0f}  "
            f"x{result.cycles / bound:6.1f}  {verdict}  model {wall:5.1f}s  compile "
            f"{compiled:4.1f}s  kernels {', '.join(symbols)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", type=int, nargs="*", default=[1472])
    parser.add_argument("--no-run", action="store_true")
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    for name in args.only or CASES:
        for tiles in args.tiles:
            print(measure(name, tiles, not args.no_run), flush=True)


if __name__ == "__main__":
    main()
