"""Real transformer layers on the whole chip: GPT-2-small, BERT-base, BERT-large and 12-layer
stacks, built with the Python builder (`frontend/models.py`), against the AMP roofline.

Each case is compiled for each tile count in a fresh process (`compile s` is that process's
wall time from its start to the finished package: interpreter start, imports, building the
module, the default pipeline, the package). One row per case and tile count:

- `ops`: xDSL ops of the module after the pipeline;
- `peak B`: bytes on the fullest tile, as place-memory counts them (buffers live together at
  the tile's peak, plus the code region);
- `cycles`: modeled cycles, from the device model's cycle functions over the package
  (`bench/gemm_roofline.py`'s `package_cycles`, what the device model charges);
- `roofline`: the AMP bound, every matrix product's MACs (Q, K, V, output projections, the
  MLP's two GEMMs, attention's Q.K^T and P.V over the full score matrix even when causal;
  `frontend.models.matrix_macs`) / (FP16 AMP MACs per cycle x tiles);
- `ratio` = cycles / roofline, and `us` = cycles at the target's clock (`Target.clock_hz`).

A case that does not compile prints the first line of its diagnostic (shortened) instead.
`--run` also runs each compiled case on the device model with `ipu-run`'s seeded inputs (seed
0), checks it against the NumPy reference and prints PASS/FAIL and the model's wall time; a
run that fails `ipu-run`'s fixed tolerance is then measured against the reference's own
rounding spread (`rounding_spread`, its eight perturbed runs, as ipu-run's FP8 check and
`bench/differential.py` take it): `PASS-spread` when every element is
within twice its spread (the program is ill-conditioned at these inputs, and the answer is as
close as its roundings allow; counted apart from PASS, as `bench/differential.py` does), else
FAIL, with the spread in the note. A run longer than `--run-timeout` seconds (the spread's
runs included) is stopped (`timeout`). `--tiny` builds every case at
the small size of `frontend.models.tiny` (a quick check of the bench itself). `--repeat N`
compiles each case N times, each in a fresh process, and prints the median compile seconds
(and CPU seconds) with the fastest and slowest (`compile_runs` in the JSON): one compile's time
on a shared machine is noise, the median of several is the figure to quote.
Usage: python bench/models.py [--tiles 1472 256] [--cases NAME ...] [--run] [--run-timeout S]
                              [--repeat N] [--tiny] [--json] [--save FILE]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from frontend.models import MODELS, TransformerConfig, matrix_macs, tiny

DEFAULT_TILES = (1472, 256)
DIAGNOSTIC_WIDTH = 100


@dataclass
class Row:
    case: str
    tiles: int
    status: str  # "compiled", "diagnostic", "timeout" or "error" (a bug: not a diagnostic)
    compile_seconds: float | None = None
    compile_cpu_seconds: float | None = None  # the worker's CPU time: a loaded machine's honest half
    ops: int | None = None
    peak_bytes: int | None = None
    peak_tile: int | None = None
    cycles: int | None = None
    roofline: float | None = None
    ratio: float | None = None
    microseconds: float | None = None
    diagnostic: str = ""  # the first line of the diagnostic, whole (the table shortens it)
    run: str = ""  # "", "PASS", "FAIL", "timeout" or "error"
    run_note: str = ""
    model_seconds: float | None = None
    model_cycles: int | None = None
    compile_runs: list[float] = field(default_factory=list)  # every compile's seconds (--repeat)


def case_config(name: str, small: bool) -> TransformerConfig:
    return tiny(MODELS[name]) if small else MODELS[name]


def roofline_cycles(config: TransformerConfig, tiles: int) -> float:
    from device.target import IPU21

    return matrix_macs(config) / (IPU21.amp_macs_per_cycle[config.element_type] * tiles)


def first_line(message: str, width: int | None = DIAGNOSTIC_WIDTH) -> str:
    """The diagnostic's first line without its source position, cut to `width`."""
    lines = [line for line in message.splitlines() if line.strip()]
    line = lines[0] if lines else message
    if ": error: " in line:
        line = line.split(": error: ", 1)[1]
    return line if width is None or len(line) <= width else line[: width - 3] + "..."


