"""Robustness corpus: every input the tools take, mutated or hand-built, through every tool.

Seeded and reproducible. Every case runs in-process (the tools' own entry points, with their
output captured) under a wall-clock limit. The categories:

- ``--ir N``: mutated IR at every level, round robin over four seeds (the f16 and the batched
  f32 GEMM, the FP8 MLP of examples/fp8_mlp.mlir, a repeated GEMM and gelu) and five levels:
  graph, mid (after graph-to-mid), tile (after mid-to-tile), placed (after place-memory) and
  exchange (after schedule-exchange), all on 2 tiles. Each mutant goes through `ipu-opt`
  (parse and verify), the stages left after its level with `-t ipu-asm` and with `-t
  ipu-rows`, a package (graph IR: `ipu-run FILE --package DIR`; the lower levels: the package
  writer, `build_package` after the stages left, saved with the seed's graph as its source),
  and, when a package was written, `ipu-run DIR`, which checks a run against that graph.
- ``--packages N``: corrupted packages (the f16 GEMM on 4 tiles, the batched f32 GEMM on 2,
  the FP8 MLP on 4: metadata edits, archive edits, flipped bytes, mutated source.mlir, files
  replaced by links, directories, FIFOs) through `ipu-objdump --package`, `ipu-run DIR` and
  `Package.load` + `run_package`; then the hand-crafted FP8 packages (`fp8_package_cases`:
  scales, precisions and source edits, `--input` values), each with the verdicts it may get.
- ``--onnx N``: malformed ONNX models (three valid seeds with one to three structural edits:
  data types, dims, raw data, duplicates, dangling inputs, unknown ops, attributes, opsets,
  outsized constants, external data outside the model's directory, subgraphs; or corrupt
  bytes) through `ipu-import` (sometimes with `--repeat-layers` or `--dtype f16`); what imports
  goes on through `ipu-opt` and `ipu-run --reference` with the weights it wrote.
- ``--input-files N``: mutated `.npy` and `.npz` files for the f16 GEMM's argument (header
  dtype, shape and order edits, truncation, changed bytes, pickled arrays, odd archive members)
  and special paths (/dev/zero, /etc/passwd, a directory, a missing file) through `ipu-run
  FILE --reference` and `ipu-run DIR`, as `--input a=F` and as `--inputs F`.
- ``--outputs``: every output option (`ipu-opt -o`, `ipu-run --package`, `--save-outputs`,
  `--report`, `ipu-run DIR --save-outputs`, `ipu-import -o`, with good and bad inputs) to
  every kind of destination (`DESTINATIONS`: symlinks in and out, a directory or file in the
  other's place, a FIFO, under a file, under /proc, the input itself).
- ``--bombs``: hand-built resource bombs (loops of a package, repeat counts, dense splats,
  sums of argument sizes, reference work and memory, nesting depth, /dev/zero, a FIFO, an
  --inputs member claiming 4 GiB, an .npy header claiming 10^12 elements, a package whose
  source holds a billion-fold repeat, 2,500 identical ONNX nodes under --repeat-layers), each
  in its own process, with its exit status, wall time, CPU time and peak RSS: each must be
  refused (a diagnostic) within `BOMB_SECONDS` of CPU time and `BOMB_BYTES`.

Each run ends in one of:

- ``accepted``: exit 0 (IR that is still valid after the mutation; a package run that PASSes);
- ``diagnostic``: a clean error, exit 1 or 2 (for the package API: `PackageError` or
  `ModelError`);
- ``check-fail``: ipu-run ran to the end and its NumPy reference check FAILed (exit 1): the
  wrong answer is reported, not hidden;
- ``wrong-silent`` (package API only): `Package.load` + `run_package` finished without an
  error and the outputs differ from the reference;

or in a bad outcome:

- ``aborted``: click's bare "Aborted." (an EOFError or KeyboardInterrupt escaped the tool);
- ``traceback``: any other exception escaped the tool;
- ``hang``: no answer within the time limit;
- ``wrong-verdict``: a hand-crafted FP8 package got a verdict it may not get;
- ``wrote-outside``: an output option changed something outside the place it was given;
- ``left-behind``: a run that failed left an output or a temporary file, or changed an
  existing file (an import that failed left its directory);
- ``not-written``: a run that said it succeeded has no output of its kind where it was told.

Goal: 0 bad outcomes, and 0 wrong-silent for package runs through ipu-run (`ipu-run DIR`
checks against the reference, so a wrong answer there is ``check-fail``). The `wrong-silent`
count of the bare API says how many corruptions the schema cannot see (a different but
well-formed kernel symbol or address): only a reference check catches those; likewise a
``check-fail`` of `ipu-run DIR` on a mutant of lower-level IR is a valid program that
computes something else, caught by the check against the seed's graph.

Usage: python bench/robustness.py [--ir 600] [--packages 600] [--onnx 0] [--input-files 0]
[--outputs] [--bombs] [--seed 0] [--timeout 30] [--show KIND]... (issue 25's size: --ir 1000
--packages 500 --bombs --onnx 200, here with --input-files 200 --outputs too, for two seeds;
test/pytest/test_robustness.py runs a small corpus of each category).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import shutil
import signal
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

OUTCOMES = ("accepted", "diagnostic", "check-fail", "wrong-silent", "aborted", "traceback",
            "hang", "wrong-verdict", "wrote-outside", "left-behind", "not-written")
# always bad; "wrong-silent" is bad except for the bare API (see Tally.add)
BAD = ("aborted", "traceback", "hang", "wrong-verdict", "wrote-outside", "left-behind",
       "not-written")


class Hang(BaseException):
    """Raised by the alarm; a BaseException so that no tool's `except Exception` eats it."""


@dataclass
class Outcome:
    kind: str
    detail: str = ""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def alarm(signum, frame):
        raise Hang()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def guarded(call: Callable[[], int], timeout: float) -> tuple[int | None, str, BaseException | None]:
    """Run a tool entry point: (exit status, captured output, escaped exception)."""
    out = io.StringIO()
    status: int | None = 0
    escaped: BaseException | None = None
    try:
        with time_limit(timeout), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = call()
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except (Hang, Exception) as error:  # classifying what escaped, not handling it
        escaped = error
    return status, out.getvalue(), escaped


def classify(status: int | None, output: str, escaped: BaseException | None) -> Outcome:
    if isinstance(escaped, Hang):
        return Outcome("hang")
    if escaped is not None:
        lines = traceback.format_exception(escaped)
        return Outcome("traceback", "".join(lines[-3:]).strip())
    if "Traceback (most recent call last)" in output:
        return Outcome("traceback", output[-600:])
    if status == 1 and output.strip().endswith("Aborted."):
        return Outcome("aborted", output[-200:])
    if status == 0:
        return Outcome("accepted")
    if status == 1 and "check: FAIL" in output:
        return Outcome("check-fail", output[-300:])
    if status in (1, 2):
        return Outcome("diagnostic", output.strip().splitlines()[-1] if output.strip() else "")
    return Outcome("traceback", f"exit status {status}: {output[-300:]}")


# ---- the tools, in-process ------------------------------------------------------------------


def ipu_opt(args: list[str]) -> Callable[[], int]:
    def call() -> int:
        from tools.ipu_opt import IpuOptMain

        IpuOptMain(args=args).run()
        return 0
    return call


def typer_tool(app, args: list[str], prog: str) -> Callable[[], int]:
    def call() -> int:
        # standalone_mode keeps click's own handling (usage errors exit 2, EOFError -> Aborted)
        app(args=args, prog_name=prog, standalone_mode=True)
        return 0
    return call


def ipu_run(args: list[str]) -> Callable[[], int]:
    from tools.ipu_run import app
    return typer_tool(app, args, "ipu-run")


def ipu_objdump(args: list[str]) -> Callable[[], int]:
    from tools.ipu_objdump import app
    return typer_tool(app, args, "ipu-objdump")


def run_tool(call: Callable[[], int], timeout: float) -> Outcome:
    return classify(*guarded(call, timeout))


# ---- IR corpus ------------------------------------------------------------------------------

GRAPH_SEEDS = {
    "gemm_f16": (
        "func.func @gemm(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) -> tensor<64x64xf16> {\n"
        "  %c = graph.gemm %a, %b : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16>\n"
        "  func.return %c : tensor<64x64xf16>\n}\n"),
    "gemm_f32_batched": (
        "func.func @g(%a: tensor<2x32x64xf32>, %b: tensor<64x64xf32>) -> tensor<2x32x64xf32> {\n"
        "  %c = graph.gemm %a, %b : (tensor<2x32x64xf32>, tensor<64x64xf32>) -> "
        "tensor<2x32x64xf32>\n"
        "  func.return %c : tensor<2x32x64xf32>\n}\n"),
}
EXTREME_INTEGERS = (0, 1, -1, 2, 3, 15, 16, 17, 63, 64, 65, 1471, 1472, 1473, 2**31 - 1, 2**31,
                    2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64, 10**20, -(10**20), 10**40)
PUNCTUATION = list("{}()[]<>,:=%@#!^-+*x\"'") + ["->", "...", "0x", "//", "\n", "\x00", "é"]
TOKEN = re.compile(r"0x[0-9a-fA-F]+|\d+|[A-Za-z_][\w.$]*|\s+|.", re.S)


