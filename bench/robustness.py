"""Robustness corpus: mutated IR and corrupted packages through every tool that reads them.

Seeded and reproducible. Every case runs in-process (the tools' own entry points, with their
output captured) under a wall-clock limit, and ends in one of:

- ``accepted``: exit 0 (IR that is still valid after the mutation; a package run that PASSes);
- ``diagnostic``: a clean error, exit 1 or 2 (for the package API: `PackageError` or
  `ModelError`);
- ``check-fail``: ipu-run ran to the end and its NumPy reference check FAILed (exit 1): the
  wrong answer is reported, not hidden;
- ``wrong-silent`` (package API only): `Package.load` + `run_package` finished without an
  error and the outputs differ from the reference;
- ``aborted``: click's bare "Aborted." (an EOFError or KeyboardInterrupt escaped the tool);
- ``traceback``: any other exception escaped the tool;
- ``hang``: no answer within the time limit.

Goal: 0 traceback, 0 hang, 0 aborted, and 0 wrong-silent for package runs through ipu-run
(`ipu-run DIR` checks against the reference, so a wrong answer there is ``check-fail``).
The `wrong-silent` count of the bare API says how many corruptions the schema cannot see
(a different but well-formed kernel symbol or address): only a reference check catches those.

``--bombs`` also runs hand-built resource bombs (loops of a package, repeat counts, dense
splats, sums of argument sizes, reference work and memory, nesting depth, /dev/zero, a FIFO, an
--inputs member claiming 4 GiB, 2,500 identical ONNX nodes under --repeat-layers), each in its
own process, and prints its exit status, wall time and peak RSS: each must be refused (a
diagnostic) within `BOMB_SECONDS` and `BOMB_BYTES`.

Usage: python bench/robustness.py [--ir 600] [--packages 600] [--seed 0] [--timeout 30] [--bombs]
(test/pytest/test_robustness.py runs a smaller corpus of the same cases).
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

import numpy as np

OUTCOMES = ("accepted", "diagnostic", "check-fail", "wrong-silent", "aborted", "traceback",
            "hang")


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


def tile_seed() -> str:
    """A seed at the tile and exchange levels: the scheduled output of the f16 GEMM."""
    from xdsl.printer import Printer

    from passes.ipu_pipeline import IpuPipelinePass
    from tools.ipu_run import make_context
    from tools.source_locations import parse_located_module

    module = parse_located_module(make_context(), GRAPH_SEEDS["gemm_f16"], "seed")
    IpuPipelinePass(tiles=2).apply(make_context(), module)
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue() + "\n"


def mutate_text(text: str, rng: random.Random) -> str:
    tokens = TOKEN.findall(text)
    solid = [i for i, t in enumerate(tokens) if not t.isspace()]
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        choice = rng.randrange(9)
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
    level: str  # graph or tile
    text: str


def ir_cases(count: int, seed: int) -> list[IrCase]:
    rng = random.Random(seed)
    seeds = [(name, "graph", text) for name, text in GRAPH_SEEDS.items()]
    seeds.append(("gemm_f16_scheduled", "tile", tile_seed()))
    cases = []
    for n in range(count):
        name, level, text = seeds[n % len(seeds)]
        cases.append(IrCase(name, level, mutate_text(text, rng)))
    return cases


def ir_runs(case: IrCase, path: Path) -> list[tuple[str, Callable[[], int]]]:
    """(tool label, entry point) for one mutated IR file."""
    runs = [("ipu-opt", ipu_opt([str(path)]))]
    if case.level == "graph":
        runs += [("ipu-opt -p ipu-pipeline", ipu_opt([str(path), "-p", "ipu-pipeline{tiles=4}"])),
                 ("ipu-run", ipu_run([str(path), "--tiles", "4"]))]
    return runs


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
        from device.package import Package, PackageError
        from tools.ipu_run import compare

        try:
            package = Package.load(directory)
            outcome = run_package(package, dict(zip(reference.names, reference.arrays, strict=True)))
        except (PackageError, ModelError) as error:
            print(f"error: {error}")
            return 2
        results = list(outcome.outputs.values())
        if len(results) != len(reference.expected):
            return 3
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
        if outcome.kind in ("traceback", "hang", "aborted") or (
                outcome.kind == "wrong-silent" and tool != "Package.load+run_package"):
            self.bad.append(f"[{tool}] {case}: {outcome.kind} {outcome.detail}")

    def table(self) -> str:
        lines = [f"{'tool':<28}" + "".join(f"{k:>13}" for k in OUTCOMES) + f"{'total':>8}"]
        for tool, counter in self.counts.items():
            lines.append(f"{tool:<28}" + "".join(f"{counter[k]:>13}" for k in OUTCOMES)
                         + f"{sum(counter.values()):>8}")
        return "\n".join(lines)


def run_case(tally: Tally, tool: str, call: Callable[[], int], case: str, timeout: float) -> None:
    status, output, escaped = guarded(call, timeout)
    outcome = classify(status, output, escaped)
    if tool == "Package.load+run_package" and status == 3 and escaped is None:
        outcome = Outcome("wrong-silent")
    tally.add(tool, outcome, case)


def run_ir_corpus(tally: Tally, count: int, seed: int, timeout: float, workdir: Path) -> None:
    for n, case in enumerate(ir_cases(count, seed)):
        path = workdir / f"ir{n}.mlir"
        path.write_text(case.text, errors="surrogateescape")
        for tool, call in ir_runs(case, path):
            run_case(tally, tool, call, f"ir case {n} (seed {seed}, from {case.seed_name})", timeout)


def run_package_corpus(tally: Tally, count: int, seed: int, timeout: float, workdir: Path,
                       big: int = 50_000_000) -> None:
    rng = random.Random(seed)
    bases = [build_base_package(workdir, "gemm_f16", 4), build_base_package(workdir, "gemm_f32_batched", 2)]
    references = [reference_of(base) for base in bases]
    for n in range(count):
        which = n % len(bases)
        target = workdir / f"pkg{n}"
        what = corrupt_package(bases[which], target, rng, big)
        for tool, call in package_runs(target, references[which], rng.randrange(4)):
            run_case(tally, tool, call, f"package case {n} (seed {seed}): {what}", timeout)
        shutil.rmtree(target, ignore_errors=True)


def run_corpus(ir: int, packages: int, seed: int, timeout: float, big: int = 50_000_000) -> Tally:
    tally = Tally({}, [])
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ipu-robustness-") as temp:
        run_ir_corpus(tally, ir, seed, timeout, Path(temp))
        run_package_corpus(tally, packages, seed, timeout, Path(temp), big)
    tally.seconds = time.perf_counter() - started
    return tally



# ---- hand-built resource bombs (--bombs): each in its own process, its time and peak RSS -----

BOMB_SECONDS, BOMB_BYTES = 10.0, 1 << 30  # every bomb is refused within these


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
        ("ONNX: 2,500 identical nodes, --repeat-layers (imported)", ["ipu-import", str(onnx_identical(
            workdir / "gelus.onnx", 2500)), "--repeat-layers", "-o", str(workdir / "gelus.mlir")]),
    ]


@dataclass
class BombOutcome:
    what: str
    status: int | None  # None: killed at the time limit
    seconds: float
    peak_bytes: int
    output: str

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
print(json.dumps([status, usage.ru_maxrss * 1024]))
"""