def peak_tile_bytes(module) -> tuple[int, int]:
    """(bytes, tile) of the fullest tile: the buffers live together at its peak, as
    place-memory's capacity check counts them, plus the code region."""
    import numpy as np
    from xdsl.dialects import func

    from ipu_dialects.shared_attrs import configured_tile_count
    from ipu_dialects.tile import BufferOp
    from passes.place_memory import FunctionPlacement, module_target

    target = module_target(module)
    tiles = configured_tile_count(module) or 0
    fullest = (0, 0)
    for function in module.walk():
        buffers = ([op for op in function.walk() if isinstance(op, BufferOp)]
                   if isinstance(function, func.FuncOp) else [])
        if buffers:
            placement = FunctionPlacement(function, target, tiles)
            placement.tile_count = max(tiles, max(b.tiles.stop.data for b in buffers))
            live, _ = placement.bytes_per_tile(buffers)
            tile = int(np.argmax(live))
            fullest = max(fullest, (int(live[tile]), tile))
    return fullest[0] + target.code_region_bytes, fullest[1]


# -- one case in this process (the worker) ------------------------------------------------------


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def finished() -> dict:
    """Now: the wall clock (the driver subtracts the worker's start) and this process's CPU
    seconds."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"done": time.time(), "cpu": usage.ru_utime + usage.ru_stime}


def compile_record(module, tiles: int, program_layouts: bool = False):
    """Compile `module` for `tiles` tiles: (the compile stage's record, the package). The
    record says `compiled` with the op count and the fullest tile's bytes, or `diagnostic`
    with the compiler's message (the package then None)."""
    from xdsl.utils.exceptions import DiagnosticException

    from tools.ipu_run import compile_module

    try:
        package = compile_module(module, tiles, "pad", with_assembly=False,
                                 program_layouts=program_layouts)
    except DiagnosticException as error:
        return {"stage": "compile", "status": "diagnostic", **finished(),
                "diagnostic": str(error)}, None
    done = finished()
    peak, peak_tile = peak_tile_bytes(module)
    return {"stage": "compile", "status": "compiled", **done,
            "ops": sum(1 for _ in module.walk()), "peak_bytes": peak,
            "peak_tile": peak_tile}, package


def error_record(error: Exception) -> dict:
    """A bug in the compile, as the one-line record a worker prints instead of a traceback."""
    return {"stage": "compile", "status": "error", **finished(),
            "diagnostic": f"{type(error).__name__}: {error}"}


def work(name: str, tiles: int, small: bool, run: bool, program_layouts: bool = False) -> int:
    """Build, compile and measure one case; print one JSON object per stage (compile, run) on
    stdout as soon as it is known, so that a run stopped by the timeout keeps the compile's."""
    config = case_config(name, small)
    try:
        from gemm_roofline import package_cycles  # bench/ is this script's sys.path[0]

        from device.target import IPU21
        from frontend.models import build_model

        module = build_model(config)
        source = module.clone() if run else None
        record, package = compile_record(module, tiles, program_layouts)
        if package is not None:
            cycles = sum(package_cycles(package))
            record |= {"cycles": cycles, "microseconds": cycles / IPU21.clock_hz * 1e6}
        emit(record)
        if package is None:
            return 0
    except Exception as error:  # a bug, reported as one line, never a traceback
        emit(error_record(error))
        return 0
    if run:
        assert source is not None
        emit(run_record(source, package))
    return 0


def run_record(source, package) -> dict:
    """Run the package on the device model with ipu-run's seeded inputs (seed 0) and check it
    against the NumPy reference."""
    from device.model import ModelError, run_package
    from device.model.host import stored_of_values, values_of_stored
    from interpreters.graph import find_function, run_function
    from tools.run_io import compare, random_inputs

    func = find_function(source, None)
    arrays = random_inputs(func, 0)
    try:
        expected = run_function(source, arrays, func.sym_name.data)
        feeds = {t.name: values_of_stored(t, a) for t, a in zip(package.inputs, arrays, strict=True)}
        started = time.perf_counter()
        outcome = run_package(package, feeds)
        seconds = time.perf_counter() - started
    except ModelError as error:
        return {"stage": "run", "run": "FAIL", "run_note": first_line(str(error))}
    except Exception as error:
        return {"stage": "run", "run": "error", "run_note": first_line(f"{type(error).__name__}: {error}")}
    results = [stored_of_values(t, outcome.outputs[t.name]) for t in package.outputs]
    check = compare(results, expected, func.function_type.outputs.data)
    passed = check.passed and not outcome.exchange_errors
    note, verdict = f"max rel error {check.max_rel:.3g}", "FAIL"
    if outcome.exchange_errors:
        note += f"; {len(outcome.exchange_errors)} exchange errors"
    elif not passed:
        within, why = conditioning(source, arrays, func.sym_name.data, results, expected)
        note += "; " + why
        verdict = SPREAD_PASS if within else "FAIL"
    return {"stage": "run", "run": "PASS" if passed else verdict, "run_note": note,
            "model_seconds": seconds, "model_cycles": int(outcome.cycles)}


# the verdict of a run that fails the fixed tolerance but is within twice the reference's
# rounding spread at every element: an ill-conditioned answer, reported apart from PASS as
# bench/differential.py counts its spread PASSes apart
SPREAD_PASS = "PASS-spread"


def conditioning(source, arrays, function: str, results, expected) -> tuple[bool, str]:
    """Whether a result that failed the fixed tolerance is within `FP8_SPREAD_FACTOR` times the
    reference's own rounding spread (`rounding_spread`: how far the reference moves when every
    rounding lands one step off) at every element, and a note that says how ill-conditioned
    the program is at these inputs."""
    import numpy as np

    from interpreters.graph import rounding_spread
    from tools.run_io import FP8_SPREAD_FACTOR, within_spread

    spreads = rounding_spread(source, arrays, function, reference=expected)
    notes, within = [], True
    for got, want, spread in zip(results, expected, spreads, strict=True):
        got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
        scale = max(float(np.max(np.abs(want64))), 1e-30)
        inside = within_spread(np.abs(got64 - want64), spread)
        within &= inside
        notes.append(f"reference's rounding spread up to {float(spread.max()) / scale:.3g} of "
                     f"its largest magnitude (median {float(np.median(spread)) / scale:.3g}); "
                     f"every element {'within' if inside else 'NOT within'} "
                     f"{FP8_SPREAD_FACTOR:g}x its spread")
    return within, "; ".join(notes)


# -- the driver ---------------------------------------------------------------------------------


def measure(name: str, tiles: int, small: bool, run: bool, timeout: float,
            run_timeout: float, program_layouts: bool = False) -> Row:
    """One case in a fresh process: its compile, then (with `run`) its device-model run."""
    config = case_config(name, small)
    row = Row(config.name, tiles, "timeout", roofline=roofline_cycles(config, tiles))
    command = [sys.executable, __file__, "--worker", name, "--tiles", str(tiles)]
    command += ["--tiny"] * small + ["--run"] * run + ["--program-layouts"] * program_layouts
    started = time.time()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout + (run_timeout if run else 0))
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
    records = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    compiled = next((r for r in records if r["stage"] == "compile"), None)
    if compiled is None:
        if process.returncode not in (None, 0, -signal.SIGKILL):
            row.status = "error"
            row.diagnostic = worker_failure(process.returncode, stderr)
        else:
            row.diagnostic = f"no package after {timeout + (run_timeout if run else 0):.0f} s"
        return row
    row.status = compiled["status"]
    row.compile_seconds = compiled["done"] - started
    row.compile_cpu_seconds = compiled["cpu"]
    if row.status != "compiled":
        row.diagnostic = first_line(compiled["diagnostic"], width=None)
        return row
    row.ops, row.peak_bytes, row.peak_tile = compiled["ops"], compiled["peak_bytes"], compiled["peak_tile"]
    row.cycles, row.microseconds = compiled["cycles"], compiled["microseconds"]
    row.ratio = row.cycles / row.roofline if row.roofline else None
    if run:
        ran = next((r for r in records if r["stage"] == "run"), None)
        if ran is None:
            row.run = "timeout"
            row.run_note = f"the device model had not finished after {run_timeout:.0f} s"
        else:
            row.run, row.run_note = ran["run"], ran["run_note"]
            row.model_seconds, row.model_cycles = ran.get("model_seconds"), ran.get("model_cycles")
            if row.model_cycles is not None and row.model_cycles != row.cycles:
                row.run_note += f"; the model's cycles {row.model_cycles} differ"
    return row