FP8_MLP = "\n".join(line for line in (Path(__file__).resolve().parents[1] / "examples"
                                      / "fp8_mlp.mlir").read_text().splitlines()
                    if not line.startswith("//")) + "\n"
GRAPH_SEEDS["fp8_mlp"] = FP8_MLP
GRAPH_SEEDS["repeat_gemm_f16"] = (
    "func.func @r(%x: tensor<32x32xf16>, %w: tensor<32x32xf16>) -> tensor<32x32xf16> {\n"
    "  %r = graph.repeat 3 carried(%c = %x : tensor<32x32xf16>) "
    "invariant(%v = %w : tensor<32x32xf16>) {\n"
    "    %y = graph.gemm %c, %v : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>\n"
    "    %g = graph.gelu %y : tensor<32x32xf16> -> tensor<32x32xf16>\n"
    "    graph.yield %g : tensor<32x32xf16>\n"
    "  } -> tensor<32x32xf16>\n  func.return %r : tensor<32x32xf16>\n}\n")

# The levels of the IR corpus: each is the module after the pipeline's stages up to it; a file
# of a lower level goes on through the stages after it (`rest_of`) to every emitter.
LEVELS = {"graph": 0, "mid": 1, "tile": 4, "placed": 5, "exchange": 6}  # stages run to reach it
SEED_TILES = 2


def rest_of(level: str) -> tuple[str, ...]:
    """The pipeline's stages after `level` (`passes.ipu_pipeline.STAGES`)."""
    from passes.ipu_pipeline import STAGES

    return STAGES[LEVELS[level]:]


def lowered_seed(graph_text: str, level: str, tiles: int = SEED_TILES) -> str:
    """`graph_text` after the pipeline's stages up to `level` (graph-to-mid with `tiles`),
    printed as ipu-opt prints it."""
    from xdsl.printer import Printer

    from passes.ipu_pipeline import IpuPipelinePass
    from tools.registry import make_context
    from tools.source_locations import parse_located_module

    if LEVELS[level] == 0:
        return graph_text
    ctx = make_context()
    module = parse_located_module(ctx, graph_text, "seed")
    for stage in IpuPipelinePass(tiles=tiles).stage_passes()[:LEVELS[level]]:
        stage.apply(ctx, module)
    module.verify()
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue() + "\n"


def tile_seed() -> str:
    """A seed at the exchange level: the scheduled output of the f16 GEMM."""
    return lowered_seed(GRAPH_SEEDS["gemm_f16"], "exchange")


def mutate_text(text: str, rng: random.Random) -> str:
    tokens = TOKEN.findall(text)
    solid = [i for i, t in enumerate(tokens) if not t.isspace()]
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        choice = rng.randrange(11)
        i = rng.choice(solid) if solid else 0
        if not tokens:
            break
        if choice <= 2:  # an integer becomes an extreme or a small random value
            numbers = [j for j, t in enumerate(tokens) if t[:1].isdigit()]
            if numbers:
                j = rng.choice(numbers)
                value = rng.choice(EXTREME_INTEGERS) if choice < 2 else rng.randrange(0, 300)
                tokens[j] = hex(value) if tokens[j].startswith("0x") and value >= 0 else str(value)
        elif choice == 3:
            tokens[i] = ""
        elif choice == 4:
            tokens[i] = tokens[i] * 2
        elif choice == 5:
            j = rng.choice(solid)
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif choice == 6:
            words = [t for t in tokens if t[:1].isalpha()]
            tokens[i] = rng.choice(words) if words else tokens[i]
        elif choice == 7:
            tokens.insert(i, rng.choice(PUNCTUATION))
        elif choice >= 9:  # an integer nudged: an address, count or scalar a little off
            numbers = [j for j, t in enumerate(tokens) if t.isdigit()]
            if numbers:
                j = rng.choice(numbers)
                value = max(0, int(tokens[j]) + rng.choice((-64, -16, -4, -2, -1, 1, 2, 4, 16, 64)))
                tokens[j] = str(value)
        else:
            lines = "".join(tokens).splitlines(keepends=True)
            k = rng.randrange(len(lines))
            if rng.random() < 0.5:
                del lines[k]
            else:
                lines.insert(k, lines[k])
            tokens = TOKEN.findall("".join(lines))
            solid = [i for i, t in enumerate(tokens) if not t.isspace()] or [0]
    text = "".join(tokens)
    if rng.random() < 0.05:
        text = text[: rng.randrange(len(text) + 1)]
    return text


@dataclass
class IrCase:
    seed_name: str
    level: str  # a key of LEVELS
    text: str


_SEED_CACHE: dict[tuple[str, str], str] = {}


def ir_seeds() -> list[tuple[str, str, str]]:
    """(graph seed, level, text) of every seed at every level (lowered once, then cached)."""
    seeds = []
    for level in LEVELS:
        for name, text in GRAPH_SEEDS.items():
            if (name, level) not in _SEED_CACHE:
                _SEED_CACHE[name, level] = lowered_seed(text, level)
            seeds.append((name, level, _SEED_CACHE[name, level]))
    return seeds


def ir_cases(count: int, seed: int, levels: tuple[str, ...] = tuple(LEVELS)) -> list[IrCase]:
    rng = random.Random(seed)
    seeds = [s for s in ir_seeds() if s[1] in levels]
    cases = []
    for n in range(count):
        name, level, text = seeds[n % len(seeds)]
        cases.append(IrCase(name, level, mutate_text(text, rng)))
    return cases


def package_writer(path: Path, rest: tuple[str, ...], source: str, package: Path,
                   ) -> Callable[[], int]:
    """The package writer on a file of any level, as ipu-run drives it: parse and verify, the
    stages after its level (`rest`), `build_package`, then save it with `source` (the graph
    seed the file was lowered from) so that `ipu-run DIR` checks a run against that graph.
    Exit 2 on a diagnostic, as the tools give it."""
    def call() -> int:
        from xdsl.utils.exceptions import DiagnosticException, ParseError

        from device.package import PackageError
        from passes.stages import get_stage_passes
        from tools.package_writer import build_package
        from tools.registry import make_context
        from tools.run_io import read_source
        from tools.source_locations import parse_located_module, verify_with_locations
        from tools.usage import UsageError

        try:
            ctx = make_context()
            module = parse_located_module(ctx, read_source(path), str(path))
            verify_with_locations(module)
            registry = get_stage_passes()
            for name in rest:
                registry[name]()().apply(ctx, module)
                verify_with_locations(module)
            built = build_package(module)
            built.source = source
            built.save(package)
        except (ParseError, DiagnosticException, PackageError, UsageError, OSError) as error:
            print(f"error: {error}")
            return 2
        return 0
    return call


def ir_runs(case: IrCase, path: Path, workdir: Path | None = None,
            ) -> list[tuple[str, Callable[[], int]]]:
    """(tool label, entry point) for one mutated IR file: parse and verify; the stages left
    after its level with each emitter (`-t ipu-asm`, `-t ipu-rows`); and a package: for graph
    IR `ipu-run FILE --package DIR`, for the lower levels the package writer, then `ipu-run
    DIR` on that package (`ir_package_run`, run only when the package was written)."""
    level = case.level
    rest = rest_of(level)
    passes = ["-p", f"ipu-pipeline{{tiles={SEED_TILES}}}"] if level == "graph" else (
        ["-p", ",".join(rest)] if rest else [])
    runs = [(f"ipu-opt [{level}]", ipu_opt([str(path)]))]
    for target in ("ipu-asm", "ipu-rows"):
        runs.append((f"ipu-opt -t {target} [{level}]", ipu_opt([str(path), *passes, "-t", target])))
    if workdir is not None:
        package = workdir / f"{path.stem}.pkg"
        if level == "graph":
            runs.append((f"ipu-run --package [{level}]", ipu_run(
                [str(path), "--tiles", str(SEED_TILES), "--package", str(package), "--quiet"])))
        else:
            runs.append((f"package writer [{level}]", package_writer(
                path, rest, GRAPH_SEEDS[case.seed_name], package)))
    return runs


def ir_package_run(case: IrCase, package: Path) -> tuple[str, Callable[[], int]]:
    return (f"ipu-run DIR [{case.level}]", ipu_run([str(package), "--quiet"]))


# ---- package corpus -------------------------------------------------------------------------


def build_base_package(directory: Path, seed_name: str = "gemm_f16", tiles: int = 4) -> Path:
    source = directory / f"{seed_name}.mlir"
    source.write_text(GRAPH_SEEDS[seed_name])
    package = directory / f"{seed_name}.pkg"
    status, output, escaped = guarded(
        ipu_run([str(source), "--tiles", str(tiles), "--package", str(package)]), 120)
    if status != 0 or escaped is not None:
        raise RuntimeError(f"the base package does not build: {output} {escaped}")
    return package


POOL: tuple = (None, True, False, -2, -1, 0, 1, 3, 2**31, 2**32, 2**63, 2**64, 10**30, 1.5,
               1e12, -1e300, "", "x", "amp_gemm_f32_init", "copy_words", [], {}, [1e12, 192],
               [[[[[]]]]], {"kind": "kernel"})


def json_paths(value, prefix=()) -> list[tuple]:
    paths = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            paths += json_paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value[:40]):
            paths += json_paths(child, prefix + (index,))
    return paths