def run_bomb(what: str, command: list[str], seconds: float = BOMB_SECONDS) -> BombOutcome:
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
        status, peak = json.loads(measured.stdout)
        elapsed = time.perf_counter() - started
        output = Path(log.name).read_bytes().decode(errors="replace")
    return BombOutcome(what, status, elapsed, peak, output)


def run_bombs(workdir: Path) -> list[BombOutcome]:
    return [run_bomb(what, command) for what, command in bomb_cases(workdir)]


def bomb_report(outcomes: list[BombOutcome]) -> str:
    lines = [f"{'bomb':<50}{'status':>7}{'seconds':>9}{'peak MiB':>10}  verdict"]
    for o in outcomes:
        verdict = "refused" if o.refused else ("HANG" if o.status is None else "NOT REFUSED")
        if o.refused and (o.seconds > BOMB_SECONDS or o.peak_bytes > BOMB_BYTES):
            verdict = "refused, over budget"
        lines_out = o.output.strip().splitlines()
        said = next((line for line in lines_out if "error" in line or "note" in line),
                    lines_out[-1] if lines_out else "")
        last = said.strip()[:90]
        lines.append(f"{o.what:<50}{o.status!s:>7}{o.seconds:>9.2f}{o.peak_bytes / 2**20:>10.0f}"
                     f"  {verdict}: {last}")
    worst_time = max(outcomes, key=lambda o: o.seconds)
    worst_rss = max(outcomes, key=lambda o: o.peak_bytes)
    lines.append(f"worst time {worst_time.seconds:.2f} s ({worst_time.what}); peak RSS "
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
    args = parser.parse_args()
    if args.bombs:
        with tempfile.TemporaryDirectory(prefix="ipu-bombs-") as temp:
            outcomes = run_bombs(Path(temp))
        print(bomb_report(outcomes))
        bad = [o for o in outcomes if not o.refused or o.seconds > BOMB_SECONDS
               or o.peak_bytes > BOMB_BYTES]
        print(f"{len(bad)} bomb(s) not refused within {BOMB_SECONDS:.0f} s and "
              f"{BOMB_BYTES >> 20} MiB")
    tally = run_corpus(args.ir, args.packages, args.seed, args.timeout)
    print(tally.table())
    print(f"{len(tally.bad)} bad outcome(s) in {tally.seconds:.0f} s")
    for line in tally.bad[:50]:
        print(line)
    for kind in args.show:
        print(f"--- {kind}")
        print("\n".join(tally.cases.get(kind, [])))


if __name__ == "__main__":
    main()