def measure_repeated(name: str, tiles: int, small: bool, run: bool, timeout: float,
                     run_timeout: float, repeat: int, program_layouts: bool = False) -> Row:
    """`measure`, compiled `repeat` times (the device-model run, if any, only the first time):
    the first row, with the median compile and CPU seconds of all the compiles."""
    rows = [measure(name, tiles, small, run, timeout, run_timeout, program_layouts)]
    rows += [measure(name, tiles, small, False, timeout, run_timeout, program_layouts)
             for _ in range(repeat - 1)]
    row = rows[0]
    walls = [r.compile_seconds for r in rows if r.compile_seconds is not None]
    cpus = [r.compile_cpu_seconds for r in rows if r.compile_cpu_seconds is not None]
    if len(walls) == len(cpus) == len(rows):
        row.compile_runs = sorted(walls)
        row.compile_seconds = statistics.median(walls)
        row.compile_cpu_seconds = statistics.median(cpus)
    return row


def worker_failure(returncode: int, stderr: str) -> str:
    """What ended a worker that printed no compile record."""
    if returncode < 0:
        return f"the worker was killed by {signal.Signals(-returncode).name}"
    lines = stderr.strip().splitlines()
    return lines[-1] if lines else f"the worker exited with status {returncode}"


HEADER = (f"{'case':<20} {'tiles':>5} {'compile s':>9} {'cpu s':>6} {'ops':>6} {'peak B':>8} {'cycles':>10} "
          f"{'roofline':>9} {'ratio':>6} {'us':>8}")