def edit_json(meta: dict, rng: random.Random) -> str:
    """One edit of the metadata, in place: a value replaced, nudged or deleted, a key added."""
    path = rng.choice(json_paths(meta)[1:])
    parent = meta
    for key in path[:-1]:
        parent = parent[key]
    old = parent[path[-1]]
    choice = rng.randrange(6)
    if choice == 0 and isinstance(parent, dict):
        del parent[path[-1]]
        return f"deleted {list(path)}"
    if choice == 1 and isinstance(old, int) and not isinstance(old, bool):
        parent[path[-1]] = old + rng.choice((-1, 1, 4, -4, 64, 1 << 16))
    elif choice == 2 and isinstance(old, str):
        from device.kernels import KERNELS
        parent[path[-1]] = rng.choice(sorted(KERNELS) + [old + "x", old.upper()])
    elif choice == 3 and isinstance(parent, dict):
        parent[rng.choice(("extra", "kind", "steps0", "__proto__"))] = rng.choice(POOL)
    else:
        parent[path[-1]] = rng.choice(POOL)
    return f"{list(path)}: {old!r:.40} -> {parent[path[-1]]!r:.40}"


def edit_archive(path: Path, rng: random.Random, big: int) -> str:
    """One edit of program.npz: an array value, dtype or shape, a member removed or added."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    name = rng.choice(sorted(arrays))
    array = arrays[name]
    choice = rng.randrange(8)
    what = f"{name}: "
    if choice <= 2 and array.size:
        flat = array.reshape(-1).copy()
        index = rng.randrange(flat.size)
        if array.dtype == np.uint32:  # a row word: one bit, as a flipped bit in transit
            flat[index] ^= np.uint32(1 << rng.randrange(32))
        else:
            flat[index] = rng.choice((-2, -1, 0, 1, 2, int(flat[index]) + rng.choice((-4, 4, 32)),
                                      2**31 - 1, 0x4C000, 0xE8000))
        arrays[name] = flat.reshape(array.shape)
        what += f"entry {index}"
    elif choice == 3:
        arrays[name] = array.astype(rng.choice((np.float64, np.int64, np.uint64, np.int16)))
        if array.dtype == np.uint32 and rng.random() < 0.5:
            arrays[name] = arrays[name] + (1 << 33) if arrays[name].dtype != np.int16 else arrays[name]
        what += f"dtype {arrays[name].dtype}"
    elif choice == 4:
        arrays[name] = array.reshape(-1)[: max(0, array.size - rng.randrange(1, 4))]
        what += "truncated"
    elif choice == 5:
        del arrays[name]
        what += "deleted"
    elif choice == 6:
        arrays["hidden"] = np.zeros(big, np.float32)
        what = f"hidden member of {big} floats"
    else:
        arrays[name + "x"] = arrays.pop(name)
        what += "renamed"
    np.savez_compressed(path, **arrays)
    return what


def edit_bytes(path: Path, rng: random.Random) -> str:
    data = bytearray(path.read_bytes())
    choice = rng.randrange(3)
    if choice == 0 or not data:
        cut = rng.randrange(len(data) + 1)
        path.write_bytes(bytes(data[:cut]))
        return f"{path.name} truncated to {cut} bytes"
    for _ in range(rng.choice((1, 2, 8))):
        index = rng.randrange(len(data))
        data[index] ^= 1 << rng.randrange(8) if choice == 1 else rng.randrange(1, 256)
    path.write_bytes(bytes(data))
    return f"{path.name} bytes changed"


def edit_file_kind(directory: Path, rng: random.Random) -> str:
    name = rng.choice(("metadata.json", "program.npz", "program.s", "source.mlir"))
    path = directory / name
    path.unlink()
    choice = rng.randrange(5)
    if choice == 0:
        return f"{name} deleted"
    if choice == 1:
        path.symlink_to(rng.choice(("/dev/zero", "/etc/passwd", str(directory / "metadata.json"))))
        return f"{name} is a symlink"
    if choice == 2:
        path.mkdir()
        return f"{name} is a directory"
    if choice == 3:
        os.mkfifo(path)
        return f"{name} is a FIFO"
    path.write_bytes(b"")
    return f"{name} is empty"


def corrupt_package(base: Path, target: Path, rng: random.Random, big: int) -> str:
    shutil.copytree(base, target)
    choice = rng.randrange(10)
    if choice <= 4:
        meta_path = target / "metadata.json"
        if rng.random() < 0.03:  # JSON nested past Python's recursion limit
            meta_path.write_text('{"format_version": 2, "x": ' + "[" * 100000 + "]" * 100000 + "}")
            return "metadata nested 100000 deep"
        meta = json.loads(meta_path.read_text())
        what = edit_json(meta, rng)
        meta_path.write_text(json.dumps(meta))
        return f"metadata {what}"
    if choice <= 6:
        return "archive " + edit_archive(target / "program.npz", rng, big)
    if choice == 7:
        name = rng.choice(("metadata.json", "program.npz", "source.mlir"))
        return edit_bytes(target / name, rng)
    if choice == 8:
        text = (target / "source.mlir").read_text()
        (target / "source.mlir").write_text(mutate_text(text, rng))
        return "source.mlir mutated"
    return edit_file_kind(target, rng)



@dataclass
class Reference:
    """The base package's inputs (seed 0, as `ipu-run DIR` draws them) and NumPy results."""

    names: list[str]
    arrays: list[np.ndarray]
    expected: list[np.ndarray]
    result_types: list


def reference_of(package_dir: Path) -> Reference:
    from interpreters.graph import input_names, run_function
    from tools.ipu_run import find_function, parse_module, random_inputs

    module = parse_module(package_dir / "source.mlir")
    func = find_function(module, None)
    arrays = random_inputs(func, 0)
    expected = run_function(module, arrays, func.sym_name.data)
    return Reference(input_names(func), arrays, expected, list(func.function_type.outputs.data))


def api_run(directory: Path, reference: Reference) -> Callable[[], int]:
    """`Package.load` + `run_package`, as a program embedding the model would call them:
    exit 0 when the outputs match the reference, 3 when they silently do not, 2 on an error."""
    def call() -> int:
        from device.model import ModelError, run_package
        from device.model.host import stored_of_values, values_of_stored
        from device.package import Package, PackageError
        from tools.ipu_run import compare

        try:
            package = Package.load(directory)
            if [t.name for t in package.inputs] != reference.names:
                return 3  # run with the reference's arrays, the package's own would be wrong
            # the reference holds an FP8 tensor as its stored q, the model reads values
            feeds = {t.name: values_of_stored(t, array)
                     for t, array in zip(package.inputs, reference.arrays, strict=True)}
            outcome = run_package(package, feeds)
        except (PackageError, ModelError) as error:
            print(f"error: {error}")
            return 2
        if len(package.outputs) != len(reference.expected):
            return 3
        results = [stored_of_values(t, outcome.outputs[t.name]) for t in package.outputs]
        check = compare(results, reference.expected, reference.result_types)
        return 0 if check.passed and not outcome.exchange_errors else 3
    return call


def package_runs(directory: Path, reference: Reference, tile: int) -> list[tuple[str, Callable[[], int]]]:
    return [("ipu-objdump --package", ipu_objdump(["--package", str(directory), "--tile", str(tile)])),
            ("ipu-run DIR", ipu_run([str(directory)])),
            ("Package.load+run_package", api_run(directory, reference))]


@dataclass
class Tally:
    counts: dict[str, Counter]
    bad: list[str]  # tracebacks, hangs, aborts and silent wrong answers, described
    seconds: float = 0.0
    cases: dict[str, list[str]] = field(default_factory=dict)  # outcome kind -> cases

    def add(self, tool: str, outcome: Outcome, case: str) -> None:
        self.counts.setdefault(tool, Counter())[outcome.kind] += 1
        self.cases.setdefault(outcome.kind, []).append(f"[{tool}] {case} {outcome.detail[:200]}")
        if outcome.kind in BAD or (
                outcome.kind == "wrong-silent" and tool != "Package.load+run_package"):
            self.bad.append(f"[{tool}] {case}: {outcome.kind} {outcome.detail}")

    def table(self) -> str:
        """Outcome counts by tool: the columns of every outcome seen, and always the bad ones."""
        kinds = [k for k in OUTCOMES
                 if k in ("traceback", "hang") or any(c[k] for c in self.counts.values())]
        width = max(len(tool) for tool in self.counts) + 2 if self.counts else 10
        lines = [f"{'tool':<{width}}" + "".join(f"{k:>{len(k) + 2}}" for k in kinds)
                 + f"{'total':>8}"]
        for tool, counter in self.counts.items():
            lines.append(f"{tool:<{width}}" + "".join(f"{counter[k]:>{len(k) + 2}}" for k in kinds)
                         + f"{sum(counter.values()):>8}")
        return "\n".join(lines)


def run_case(tally: Tally, tool: str, call: Callable[[], int], case: str, timeout: float) -> None:
    status, output, escaped = guarded(call, timeout)
    outcome = classify(status, output, escaped)
    if tool == "Package.load+run_package" and status == 3 and escaped is None:
        outcome = Outcome("wrong-silent")
    tally.add(tool, outcome, case)


