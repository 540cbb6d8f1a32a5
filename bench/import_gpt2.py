"""A real model in: a torch-built GPT-2-small-shaped model through `ipu-import`, compiled for the
whole chip and run on the device model.

The model is `examples/onnx/make_fixtures.py`'s block at GPT-2-small's sizes (`GPT2_SMALL_SHAPE`:
sequence 1024, width 768, 12 heads, MLP 3072; pre-LayerNorm, causal attention, exact GeLU,
residual adds), with seeded random weights: one block (`--layers 1`) and a stack of 12 (`--layers
12`). Per case, in a temporary directory (a layer holds 28 MB of float32 weights: nothing is
checked in):

1. torch builds it and exports it to ONNX (`torch.onnx.export(..., dynamo=False)`, opset 17),
   with a seeded input `x` and torch's output;
2. `ipu-import model.onnx -o DIR --dtype f16` (`--repeat-layers` for a stack): `import s` is the
   process's wall time, `graph ops` the ops of the imported function (a repeat's body counted);
3. `ipu-run DIR/model.mlir --inputs DIR/weights.npz --input x=x.npy --reference`: the NumPy
   reference of the imported graph, checked against torch's output with `ipu-run`'s rule (max
   abs error <= the dtype's tolerance x max |torch|): `reference` PASS/FAIL;
4. a fresh process compiles it for `--tiles` with the default pipeline (`compile s`: its wall
   time from start to package, as `bench/models.py` counts it; `ops` after the pipeline, `peak
   B` on the fullest tile, modeled `cycles` from `bench/gemm_roofline.py`'s `package_cycles`,
   which takes minutes of its own at 1472 tiles), or prints the first line of the diagnostic;
5. with `--run`, `ipu-run DIR/model.mlir --tiles N --inputs DIR/weights.npz --input x=x.npy`
   compiles it again and runs it on the device model, checked against the reference: `device`
   PASS/FAIL and the process's wall time, compile included (`timeout` after `--run-timeout`
   seconds); the cycles are then the run's. (Not the saved package: `ipu-run DIR` would refuse
   a 12-layer stack's package by its estimated model time unless `--max-model-seconds` is
   raised, and compiling again costs seconds next to the run's minutes.)

`--small` builds the same model at `SMALL_SHAPE` (sequence 32, width 64, 2 heads): a quick
check of the bench. `--keep DIR` keeps the files (exported model, import, reference) in DIR.
Usage: python bench/import_gpt2.py [--layers 1 12] [--tiles 1472] [--dtype f16] [--run]
                                   [--run-timeout S] [--small] [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.append(str(Path(__file__).resolve().parents[1] / "examples" / "onnx"))

from models import compile_record, emit, error_record, first_line  # bench/models.py, this script's neighbour

BIN = Path(sys.executable).parent  # the venv's ipu-import and ipu-run


@dataclass
class Row:
    layers: int
    tiles: int
    dtype: str
    export_seconds: float | None = None
    import_seconds: float | None = None
    graph_ops: int | None = None
    repeats: int | None = None  # graph.repeat ops in the import
    reference: str = ""  # PASS / FAIL against torch, or the import's diagnostic
    reference_rel: float | None = None
    status: str = ""  # compiled, diagnostic, timeout, error
    compile_seconds: float | None = None
    ops: int | None = None
    peak_bytes: int | None = None
    cycles: int | None = None
    diagnostic: str = ""
    device: str = ""  # PASS, FAIL, timeout, error
    device_note: str = ""
    model_seconds: float | None = None


# -- one case -----------------------------------------------------------------------------------


def export(layers: int, small: bool, directory: Path, dtype: str) -> float:
    """The torch model exported to directory/model.onnx, its input as x.npy (in the import's
    dtype) and torch's output as y.npy (float32); returns the seconds it took."""
    import numpy as np
    import torch
    from make_fixtures import GPT2_SMALL_SHAPE, SMALL_SHAPE, export_onnx, gpt2_small

    started = time.perf_counter()
    shape = SMALL_SHAPE if small else GPT2_SMALL_SHAPE
    module = gpt2_small(layers, shape, seed=layers)
    x = torch.randn(1, shape.sequence, shape.width, generator=torch.Generator().manual_seed(7))
    y = export_onnx(module, x, directory / "model.onnx")
    np.save(directory / "x.npy", x.numpy().astype(np.float16 if dtype == "f16" else np.float32))
    np.save(directory / "y.npy", y.numpy())
    return time.perf_counter() - started