def row_text(row: Row) -> str:
    seconds = (f"{row.compile_seconds:9.1f} {row.compile_cpu_seconds:6.1f}"
               if row.compile_seconds is not None and row.compile_cpu_seconds is not None
               else f"{'-':>9} {'-':>6}")
    head = f"{row.case:<20} {row.tiles:>5} {seconds}"
    spread = (f"  (compile median of {len(row.compile_runs)}: {row.compile_runs[0]:.1f}.."
              f"{row.compile_runs[-1]:.1f} s)" if len(row.compile_runs) > 1 else "")
    if row.status != "compiled":
        return f"{head} {row.status}: {first_line(row.diagnostic)}"
    assert row.cycles is not None and row.roofline is not None and row.ratio is not None
    text = (f"{head} {row.ops:>6} {row.peak_bytes:>8} {row.cycles:>10} {row.roofline:>9.0f} "
            f"{row.ratio:>6.1f} {row.microseconds:>8.1f}")
    if row.run:
        model = f" in {row.model_seconds:.1f} s" if row.model_seconds is not None else ""
        text += f"  run {row.run}{model} ({row.run_note})"
    return text + spread


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", type=int, nargs="+", default=list(DEFAULT_TILES))
    parser.add_argument("--cases", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--run", action="store_true",
                        help="also run each compiled case on the device model and check it")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds a compile may take (default 1800)")
    parser.add_argument("--run-timeout", type=float, default=600.0,
                        help="seconds a device-model run may take (default 600)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="compile each case N times and report the median compile time")
    parser.add_argument("--tiny", action="store_true",
                        help="every case at frontend.models.tiny's size")
    parser.add_argument("--json", action="store_true", help="one JSON list of rows on stdout")
    parser.add_argument("--save", type=Path, metavar="FILE",
                        help="also write the rows as a JSON list to FILE (whole diagnostics)")
    parser.add_argument("--program-layouts", action="store_true",
                        help="offer the opt-in GEMM layouts over the whole program "
                             "(ipu-pipeline{program-layouts=true})")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # one case in this process
    args = parser.parse_args()
    if args.worker is not None:
        return work(args.worker, args.tiles[0], args.tiny, args.run, args.program_layouts)
    rows = []
    if not args.json:
        print(HEADER, flush=True)
    for name in args.cases:
        for tiles in args.tiles:  # one compile at a time: they take the whole machine
            row = measure_repeated(name, tiles, args.tiny, args.run, args.timeout,
                                   args.run_timeout, max(1, args.repeat), args.program_layouts)
            rows.append(row)
            if not args.json:
                print(row_text(row), flush=True)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    if args.save is not None:
        args.save.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