def run_ir_corpus(tally: Tally, count: int, seed: int, timeout: float, workdir: Path,
                  levels: tuple[str, ...] = tuple(LEVELS)) -> None:
    for n, case in enumerate(ir_cases(count, seed, levels)):
        path = workdir / f"ir{n}.mlir"
        path.write_text(case.text, errors="surrogateescape")
        label = f"ir case {n} (seed {seed}, {case.level} from {case.seed_name})"
        for tool, call in ir_runs(case, path, workdir):
            run_case(tally, tool, call, label, timeout)
        package = workdir / f"{path.stem}.pkg"
        if (package / "metadata.json").exists():
            tool, call = ir_package_run(case, package)
            run_case(tally, tool, call, label, timeout)
        shutil.rmtree(package, ignore_errors=True)
        path.unlink()


def run_package_corpus(tally: Tally, count: int, seed: int, timeout: float, workdir: Path,
                       big: int = 50_000_000) -> None:
    rng = random.Random(seed)
    bases = [build_base_package(workdir, "gemm_f16", 4), build_base_package(workdir, "gemm_f32_batched", 2),
             build_base_package(workdir, "fp8_mlp", 4)]
    references = [reference_of(base) for base in bases]
    for n in range(count):
        which = n % len(bases)
        target = workdir / f"pkg{n}"
        what = corrupt_package(bases[which], target, rng, big)
        for tool, call in package_runs(target, references[which], rng.randrange(4)):
            run_case(tally, tool, call, f"package case {n} (seed {seed}): {what}", timeout)
        shutil.rmtree(target, ignore_errors=True)


def run_corpus(ir: int, packages: int, seed: int, timeout: float, big: int = 50_000_000,
               onnx: int = 0, outputs: bool = False, input_files: int = 0) -> Tally:
    """The mutated IR (every level), the corrupted packages (and, with any, the hand-crafted
    FP8 ones), `onnx` malformed ONNX models, `input_files` mutated input files, and with
    `outputs` every output option to every kind of destination."""
    tally = Tally({}, [])
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ipu-robustness-") as temp:
        run_ir_corpus(tally, ir, seed, timeout, Path(temp))
        if packages:
            run_package_corpus(tally, packages, seed, timeout, Path(temp), big)
            run_fp8_package_cases(tally, Path(temp) / "fp8", timeout)
        if onnx:
            run_onnx_corpus(tally, onnx, seed, timeout, Path(temp))
        if input_files:
            run_input_corpus(tally, input_files, seed, timeout, Path(temp) / "inputs")
        if outputs:
            run_output_corpus(tally, timeout, Path(temp) / "outputs")
    tally.seconds = time.perf_counter() - started
    return tally


# ---- hand-crafted FP8 packages --------------------------------------------------------------
#
# Each edit of the FP8 MLP's package (`examples/fp8_mlp.mlir` on 4 tiles) has the outcomes
# `ipu-run DIR` may give for it: a verdict other than these is ``wrong-verdict`` (a PASS for a
# package that no longer computes its source, or a FAIL for one that still does: issue 25's
# FP8 packages judged q against values).