def run_tool(command: list[str], timeout: float | None = None) -> tuple[int | None, str, str, float]:
    """(exit status or None on a timeout, stdout, stderr, wall seconds)."""
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:  # what the process printed before it was stopped
        def text(output) -> str:
            return output.decode(errors="replace") if isinstance(output, bytes) else output or ""
        return None, text(expired.stdout), text(expired.stderr), time.perf_counter() - started
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - started


def graph_op_counts(path: Path) -> tuple[int, int]:
    """(graph ops, graph.repeat ops) of the imported module, a repeat's body included."""
    from tools.run_io import parse_module

    module = parse_module(path, path.read_text())
    names = [op.name for op in module.walk() if op.name.startswith("graph.")]
    return sum(name != "graph.yield" for name in names), names.count("graph.repeat")


def reference_check(directory: Path, dtype: str, row: Row) -> bool:
    """`ipu-run --reference` of the import against torch's output."""
    import numpy as np

    from tools.run_io import RELATIVE_TOLERANCE

    status, _, stderr, _ = run_tool([
        str(BIN / "ipu-run"), str(directory / "import" / "model.mlir"), "--quiet",
        "--inputs", str(directory / "import" / "weights.npz"),
        "--input", f"x={directory / 'x.npy'}", "--reference",
        "--save-outputs", str(directory / "reference")])
    if status != 0:
        row.reference = f"error: {first_line(stderr)}"
        return False
    got = np.load(directory / "reference" / "result0.npy").astype(np.float64)
    want = np.load(directory / "y.npy").astype(np.float64)
    row.reference_rel = float(np.abs(got - want).max() / np.abs(want).max())
    row.reference = "PASS" if row.reference_rel <= RELATIVE_TOLERANCE[dtype] else "FAIL"
    return True


def compile_case(directory: Path, tiles: int, timeout: float, row: Row, cycles: bool) -> bool:
    """The import compiled in a fresh process (`work`); True when it compiled. The worker is
    stopped after `timeout` seconds, its records so far kept (a compile without its cycle count
    still has its figures)."""
    command = [sys.executable, __file__, "--worker", str(directory), "--tiles", str(tiles)]
    command += [] if cycles else ["--run"]  # the worker's --run: leave the count to the run
    started = time.time()
    status, stdout, stderr, _ = run_tool(command, timeout)
    records = {r["stage"]: r for r in map(json.loads, stdout.splitlines()) if "stage" in r}
    record = records.get("compile")
    if record is None:
        row.status = "timeout" if status is None else "error"
        row.diagnostic = (f"no package after {timeout:.0f} s" if status is None
                          else first_line(stderr.strip().splitlines()[-1] if stderr.strip() else
                                          f"exit status {status}", None))
        return False
    row.status = record["status"]
    row.compile_seconds = record["done"] - started
    if row.status != "compiled":
        row.diagnostic = first_line(record["diagnostic"], None)
        return False
    row.ops, row.peak_bytes = record["ops"], record["peak_bytes"]
    if "cycles" in records:
        row.cycles = records["cycles"]["cycles"]
    return True


def device_run(directory: Path, tiles: int, timeout: float, row: Row) -> None:
    """`ipu-run model.mlir` with the import's weights and x, checked against the reference."""
    status, stdout, stderr, seconds = run_tool([
        str(BIN / "ipu-run"), str(directory / "import" / "model.mlir"), "--tiles", str(tiles),
        "--quiet", "--json",
        "--inputs", str(directory / "import" / "weights.npz"),
        "--input", f"x={directory / 'x.npy'}"], timeout)
    row.model_seconds = seconds
    if status is None:
        row.device = "timeout"
        row.device_note = f"the device model had not finished after {timeout:.0f} s"
        return
    try:
        result = json.loads(stdout)
    except json.JSONDecodeError:
        row.device, row.device_note = "error", first_line(stderr or f"exit status {status}")
        return
    row.device = result["check"]
    if "max_rel_error" in result:
        row.device_note = f"max rel error {result['max_rel_error']:.3g}"
        model_cycles = result.get("modeled_cycles")
        if isinstance(model_cycles, dict):  # a compiled run's: total, by phase, kernel, op
            model_cycles = model_cycles["total"]
        if row.cycles is None:
            row.cycles = model_cycles
        elif model_cycles != row.cycles:
            row.device_note += f"; the model's cycles {model_cycles} differ"
    else:
        row.device_note = first_line(result.get("model_error") or result.get("diagnostic") or "")