def _edit_meta(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(package: Path) -> None:
        meta = json.loads((package / "metadata.json").read_text())
        edit(meta)
        (package / "metadata.json").write_text(json.dumps(meta))
    return apply


def _edit_source(old: str, new: str, count: int = 1) -> Callable[[Path], None]:
    def apply(package: Path) -> None:
        text = (package / "source.mlir").read_text()
        assert old in text, old
        (package / "source.mlir").write_text(text.replace(old, new, count))
    return apply


def _set(path: tuple, value) -> Callable[[dict], None]:
    def edit(meta: dict) -> None:
        parent = meta
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = value
    return edit


FP8_ACCEPTED, FP8_REFUSED, FP8_FAIL = ("accepted",), ("diagnostic",), ("check-fail",)
FP8_X, FP8_OUT = "tensor<64x128xf8E4M3FNUZ, #graph.fp8_scale<1>>", "#graph.fp8_scale<-3>"


def fp8_package_cases() -> list[tuple[str, Callable[[Path], None], list[str], tuple[str, ...]]]:
    """(what, edit of the package directory, extra ipu-run arguments, outcomes allowed)."""
    none = lambda package: None  # noqa: E731
    return [
        ("as written", none, [], FP8_ACCEPTED),
        ("--input x=values (q * 2**1)", none, ["@x"], FP8_ACCEPTED),
        ("--seed 7", none, ["--seed", "7"], FP8_ACCEPTED),
        ("inputs[0].scale 1 -> 2", _edit_meta(_set(("inputs", 0, "scale"), 2)), [], FP8_REFUSED),
        ("inputs[1].scale -1 -> 0", _edit_meta(_set(("inputs", 1, "scale"), 0)), [], FP8_REFUSED),
        ("outputs[0].scale -3 -> -2", _edit_meta(_set(("outputs", 0, "scale"), -2)), [], FP8_REFUSED),
        ("inputs[0].scale deleted", _edit_meta(lambda m: m["inputs"][0].pop("scale")), [],
         FP8_REFUSED),
        ("inputs[0].scale 1e9", _edit_meta(_set(("inputs", 0, "scale"), 10**9)), [], FP8_REFUSED),
        ("inputs[0].scale 1.5", _edit_meta(_set(("inputs", 0, "scale"), 1.5)), [], FP8_REFUSED),
        ("inputs[0].scale true", _edit_meta(_set(("inputs", 0, "scale"), True)), [], FP8_REFUSED),
        ("inputs[0].precision f16", _edit_meta(_set(("inputs", 0, "precision"), "f16")), [],
         FP8_REFUSED),
        ("outputs[0].precision f32", _edit_meta(_set(("outputs", 0, "precision"), "f32")), [],
         FP8_REFUSED),
        ("source: x's fp8_scale 1 -> 2", _edit_source(FP8_X, FP8_X.replace("<1>", "<2>"), 2), [],
         FP8_REFUSED),
        ("source: the result's fp8_scale -3 -> -2 everywhere",
         _edit_source(FP8_OUT, "#graph.fp8_scale<-2>", -1), [], FP8_REFUSED),
        ("source: every f8E4M3FNUZ is f16 (scales dropped)", lambda package: (
            package / "source.mlir").write_text(re.sub(
                r"f8E4M3FNUZ, #graph\.fp8_scale<-?\d+>", "f16",
                (package / "source.mlir").read_text())), [], FP8_REFUSED),
        ("source: gelu dropped (same signature, other function)", lambda package: (
            package / "source.mlir").write_text(re.sub(
                r"  (%\w+) = graph\.gelu (%\w+) [^\n]*\n", r"", (package / "source.mlir").read_text()
                ).replace("func.return %g", "func.return %yb")), [], FP8_FAIL),
        ("--input x of f16 values out of FP8 range", none, ["@x-big"], FP8_ACCEPTED + FP8_FAIL),
    ]


def fp8_arguments(args: list[str], package: Path) -> list[str]:
    out = []
    for arg in args:
        if arg.startswith("@x"):
            rng = np.random.default_rng(5)
            values = rng.integers(-8, 8, (64, 128)) * 2.0**(1 - 3)
            if arg == "@x-big":
                values = values * 1e4
            path = package.parent / f"{package.name}.x.npy"
            np.save(path, values.astype(np.float32))
            out += ["--input", f"x={path}"]
        else:
            out.append(arg)
    return out


def run_fp8_package_cases(tally: Tally, workdir: Path, timeout: float) -> list[str]:
    """Every hand-crafted FP8 package through `ipu-run DIR` and `ipu-objdump --package`; a
    verdict outside the case's allowed outcomes is a ``wrong-verdict`` (bad)."""
    workdir.mkdir(parents=True, exist_ok=True)
    base = build_base_package(workdir, "fp8_mlp", 4)
    wrong = []
    for n, (what, edit, args, allowed) in enumerate(fp8_package_cases()):
        target = workdir / f"fp8-{n}"
        shutil.copytree(base, target)
        edit(target)
        label = f"fp8 package {n}: {what}"
        status, output, escaped = guarded(ipu_run([str(target), *fp8_arguments(args, target)]),
                                          timeout)
        outcome = classify(status, output, escaped)
        if outcome.kind not in allowed and outcome.kind not in ("traceback", "hang", "aborted"):
            outcome = Outcome("wrong-verdict", f"{outcome.kind}, wanted {'/'.join(allowed)}: "
                              + (output.strip().splitlines() or [""])[-1][:200])
            wrong.append(f"{label}: {outcome.detail}")
        tally.add("ipu-run DIR [fp8, hand-crafted]", outcome, label)
        run_case(tally, "ipu-objdump [fp8, hand-crafted]",
                 ipu_objdump(["--package", str(target), "--tile", "0"]), label, timeout)
        shutil.rmtree(target, ignore_errors=True)
    return wrong


# ---- malformed ONNX (--onnx) -----------------------------------------------------------------


def onnx_seed_models() -> dict[str, Any]:
    """Small valid models of the ops the importer maps (onnx.helper), one per seed."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    def value(name, shape, elem=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, elem, shape)

    def model(nodes, inputs, outputs, initializers, opset=17):
        graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])

    mlp = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
                 helper.make_node("Add", ["y", "b"], ["z"], name="add"),
                 helper.make_node("Gelu", ["z"], ["g"], name="gelu"),
                 helper.make_node("Transpose", ["g"], ["out"], name="transpose", perm=[1, 0])],
                [value("x", [4, 8])], [value("out", [16, 4])], [init("w", 8, 16), init("b", 16)],
                opset=20)
    layer = model([helper.make_node("LayerNormalization", ["x", "s", "c"], ["n"], name="ln",
                                    axis=-1, epsilon=1e-5),
                   helper.make_node("Gemm", ["n", "w"], ["y"], name="gemm", transB=1),
                   helper.make_node("Reshape", ["y", "shape"], ["r"], name="reshape"),
                   helper.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[1, 0, 2]),
                   helper.make_node("Split", ["t", "parts"], ["p0", "p1"], name="split", axis=2),
                   helper.make_node("Concat", ["p1", "p0"], ["out"], name="concat", axis=2)],
                  [value("x", [4, 8])], [value("out", [2, 4, 4])],
                  [init("s", 8), init("c", 8), init("w", 8, 8),
                   numpy_helper.from_array(np.array([4, 2, 4], np.int64), "shape"),
                   numpy_helper.from_array(np.array([2, 2], np.int64), "parts")])
    folded = model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
                    helper.make_node("ConstantOfShape", ["s"], ["ones"], name="cos",
                                     value=numpy_helper.from_array(np.ones(1, np.float32))),
                    helper.make_node("Add", ["x", "ones"], ["out"], name="add")],
                   [value("x", [4, 8])], [value("out", [4, 8])], [])
    return {"mlp": mlp, "layer": layer, "folded": folded}


ONNX_TYPES = (0, 1, 2, 5, 6, 7, 9, 10, 11, 16, 17, 99, -1, 2**31 - 1)
ONNX_DIMS = (-1, 0, 1, 3, 2**31 - 1, 2**40, 10**12)


def mutate_onnx(model, rng: random.Random) -> tuple[Any, str]:
    """One structural edit of a model proto: what an attacker can write and protobuf keeps."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    choice = rng.randrange(16)
    if choice == 0 and graph.initializer:  # an initializer's data type
        t = rng.choice(graph.initializer)
        t.data_type = rng.choice(ONNX_TYPES)
        return model, f"initializer {t.name} data_type {t.data_type}"
    if choice == 1 and graph.initializer:  # dims that do not match the data
        t = rng.choice(graph.initializer)
        t.dims[:] = [rng.choice(ONNX_DIMS) for _ in range(rng.randrange(0, 4))]
        return model, f"initializer {t.name} dims {list(t.dims)}"
    if choice == 2 and graph.initializer:  # raw data cut, dropped, or grown
        t = rng.choice(graph.initializer)
        if t.raw_data:
            t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data) + 1)] * rng.choice((1, 1, 3))
        else:
            t.ClearField("float_data")
        return model, f"initializer {t.name} data changed"
    if choice == 3:  # a duplicate: initializer, node output, graph input
        what = rng.randrange(3)
        if what == 0 and graph.initializer:
            graph.initializer.append(graph.initializer[0])
        elif what == 1 and graph.node:
            node = rng.choice(graph.node)
            graph.node.append(node)
        else:
            graph.input.append(graph.input[0])
        return model, f"duplicate ({what})"
    if choice == 4 and graph.node:  # a node's input renamed (undefined, or a cycle)
        node = rng.choice(graph.node)
        if node.input:
            k = rng.randrange(len(node.input))
            names = [o for n in graph.node for o in n.output] + ["nowhere", ""]
            node.input[k] = rng.choice(names)
            return model, f"node {node.name} input {k} -> {node.input[k]!r}"
    if choice == 5 and graph.node:  # an unknown op, or a known one in another domain
        node = rng.choice(graph.node)
        node.op_type = rng.choice(("Conv", "Loop", "If", "Scan", "Frob", "", "MatMul", "Gelu"))
        node.domain = rng.choice(("", "com.microsoft", "ai.onnx.ml", "x"))
        return model, f"node {node.name} op {node.domain}:{node.op_type}"
    if choice == 6 and graph.node:  # an attribute's value or type
        node = rng.choice(graph.node)
        name = rng.choice([a.name for a in node.attribute] + ["axis", "perm", "epsilon", "transB"])
        value = rng.choice((-(2**40), -3, -1, 0, 1, 7, 2**62, 1.5, float("nan"), "s", [0, 0, 0],
                            [2**40], []))
        kept = [a for a in node.attribute if a.name != name]
        del node.attribute[:]
        node.attribute.extend(kept)
        try:
            node.attribute.append(helper.make_attribute(name, value))
        except (ValueError, TypeError):
            pass
        return model, f"node {node.name} attribute {name}={value!r}"
    if choice == 7:  # a graph input's shape or element type
        v = rng.choice(list(graph.input) + list(graph.output))
        dims = v.type.tensor_type.shape.dim
        if dims and rng.random() < 0.6:
            d = rng.choice(dims)
            if rng.random() < 0.3:
                d.dim_param = rng.choice(("batch", "", "N"))
            else:
                d.dim_value = rng.choice(ONNX_DIMS)
        else:
            v.type.tensor_type.elem_type = rng.choice(ONNX_TYPES)
        return model, f"value {v.name} type changed"
    if choice == 8:  # the opset
        model.opset_import[0].version = rng.choice((0, 1, 7, 13, 21, 99, 2**62))
        return model, f"opset {model.opset_import[0].version}"
    if choice == 9 and graph.node:  # a node removed, or every node
        if rng.random() < 0.2:
            del graph.node[:]
            return model, "no nodes"
        del graph.node[rng.randrange(len(graph.node))]
        return model, "a node removed"
    if choice == 10:  # an outsized constant
        shape = [rng.choice((2**16, 2**20, 2**31)), rng.choice((1, 2**16))]
        node = helper.make_node("ConstantOfShape", ["big_shape"], [graph.node[0].input[0]
                                if graph.node and graph.node[0].input else "big"], name="big")
        graph.initializer.append(numpy_helper.from_array(np.array(shape, np.int64), "big_shape"))
        graph.node.insert(0, node)
        return model, f"ConstantOfShape {shape}"
    if choice == 11:  # a string, bool or complex initializer
        kind = rng.choice((np.array(["a", "b"]), np.array([True, False]), np.zeros(2, np.complex64)))
        graph.initializer.append(numpy_helper.from_array(kind, graph.initializer[0].name
                                 if graph.initializer else "w"))
        return model, f"initializer of {kind.dtype}"
    if choice == 12:  # external data pointing out of the model's directory
        if graph.initializer:
            t = graph.initializer[0]
            t.ClearField("raw_data")
            t.ClearField("float_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            del t.external_data[:]
            entry = t.external_data.add()
            entry.key, entry.value = "location", rng.choice(("/etc/passwd", "../../etc/passwd",
                                                              "/dev/zero", "missing.bin"))
            return model, f"external data {entry.value}"
    if choice == 13:  # the graph's output names nothing, or is missing
        if graph.output and rng.random() < 0.5:
            graph.output[0].name = "nothing"
        else:
            del graph.output[:]
        return model, "output changed"
    if choice == 14 and graph.node:  # a subgraph attribute, nested
        inner = helper.make_graph([], "inner", [], [])
        node = rng.choice(graph.node)
        node.attribute.append(helper.make_attribute("body", inner))
        return model, f"node {node.name} with a subgraph"
    # a Constant node with an odd value
    constant: np.ndarray = rng.choice((
        np.zeros((0,), np.float32), np.full((2,), np.nan, np.float32), np.array(2**40, np.int64),
        np.zeros((1, 1, 1, 1, 1, 1, 1, 1), np.float16)))
    graph.node.insert(0, helper.make_node("Constant", [], [graph.input[0].name if graph.input
                                                             else "c"], name="const",
                                          value=numpy_helper.from_array(constant)))
    return model, f"Constant of {constant.dtype}{list(constant.shape)}"


def onnx_bytes_edit(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    if not data or rng.random() < 0.3:
        cut = rng.randrange(len(data) + 1)
        return data[:cut], f"truncated to {cut} bytes"
    buffer = bytearray(data)
    for _ in range(rng.choice((1, 2, 8, 32))):
        buffer[rng.randrange(len(buffer))] = rng.randrange(256)
    return bytes(buffer), "bytes changed"


def onnx_cases(count: int, seed: int) -> list[tuple[str, bytes]]:
    """(what, file bytes): structural edits (one to three), byte edits, and the odd file."""
    rng = random.Random(seed)
    seeds = onnx_seed_models()
    names = sorted(seeds)
    cases: list[tuple[str, bytes]] = [("empty file", b""), ("one byte", b"\x08"),
                                      ("the text 'hello'", b"hello")]
    while len(cases) < count:
        name = names[len(cases) % len(names)]
        model = seeds[name]
        what = [name]
        if rng.random() < 0.8:
            for _ in range(rng.choice((1, 1, 2, 3))):
                model, edit = mutate_onnx(model, rng)
                what.append(edit)
            data = model.SerializeToString()
        else:
            data, edit = onnx_bytes_edit(model.SerializeToString(), rng)
            what.append(edit)
        cases.append(("; ".join(what), data))
    return cases[:count]


def ipu_import(args: list[str]) -> Callable[[], int]:
    from tools.ipu_import import app
    return typer_tool(app, args, "ipu-import")


def run_onnx_corpus(tally: Tally, count: int, seed: int, timeout: float, workdir: Path) -> None:
    """Each malformed model through `ipu-import` (and `--repeat-layers`, `--dtype f16`); an
    import that succeeds must write graph IR that `ipu-opt` verifies and `ipu-run --reference`
    runs with the weights it wrote (else the importer accepted what it should have refused)."""
    for n, (what, data) in enumerate(onnx_cases(count, seed)):
        model = workdir / f"m{n}.onnx"
        model.write_bytes(data)
        label = f"onnx case {n} (seed {seed}): {what}"
        flags = random.Random(seed * 7919 + n).choice(([], ["--repeat-layers"], ["--dtype", "f16"]))
        out = workdir / f"m{n}.out"
        status, output, escaped = guarded(ipu_import([str(model), "-o", str(out), *flags]), timeout)
        tally.add("ipu-import", classify(status, output, escaped), label)
        if status == 0 and escaped is None:
            imported = out / "model.mlir"
            run_case(tally, "ipu-opt [imported]", ipu_opt([str(imported)]), label, timeout)
            run_case(tally, "ipu-run --reference [imported]", ipu_run(
                [str(imported), "--reference", "--inputs", str(out / "weights.npz")]), label, timeout)
        elif out.exists():
            tally.add("ipu-import", Outcome("left-behind", f"{out} after a failed import"), label)
        shutil.rmtree(out, ignore_errors=True)
        model.unlink()


# ---- input files (--input-files N) -----------------------------------------------------------
#
# Mutated `.npy` and `.npz` files for the GEMM's argument `a` (64x128 f16), and odd files in
# their place, through `ipu-run FILE --reference --input a=F` / `--inputs F` and through a
# package run, `ipu-run DIR --input a=F` / `--inputs F`: each is read (exit 0) or refused.


def npy_bytes(array: np.ndarray) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array, allow_pickle=False)
    return stream.getvalue()


def npz_bytes(arrays: dict[str, Any], compressed: bool = True) -> bytes:
    stream = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(stream, **arrays)
    return stream.getvalue()


def edit_npy_header(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """The header dict of an .npy file rewritten: its dtype, shape or order."""
    length = int.from_bytes(data[8:10], "little")
    header = data[10:10 + length].decode("latin1")
    choice = rng.randrange(4)
    if choice == 0:
        descr = rng.choice(("|O", "<f8", "<i8", "|V2", "<c8", ">f2", "|b1", "<U2", "xx"))
        new = re.sub(r"'descr': '[^']*'", f"'descr': '{descr}'", header)
    elif choice == 1:
        new = re.sub(r"'shape': \([^)]*\)", "'shape': " + rng.choice((
            "(128, 64)", "(64, 128, 1)", "()", "(-64, -128)", "(64, 128.0)", "(10**12,)",
            "(1000000, 1000000)", "(64,)", "[64, 128]", "(64, 'x')")), header)
    elif choice == 2:
        new = header.replace("'fortran_order': False", "'fortran_order': True")
    else:
        new = header.replace("{", "{'extra': 1, ", 1) if rng.random() < 0.5 else header[:-8]
    new = new.rstrip("\n")
    new += " " * ((64 - (10 + len(new) + 1) % 64) % 64) + "\n"
    return (data[:8] + len(new).to_bytes(2, "little") + new.encode("latin1") + data[10 + length:],
            f"header {new.strip()[:80]!r}")


def input_file_cases(count: int, seed: int) -> list[tuple[str, str, bytes | None, str]]:
    """(what, option, file bytes or None for a special path, special path)."""
    rng = random.Random(seed)
    values = np.random.default_rng(seed).standard_normal((64, 128)).astype(np.float16)
    good_npy = npy_bytes(values)
    good_npz = npz_bytes({"a": values})
    special = ("/dev/zero", "/dev/null", "/etc/passwd", "/proc/self/status", "/nonexistent", "/tmp")
    cases: list[tuple[str, str, bytes | None, str]] = [
        ("good .npy", "--input", good_npy, ""), ("good .npz", "--inputs", good_npz, ""),
        ("an .npz given to --input", "--input", good_npz, ""),
        ("an .npy given to --inputs", "--inputs", good_npy, ""),
        ("a pickled object array", "--input", npy_pickled(), ""),
        ("an .npz of a pickled member", "--inputs", npz_pickled(), ""),
        ("an .npz naming b, not an argument", "--inputs", npz_bytes({"zz": values}), ""),
        ("an .npz with a member in a subdirectory", "--inputs", npz_member("dir/a.npy", good_npy), ""),
        ("an .npz with the member twice", "--inputs", npz_member("a.npy", good_npy, twice=True), ""),
        ("an .npz member that is not .npy", "--inputs", npz_member("a", b"hello"), ""),
        ("an empty .npz", "--inputs", npz_bytes({}), ""),
        ("an f32 array", "--input", npy_bytes(values.astype(np.float32)), ""),
        ("NaN and inf", "--input", npy_bytes(np.full((64, 128), np.nan, np.float16)), ""),
    ] + [(f"the path {p}", rng.choice(("--input", "--inputs")), None, p) for p in special]
    while len(cases) < count:
        option = rng.choice(("--input", "--inputs"))
        base = good_npy if option == "--input" else good_npz
        choice = rng.randrange(3)
        if choice == 0 and option == "--input":
            data, what = edit_npy_header(base, rng)
        elif choice == 1:
            data, what = onnx_bytes_edit(base, rng)  # truncation or changed bytes
        else:
            inner, what = edit_npy_header(good_npy, rng)
            data = npz_member("a.npy", inner) if option == "--inputs" else inner
            what = f"member {what}" if option == "--inputs" else what
        cases.append((what, option, data, ""))
    return cases[:count]


def npy_pickled() -> bytes:
    stream = io.BytesIO()
    np.save(stream, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    return stream.getvalue()


def npz_pickled() -> bytes:
    return npz_member("a.npy", npy_pickled())


def npz_member(name: str, data: bytes, twice: bool = False) -> bytes:
    import warnings
    import zipfile

    stream = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(stream, "w") as archive:
        warnings.simplefilter("ignore")  # a duplicate name warns
        archive.writestr(name, data)
        if twice:
            archive.writestr(name, data)
    return stream.getvalue()


def run_input_corpus(tally: Tally, count: int, seed: int, timeout: float, workdir: Path) -> None:
    """Each input file through a run of the .mlir (--reference) and of a package."""
    workdir.mkdir(parents=True, exist_ok=True)
    gemm = workdir / "gemm.mlir"
    gemm.write_text(GRAPH_SEEDS["gemm_f16"])
    package = build_base_package(workdir, "gemm_f16", 2)
    for n, (what, option, data, special) in enumerate(input_file_cases(count, seed)):
        path = special or str(workdir / f"input{n}{'.npy' if option == '--input' else '.npz'}")
        if data is not None:
            Path(path).write_bytes(data)
        spec = [option, f"a={path}" if option == "--input" else path]
        label = f"input case {n} (seed {seed}): {what} as {option}"
        run_case(tally, f"ipu-run FILE {option}", ipu_run([str(gemm), "--reference", *spec]),
                 label, timeout)
        run_case(tally, f"ipu-run DIR {option}", ipu_run([str(package), *spec]), label, timeout)
        if data is not None:
            Path(path).unlink()


# ---- output paths (--outputs) ----------------------------------------------------------------
#
# Every option that writes, to every kind of destination: a symlink to a file or directory
# outside (its target must be left as it was: the link is replaced, or the run refused), a
# dangling symlink, a directory where a file goes and a file where a directory goes, a FIFO, a
# path under a file, under /proc (unwritable even for root), a parent that is a symlink (the
# path named goes through it as the user wrote it: only the output may appear there), the
# input file itself. A run that fails must leave no output, no temporary file, and no change
# outside `work/`; a run that succeeds must have written its output (a regular file or
# directory, no symlink) at the path given.

OUTPUT_OPTIONS = {
    # option: (kind of output, command given the destination)
    "ipu-opt -o": ("file", lambda d, dst: ipu_opt([str(d / "gemm.mlir"), "-o", dst])),
    "ipu-opt -o (bad input)": ("file", lambda d, dst: ipu_opt([str(d / "bad.mlir"), "-o", dst])),
    "ipu-opt -t ipu-rows -o": ("file", lambda d, dst: ipu_opt(
        [str(d / "gemm.mlir"), "-p", "ipu-pipeline{tiles=2}", "-t", "ipu-rows", "-o", dst])),
    "ipu-run --package": ("dir", lambda d, dst: ipu_run(
        [str(d / "gemm.mlir"), "--tiles", "2", "--package", dst, "--quiet"])),
    "ipu-run --package (bad input)": ("dir", lambda d, dst: ipu_run(
        [str(d / "bad.mlir"), "--tiles", "2", "--package", dst, "--quiet"])),
    "ipu-run --save-outputs": ("dir", lambda d, dst: ipu_run(
        [str(d / "gemm.mlir"), "--tiles", "2", "--save-outputs", dst, "--quiet"])),
    "ipu-run --report": ("dir", lambda d, dst: ipu_run(
        [str(d / "gemm.mlir"), "--tiles", "2", "--report", dst, "--quiet"])),
    "ipu-run DIR --save-outputs": ("dir", lambda d, dst: ipu_run(
        [str(d / "base.pkg"), "--save-outputs", dst])),
    "ipu-import -o": ("dir", lambda d, dst: ipu_import([str(d / "mlp.onnx"), "-o", dst])),
    "ipu-import -o (bad model)": ("dir", lambda d, dst: ipu_import([str(d / "bad.onnx"), "-o", dst])),
}
DESTINATIONS = ("new", "new/nested", "symlink to a file outside", "symlink to a directory outside",
                "dangling symlink", "existing file", "existing directory", "FIFO", "under a file",
                "under /proc", "parent is a symlink outside", "the input file")


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under `root`: (kind, bytes or link target), to see what a run changed."""
    entries: dict[str, tuple] = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            entries[str(path)] = ("link", os.readlink(path))
        elif path.is_fifo():
            entries[str(path)] = ("fifo",)
        elif path.is_dir():
            entries[str(path)] = ("dir",)
        else:
            entries[str(path)] = ("file", path.read_bytes())
    return entries


def output_destination(kind: str, where: str, work: Path, outside: Path) -> str:
    """Make the destination `where` under `work` and return the path to pass."""
    dst = work / "out"
    if where == "new":
        return str(dst)
    if where == "new/nested":
        return str(work / "a" / "b" / "out")
    if where == "symlink to a file outside":
        dst.symlink_to(outside / "victim.txt")
    elif where == "symlink to a directory outside":
        dst.symlink_to(outside / "victim-dir")
    elif where == "dangling symlink":
        dst.symlink_to(outside / "not-there")
    elif where == "existing file":
        dst.write_text("an existing file\n")
    elif where == "existing directory":
        dst.mkdir()
        (dst / "kept.txt").write_text("kept\n")
    elif where == "FIFO":
        os.mkfifo(dst)
    elif where == "under a file":
        (work / "file").write_text("x")
        return str(work / "file" / "out")
    elif where == "under /proc":
        return "/proc/ipu-robustness/out"
    elif where == "parent is a symlink outside":
        (work / "link").symlink_to(outside / "victim-dir")
        return str(work / "link" / "out")
    elif where == "the input file":
        return str(work / ("gemm.mlir" if kind == "file" else "base.pkg"))
    return str(dst)


def output_fixtures(work: Path, base_package: Path, onnx_model: bytes) -> None:
    work.mkdir(parents=True)
    (work / "gemm.mlir").write_text(GRAPH_SEEDS["gemm_f16"])
    (work / "bad.mlir").write_text("func.func @f(%a: tensor<4xf16>) {\n  graph.nope\n}\n")
    (work / "mlp.onnx").write_bytes(onnx_model)
    (work / "bad.onnx").write_bytes(onnx_model[:40])
    shutil.copytree(base_package, work / "base.pkg")


def judge_output(option: str, kind: str, where: str, dst: str, outcome: Outcome, work: Path,
                 before_outside: dict, outside: Path, before_work: dict) -> Outcome:
    """``wrote-outside`` when anything outside `work` changed; ``left-behind`` when a failed
    run left an output or a temporary file; ``not-written`` when a run that said it succeeded
    has no output of its kind at the destination."""
    after_outside = _snapshot(outside)
    if where == "parent is a symlink outside":  # the path the user named: its output, no more
        named = str(outside / "victim-dir" / "out")
        after_outside = {k: v for k, v in after_outside.items()
                         if k != named and not k.startswith(named + "/")}
    if after_outside != before_outside:
        changed = sorted(set(after_outside.items()) ^ set(before_outside.items()))
        return Outcome("wrote-outside", f"{option} to {where}: the outside directory changed: "
                       f"{[k for k, _ in changed][:3]}")
    if outcome.kind in ("traceback", "hang", "aborted"):
        return outcome
    now = _snapshot(work)
    stray = [p for p in now if re.search(r"/\.[^/]*\.tmp(/|$)", p)]
    if stray:
        return Outcome("left-behind", f"temporary files {stray[:3]}")
    if outcome.kind == "accepted":
        path = Path(dst)
        ok = path.is_file() if kind == "file" else path.is_dir()
        if path.is_symlink() or not ok:
            return Outcome("not-written", f"{option} to {where}: exit 0, but {dst} is not a "
                           f"{kind}")
        return outcome
    new = sorted(set(now) - set(before_work))
    changed = [p for p in before_work if p in now and now[p] != before_work[p]]
    if new or changed:
        return Outcome("left-behind", f"{option} to {where} failed but left {new[:3]} "
                       f"changed {changed[:3]}")
    return outcome


def run_output_corpus(tally: Tally, timeout: float, workdir: Path,
                      options: dict | None = None) -> None:
    """Each of `options` (default `OUTPUT_OPTIONS`) to each of `DESTINATIONS`."""
    workdir.mkdir(parents=True, exist_ok=True)
    base = build_base_package(workdir, "gemm_f16", 2)
    onnx_model = onnx_seed_models()["mlp"].SerializeToString()
    for option, (kind, command) in (OUTPUT_OPTIONS if options is None else options).items():
        for n, where in enumerate(DESTINATIONS):
            root = workdir / f"out-{abs(hash(option)) % 10**8}-{n}"
            work, outside = root / "work", root / "outside"
            output_fixtures(work, base, onnx_model)
            (outside / "victim-dir").mkdir(parents=True)
            (outside / "victim.txt").write_text("the symlink's target\n")
            (outside / "victim-dir" / "kept.txt").write_text("kept\n")
            dst = output_destination(kind, where, work, outside)
            before_outside, before_work = _snapshot(outside), _snapshot(work)
            outcome = classify(*guarded(command(work, dst), timeout))
            outcome = judge_output(option, kind, where, dst, outcome, work, before_outside,
                                   outside, before_work)
            tally.add(f"outputs: {option}", outcome, f"{option} to {where} ({dst})")
            shutil.rmtree(root, ignore_errors=True)


# ---- hand-built resource bombs (--bombs): each in its own process, its time and peak RSS -----

BOMB_SECONDS, BOMB_BYTES = 10.0, 1 << 30  # every bomb is refused within these
# CPU seconds (user + system) are the budget: on the shared 2-core machine a tool's start alone
# can take 6 s of wall time under load. A bomb still running after BOMB_WALL_SECONDS of wall
# time is killed: a hang.
BOMB_WALL_SECONDS = 120.0


def repeat_bomb(count: int, shape: str = "16x16") -> str:
    t = f"tensor<{shape}xf16>"
    return (f"func.func @r(%x: {t}, %w: {t}) -> {t} {{\n"
            f"  %r = graph.repeat {count} carried(%c = %x : {t}) invariant(%v = %w : {t}) {{\n"
            f"    %y = graph.gemm %c, %v : ({t}, {t}) -> {t}\n    graph.yield %y : {t}\n"
            f"  }} -> {t}\n  func.return %r : {t}\n}}\n")


def many_adds(count: int) -> str:
    t = "tensor<16384x8192xf16>"
    lines = [f"func.func @m(%x0: {t}) -> {t} {{"]
    lines += [f"  %x{i + 1} = graph.add %x{i}, %x{i} : ({t}, {t}) -> {t}" for i in range(count)]
    return "\n".join([*lines, f"  func.return %x{count} : {t}", "}", ""])


GEMM_TEXT = ("func.func @gemm(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) -> tensor<64x64xf16> {\n"
             "  %c = graph.gemm %a, %b : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16>\n"
             "  func.return %c : tensor<64x64xf16>\n}\n")


def loop_bomb_package(base: Path, target: Path, *counts: int) -> Path:
    """`base` with its program wrapped in loops of `counts` (members renumbered, strides 0)."""
    shutil.copytree(base, target)
    meta = json.loads((target / "metadata.json").read_text())
    for count in counts:
        meta["steps"] = [{"kind": "loop", "count": count, "length": len(meta["steps"]),
                          "provenance": ""}, *meta["steps"]]
    (target / "metadata.json").write_text(json.dumps(meta))
    with np.load(target / "program.npz", allow_pickle=False) as archive:
        arrays = {re.sub(r"^step(\d+)_", lambda m: f"step{int(m[1]) + len(counts)}_", k): archive[k]
                  for k in archive.files}
    for name, pointers in list(arrays.items()):
        if match := re.fullmatch(r"step(\d+)_pointers", name):
            arrays[f"step{match[1]}_pointer_strides"] = np.zeros((len(counts), pointers.shape[1]),
                                                                 np.int64)
    np.savez_compressed(target / "program.npz", **arrays)
    return target


def npz_claiming(path: Path, name: str, claimed: int) -> Path:
    """An --inputs archive whose member's zip header claims `claimed` bytes (a small stored
    member whose sizes are patched: the reader must refuse it from the directory)."""
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{name}.npy", b"\x93NUMPY" + b"\0" * 64)
    data = bytearray(path.read_bytes())
    central = data.rfind(b"PK\x01\x02")
    data[central + 24:central + 28] = min(claimed, 0xFFFFFFFF).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    return path


def package_with_source(base: Path, target: Path, source: str) -> Path:
    shutil.copytree(base, target)
    (target / "source.mlir").write_text(source)
    return target


def npy_claiming(path: Path) -> Path:
    """A .npy file of a few bytes whose header claims 10^6 x 10^6 float16."""
    header = "{'descr': '<f2', 'fortran_order': False, 'shape': (1000000, 1000000), }"
    header += " " * (63 - len(header) % 64) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
                     + b"\0" * 64)
    return path


def onnx_identical(path: Path, count: int) -> Path:
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Gelu", [f"x{i}"], [f"x{i + 1}"], domain="") for i in range(count)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info(f"x{count}", TensorProto.FLOAT, [4, 8])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), str(path))
    return path


def bomb_cases(workdir: Path) -> list[tuple[str, list[str]]]:
    """(what, tool command) of every bomb; each must end in a diagnostic, in time and memory."""
    def write(name: str, text: str) -> str:
        (workdir / name).write_text(text)
        return str(workdir / name)

    gemm = write("gemm.mlir", GEMM_TEXT)
    base = workdir / "base"
    status, output, _ = guarded(ipu_run([gemm, "--tiles", "4", "--package", str(base), "--quiet"]), 120)
    assert status == 0, output
    repeat = write("repeat.mlir", repeat_bomb(1_000_000_000))
    fifo = workdir / "fifo"
    os.mkfifo(fifo)
    return [
        ("package: loops of 2**20 x 2**20 around a GEMM", ["ipu-run", str(loop_bomb_package(
            base, workdir / "loops", 1 << 20, 1 << 20))]),
        ("package: a loop of 2**20 (hours of model time)", ["ipu-run", str(loop_bomb_package(
            base, workdir / "loop", 1 << 20))]),
        ("graph.repeat 1e9, reference", ["ipu-run", repeat, "--reference"]),
        ("graph.repeat 1e9, compile and run", ["ipu-run", repeat, "--tiles", "2"]),
        ("graph.repeat 1e9, ipu-opt -t ipu-rows", ["ipu-opt", repeat, "-p", "ipu-pipeline{tiles=2}",
                                                   "-t", "ipu-rows"]),
        ("dense splat of 1e9 elements", ["ipu-opt", write("splat.mlir", "func.func @f() attributes "
                                         "{x = dense<1> : tensor<1000000000xi8>} {\n  func.return\n}\n")]),
        ("modules nested 150 deep", ["ipu-opt", write("deep.mlir", "builtin.module {\n" * 150
                                                      + "}\n" * 150)]),
        ("attribute nested 5,000 deep", ["ipu-opt", write("deepattr.mlir", "func.func @f() attributes "
                                         "{x = " + "[" * 5000 + "]" * 5000 + "} {\n  func.return\n}\n")]),
        ("40 arguments of 256 MiB (sum of sizes)", ["ipu-run", write("args.mlir", "func.func @g(" + ", ".join(
            f"%a{i}: tensor<8192x16384xf16>" for i in range(40)) + ") -> tensor<8192x16384xf16> {\n"
            "  func.return %a0 : tensor<8192x16384xf16>\n}\n"), "--reference"]),
        ("20 adds of 2**27 elements (reference bytes)", ["ipu-run", write("adds.mlir", many_adds(20)),
                                                         "--reference"]),
        ("repeat 200,000 of a 128^3 GEMM (reference work)", ["ipu-run", write(
            "work.mlir", repeat_bomb(200_000, "128x128")), "--reference"]),
        ("--input a=/dev/zero", ["ipu-run", gemm, "--reference", "--input", "a=/dev/zero"]),
        ("--input a=FIFO", ["ipu-run", gemm, "--reference", "--input", f"a={fifo}"]),
        ("--inputs member claiming 4 GiB", ["ipu-run", gemm, "--reference", "--inputs",
                                            str(npz_claiming(workdir / "big.npz", "a", 1 << 32))]),
        ("package: source.mlir holds graph.repeat 1e9", ["ipu-run", str(package_with_source(
            base, workdir / "repeat-source", repeat_bomb(1_000_000_000, "64x64").replace(
                "@r(", "@gemm(")))]),
        ("--input a=.npy whose header claims 10^12 elements", ["ipu-run", gemm, "--reference",
                                                               "--input", f"a={npy_claiming(workdir / 'claims.npy')}"]),
        ("ONNX: 2,500 identical nodes, --repeat-layers (imported)", ["ipu-import", str(onnx_identical(
            workdir / "gelus.onnx", 2500)), "--repeat-layers", "-o", str(workdir / "gelus.mlir")]),
    ]


@dataclass
class BombOutcome:
    what: str
    status: int | None  # None: killed at the time limit
    seconds: float  # wall time
    peak_bytes: int
    output: str
    cpu_seconds: float = 0.0  # user + system: the budget (BOMB_SECONDS)

    @property
    def over_budget(self) -> bool:
        return self.cpu_seconds > BOMB_SECONDS or self.peak_bytes > BOMB_BYTES

    @property
    def refused(self) -> bool:
        """A diagnostic; for a case marked "(imported)", a clean import in bounds."""
        expected = (0,) if self.what.endswith("(imported)") else (1, 2)
        return self.status in expected and "Traceback" not in self.output


# Runs one command and reports its exit status and wait4's ru_maxrss on stdout. Linux keeps a
# process's ru_maxrss across exec, so a child forked from a large parent (a pytest worker that
# has run many tests) would report the parent's size: this small process is the fork parent.
_MEASURE = """
import json, os, subprocess, sys, time
deadline = time.monotonic() + float(sys.argv[1])
with open(sys.argv[2], "wb") as log:
    process = subprocess.Popen(sys.argv[3:], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    status, usage = None, None
    while time.monotonic() < deadline:
        pid, code, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            status = os.waitstatus_to_exitcode(code)
            break
        time.sleep(0.02)
    else:
        process.kill()
        _, _, usage = os.wait4(process.pid, 0)
    process.returncode = -1  # reaped here, not by Popen
print(json.dumps([status, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime]))
"""


def run_bomb(what: str, command: list[str], seconds: float = BOMB_WALL_SECONDS) -> BombOutcome:
    """`command` (a tool of this environment) in its own process: exit status, wall time and
    peak RSS (wait4's ru_maxrss, measured from a small parent: `_MEASURE`)."""
    import json
    import subprocess
    import sys

    tool = str(Path(sys.executable).parent / command[0])
    started = time.perf_counter()
    with tempfile.NamedTemporaryFile() as log:
        measured = subprocess.run([sys.executable, "-c", _MEASURE, str(seconds), log.name, tool,
                                   *command[1:]], capture_output=True, text=True, check=True)
        status, peak, cpu = json.loads(measured.stdout)
        elapsed = time.perf_counter() - started
        output = Path(log.name).read_bytes().decode(errors="replace")
    return BombOutcome(what, status, elapsed, peak, output, cpu)


def run_bombs(workdir: Path) -> list[BombOutcome]:
    return [run_bomb(what, command) for what, command in bomb_cases(workdir)]


def bomb_report(outcomes: list[BombOutcome]) -> str:
    lines = [f"{'bomb':<50}{'status':>7}{'wall s':>8}{'CPU s':>7}{'peak MiB':>10}  verdict"]
    for o in outcomes:
        verdict = "refused" if o.refused else ("HANG" if o.status is None else "NOT REFUSED")
        if o.refused and o.over_budget:
            verdict = "refused, over budget"
        lines_out = o.output.strip().splitlines()
        said = next((line for line in lines_out if "error" in line or "note" in line),
                    lines_out[-1] if lines_out else "")
        last = said.strip()[:90]
        lines.append(f"{o.what:<50}{o.status!s:>7}{o.seconds:>8.2f}{o.cpu_seconds:>7.2f}"
                     f"{o.peak_bytes / 2**20:>10.0f}  {verdict}: {last}")
    worst_cpu = max(outcomes, key=lambda o: o.cpu_seconds)
    worst_wall = max(outcomes, key=lambda o: o.seconds)
    worst_rss = max(outcomes, key=lambda o: o.peak_bytes)
    lines.append(f"worst CPU time {worst_cpu.cpu_seconds:.2f} s ({worst_cpu.what}); worst wall "
                 f"time {worst_wall.seconds:.2f} s ({worst_wall.what}); peak RSS "
                 f"{worst_rss.peak_bytes / 2**20:.0f} MiB ({worst_rss.what})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ir", type=int, default=600, help="mutated IR files")
    parser.add_argument("--packages", type=int, default=600, help="corrupted packages")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per tool run")
    parser.add_argument("--show", choices=OUTCOMES, action="append", default=[],
                        help="also list the cases of this outcome")
    parser.add_argument("--bombs", action="store_true",
                        help="also run the hand-built resource bombs, each in its own process")
    parser.add_argument("--onnx", type=int, default=0, help="malformed ONNX models")
    parser.add_argument("--input-files", type=int, default=0,
                        help="mutated --input / --inputs files")
    parser.add_argument("--outputs", action="store_true",
                        help="also every output option to every kind of destination")
    args = parser.parse_args()
    if args.bombs:
        with tempfile.TemporaryDirectory(prefix="ipu-bombs-") as temp:
            outcomes = run_bombs(Path(temp))
        print(bomb_report(outcomes))
        bad = [o for o in outcomes if not o.refused or o.cpu_seconds > BOMB_SECONDS
               or o.peak_bytes > BOMB_BYTES]
        print(f"{len(bad)} bomb(s) not refused within {BOMB_SECONDS:.0f} CPU s and "
              f"{BOMB_BYTES >> 20} MiB")
    tally = run_corpus(args.ir, args.packages, args.seed, args.timeout, onnx=args.onnx,
                       outputs=args.outputs, input_files=args.input_files)
    print(tally.table())
    print(f"{len(tally.bad)} bad outcome(s) in {tally.seconds:.0f} s")
    for line in tally.bad[:50]:
        print(line)
    for kind in args.show:
        print(f"--- {kind}")
        print("\n".join(tally.cases.get(kind, [])))


if __name__ == "__main__":
    main()