def measure(layers: int, tiles: int, dtype: str, small: bool, run: bool, timeout: float,
            run_timeout: float, keep: Path | None) -> Row:
    row = Row(layers, tiles, dtype)
    with tempfile.TemporaryDirectory(prefix="import_gpt2_") as temporary:
        directory = Path(temporary) if keep is None else keep / f"layers{layers}"
        directory.mkdir(parents=True, exist_ok=True)
        row.export_seconds = export(layers, small, directory, dtype)
        command = [str(BIN / "ipu-import"), str(directory / "model.onnx"),
                   "-o", str(directory / "import"), "--dtype", dtype]
        status, _, stderr, row.import_seconds = run_tool(command + ["--repeat-layers"] * (layers > 1))
        if status != 0:
            row.reference, row.status = f"import: {first_line(stderr, None)}", "not imported"
            return row
        row.graph_ops, row.repeats = graph_op_counts(directory / "import" / "model.mlir")
        reference_check(directory, dtype, row)
        if compile_case(directory, tiles, timeout, row, cycles=not run) and run:
            device_run(directory, tiles, run_timeout, row)
    return row


# -- the compile worker -------------------------------------------------------------------------


def work(directory: Path, tiles: int, cycles: bool) -> int:
    """Compile directory/import/model.mlir for `tiles` tiles and print one JSON record per
    stage as soon as it is known: the compile, then the modeled cycles (`package_cycles` walks
    every step of the unrolled program: at 1472 tiles it takes minutes of its own; not counted
    with `cycles` False, when the device model's run gives them)."""
    from gemm_roofline import package_cycles  # bench/ is this script's sys.path entry

    from tools.run_io import parse_module

    path = directory / "import" / "model.mlir"
    try:
        module = parse_module(path, path.read_text())
        record, package = compile_record(module, tiles)
        emit(record)
        if package is None or not cycles:
            return 0
        started = time.perf_counter()
        emit({"stage": "cycles", "cycles": int(sum(package_cycles(package))),
              "seconds": time.perf_counter() - started})
    except Exception as error:  # a bug, reported as one line, never a traceback
        emit(error_record(error))
    return 0


# -- the table ----------------------------------------------------------------------------------


def row_lines(row: Row) -> list[str]:
    def number(value, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    reference = row.reference + (f" (max rel {row.reference_rel:.2g} vs torch)"
                                 if row.reference_rel is not None else "")
    lines = [f"GPT-2-small-shaped, {row.layers} layer(s), {row.dtype}, {row.tiles} tiles",
             f"  export {number(row.export_seconds, '.1f')} s, import "
             f"{number(row.import_seconds, '.1f')} s: {number(row.graph_ops, 'd')} graph ops, "
             f"{number(row.repeats, 'd')} graph.repeat",
             f"  reference: {reference}"]
    if row.status == "compiled":
        lines.append(f"  compiled in {row.compile_seconds:.1f} s: {row.ops} ops, peak "
                     f"{row.peak_bytes} B, {number(row.cycles, 'd')} modeled cycles")
    elif row.status:
        after = (f" after {row.compile_seconds:.1f} s" if row.compile_seconds is not None
                 else "")
        lines.append(f"  compile: {row.status}{after}: {row.diagnostic}")
    if row.device:
        lines.append(f"  device model: {row.device} in {number(row.model_seconds, '.1f')} s "
                     f"({row.device_note})")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[1, 12])
    parser.add_argument("--tiles", type=int, default=1472)
    parser.add_argument("--dtype", choices=["f16", "f32"], default="f16")
    parser.add_argument("--run", action="store_true", help="run each package on the device model")
    parser.add_argument("--timeout", type=float, default=1800.0, help="compile seconds (1800)")
    parser.add_argument("--run-timeout", type=float, default=1800.0,
                        help="device-model seconds (1800)")
    parser.add_argument("--small", action="store_true", help="the model at SMALL_SHAPE")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the files in DIR")
    parser.add_argument("--json", action="store_true", help="one JSON list of rows on stdout")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        return work(args.worker, args.tiles, cycles=not args.run)
    rows = []
    for layers in args.layers:
        row = measure(layers, args.tiles, args.dtype, args.small, args.run, args.timeout,
                      args.run_timeout, args.keep)
        rows.append(row)
        if not args.json:
            print("\n".join(row_lines(row)), flush=True)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
