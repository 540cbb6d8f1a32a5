"""What `ipu-run FILE.mlir` (`tools/ipu_run.py`) and `ipu-run DIR` (`tools/run_package.py`)
share: exit codes, reading and parsing the source, diagnostic text, inputs and outputs, the
check against the reference and the report of a run (see `tools/ipu_run.py` for the
command line these serve).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import ParseError

from tools.registry import make_context
from tools.source_locations import located_message, parse_located_module, verify_with_locations
from tools.usage import UsageError

EXIT_PASS, EXIT_FAIL, EXIT_DIAGNOSTIC = 0, 1, 2

# Largest accepted error relative to the reference's largest magnitude, by result type.
# FP16 results are rounded once per accumulating phase; FP32 only by summation order.
RELATIVE_TOLERANCE = {"f32": 1e-4, "f16": 1e-2, "f8E4M3FNUZ": 1.5e-1}


def read_source(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"{path} is not UTF-8 text: {error}") from None


def parse_module(path: Path, text: str | None = None) -> ModuleOp:
    """Parse (the file's text unless given) and verify; verifier errors carry the failing
    op's file:line:col. IR from the MLIR world (linalg on tensors) is first rewritten to graph
    ops by `convert-linalg-to-graph`, whose diagnostics are located too."""
    if text is None:
        text = read_source(path)
    module = parse_located_module(make_context(), text, str(path))
    verify_with_locations(module)
    if any(op.dialect_name() in ("linalg", "tensor") for op in module.walk()):
        from passes.convert_linalg_to_graph import ConvertLinalgToGraphPass

        ConvertLinalgToGraphPass().apply(make_context(), module)
        verify_with_locations(module)
    return module


LOCATED = re.compile(r"[^\n]*?:(\d+):(\d+): error: ")  # an MLIR-style `file:line:col: error: `


def with_source_line(message: str, text: str, width: int = 1) -> str:
    """Append the source line a `file:line:col: error:` message points at, MLIR-style, with
    `width` carets (clipped to the line) under the text at fault."""
    match = LOCATED.match(message)
    lines = text.splitlines()
    if match is None or not 1 <= int(match.group(1)) <= len(lines):
        return message
    line, column = lines[int(match.group(1)) - 1], int(match.group(2))
    carets = "^" * max(1, min(width, len(line) - column + 1))
    return f"{message}\n{line}\n{' ' * (column - 1)}{carets}"


def parse_error_text(error: ParseError, text: str) -> str:
    """`file:line:col: error: <message>`, the source line and carets under the span: xDSL's own
    text puts the position alone on the first line and the message under the carets."""
    location = error.span.get_location()
    message = f"{location.file}:{location.line}:{location.col}: error: {error.msg.strip()}"
    return with_source_line(message, text, len(error.span))


def diagnostic_text(error: Exception, text: str) -> str:
    """One diagnostic for stderr: located when the error names an op, else `ipu-run: error:`."""
    from interpreters.graph import InterpreterError

    if isinstance(error, ParseError):
        return parse_error_text(error, text)
    message = str(error)
    if isinstance(error, InterpreterError) and error.op is not None:
        message = located_message(error.op, message)
    return shown(message, text, "ipu-run: error")


def shown(message: str, text: str, prefix: str) -> str:
    """A located message with its source line under it; any other after `prefix: `."""
    return with_source_line(message, text) if LOCATED.match(message) else f"{prefix}: {message}"


def argument_types(func: FuncOp) -> list[TensorType]:
    """The argument types, which `check_runnable` has checked to be graph tensors."""
    types = []
    for value_type in func.function_type.inputs.data:
        assert isinstance(value_type, TensorType)
        types.append(value_type)
    return types


def random_inputs(func: FuncOp, seed: int) -> list[np.ndarray]:
    """Uniform values in [-1, 1), rounded to each argument's element type; an index
    argument's uniform integers in [0, rows) of the tables it gathers from."""
    from interpreters.graph import index_bound, storage_dtype
    from ipu_dialects.graph import is_index_type

    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    rng = np.random.default_rng(seed)
    arrays = []
    for arg, arg_type in zip(func.body.block.args, argument_types(func)):
        if is_index_type(arg_type):
            bound = index_bound(func, arg)
            arrays.append(rng.integers(0, bound, size=tuple(arg_type.get_shape()), dtype=np.int32))
            continue
        values = rng.uniform(-1.0, 1.0, size=tuple(arg_type.get_shape()))
        arrays.append(values.astype(storage_dtype(arg_type)))
    return arrays


def load_inputs(func: FuncOp, names: list[str], given: list[str], seed: int,
                archive: str | Sequence[str] | None = None) -> list[np.ndarray]:
    """Random inputs, replaced by the arrays of `--inputs FILE.npz` (one file or several,
    merged: an argument in two of them is a usage error, as one given twice) and `--input
    NAME=PATH`: names are checked first, then each file's header against its argument, then
    its data (`tools/input_files.py`)."""
    from interpreters.graph import storage_dtype
    from tools.input_files import archive_members, npy_reader

    arrays = random_inputs(func, seed)
    seen: dict[str, str] = {}  # argument name -> the option that gave it
    archives = [archive] if isinstance(archive, str) else list(archive or ())
    specs = [spec for path in archives for spec in archive_members(path)]
    for spec in given:
        if "=" not in spec:
            raise UsageError(f"--input expects NAME=PATH.npy, got '{spec}'")
        name, path = spec.split("=", 1)
        specs.append((name, f"--input {name}", npy_reader(path, f"--input {name}")))
    for name, label, _ in specs:
        if name not in names:
            raise UsageError(f"{label}: the function has no argument '{name}' "
                             f"(arguments: {', '.join(names)})")
        if name in seen:
            raise UsageError(f"{label}: given more than once (by {seen[name]})")
        seen[name] = label
    types = argument_types(func)
    for name, _, read in specs:
        index = names.index(name)
        value = read(arrays[index].shape, np.dtype(storage_dtype(types[index])))
        arrays[index] = stored_input(value, types[index])
    return arrays


def stored_input(values: np.ndarray, arg_type: TensorType) -> np.ndarray:
    """An --input array (the tensor's values) as the interpreter's storage array; FP8 values
    are divided by the type's 2**scale and rounded (saturating) to the stored q."""
    from interpreters.graph import to_storage

    return to_storage(np.asarray(values, np.float64), arg_type)


def output_directory(option: str, path: str | None) -> Path | None:
    """The directory an option writes to, checked now so that a bad path is a usage error
    before anything is compiled or run; created only when its files are written
    (`tools/output_files.py`)."""
    from tools.output_files import check_output_directory

    return check_output_directory(option, path)


def output_names(func: FuncOp) -> list[str]:
    return [f"result{i}" for i in range(len(func.function_type.outputs.data))]


def save_outputs(directory: Path, names: list[str], arrays: list[np.ndarray], types) -> None:
    """Each result as DIR/NAME.npy; FP8 results as float32 values (see the module docstring)."""
    from interpreters.graph import FP8, from_storage
    from tools.output_files import staged_directory

    with staged_directory(directory) as staging:  # renamed into place, never followed
        for name, array, result_type in zip(names, arrays, types, strict=True):
            if array.dtype == FP8:  # np.save would write raw bytes ('V1') that nothing reads back
                array = from_storage(array, result_type).astype(np.float32)
            np.save(staging / f"{name}.npy", array)


@dataclass
class Comparison:
    passed: bool
    max_abs: float
    max_rel: float
    note: str = ""  # why a FAIL may be the precision, not the compiler


OVERFLOW_NOTE = (
    "the device result overflows to inf where the reference is finite: with gemm-partials=f16 "
    "an FP16 GEMM stores its partial sums in f16 between 64-wide blocks of K, while the "
    "reference sums in float64"
)


def compare(results: list[np.ndarray], references: list[np.ndarray], types,
            spreads: list[np.ndarray] | None = None) -> Comparison:
    """Errors over the elements both sides hold as finite numbers, which must be within the
    precision's tolerance of the reference's largest magnitude. A non-finite element (an
    FP16 overflow, a NaN) passes only where the reference has the same one (the same
    infinity, NaN where NaN), so a result that overflows everywhere exactly as the
    reference does passes.

    FP8 results are also checked element by element when `spreads` are given
    (`interpreters.graph.rounding_spread`, one array per result): every element within
    twice its spread of the reference (`FP8_SPREAD_FACTOR`), so a small element far off
    fails even when the largest element sets a generous bound."""
    passed, max_abs, max_rel = True, 0.0, 0.0
    for index, (got, want, result_type) in enumerate(zip(results, references, types,
                                                         strict=True)):
        got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if got64.shape != want64.shape:
            return Comparison(False, math.inf, math.inf)
        finite = np.isfinite(got64) & np.isfinite(want64)
        same = (got64 == want64) | (np.isnan(got64) & np.isnan(want64))
        if not np.all(finite | same):
            overflow = np.isinf(got64) & np.isfinite(want64)
            f16 = str(result_type.element_type) == "f16"
            return Comparison(False, math.inf, math.inf, OVERFLOW_NOTE if f16 and overflow.any() else "")
        error = np.abs(got64[finite] - want64[finite])
        largest = float(np.max(error, initial=0.0))
        scale = max(float(np.max(np.abs(want64[finite]), initial=0.0)), 1e-30)
        element_type = str(result_type.element_type)
        tolerance = RELATIVE_TOLERANCE.get(element_type, 1e-4)
        max_abs, max_rel = max(max_abs, largest), max(max_rel, largest / scale)
        passed &= largest <= tolerance * scale
        if spreads is not None and element_type == FP8_ELEMENT:
            passed &= within_spread(error, np.asarray(spreads[index])[finite])
    return Comparison(passed, max_abs, max_rel)


FP8_ELEMENT = "f8E4M3FNUZ"
# An element may be off by twice the reference's rounding spread: the spread perturbs every
# rounding by a whole step and every GEMM sum by its error bound, a device's differences are
# a few roundings that land on the other side, and the factor covers the perturbations that
# happen to cancel in the spread's few runs.
FP8_SPREAD_FACTOR = 2.0


def fp8_spreads(module: ModuleOp, arrays: list[np.ndarray],
                function: str | None = None) -> list[np.ndarray] | None:
    """The rounding spreads of the function's results when one is FP8 (the FP8 check's
    element bounds), else None: no other check uses them."""
    from interpreters.graph import find_function, rounding_spread

    outputs = find_function(module, function).function_type.outputs.data
    if not any(isinstance(t, TensorType) and str(t.element_type) == FP8_ELEMENT for t in outputs):
        return None
    return rounding_spread(module, arrays, function)


def within_spread(error: np.ndarray, spread: np.ndarray) -> bool:
    """Is every element's error within `FP8_SPREAD_FACTOR` times its rounding spread?"""
    return bool(np.all(error <= FP8_SPREAD_FACTOR * spread))


def load_expected(path: Path, names: list[str], types) -> list[np.ndarray]:
    """`--expect FILE.npz`: a reference set saved elsewhere (torch's outputs, say), one array
    per result, named like `--save-outputs` names them (result0, result1, ...); a function of
    one result also takes a file of one array under any name."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except (OSError, ValueError) as error:
        raise UsageError(f"--expect: cannot read '{path}' as an .npz archive: {error}") from None
    if len(names) == 1 and len(arrays) == 1:
        chosen = list(arrays.values())
    else:
        missing = [n for n in names if n not in arrays]
        if missing:
            raise UsageError(f"--expect: '{path}' holds {', '.join(sorted(arrays)) or 'nothing'}; "
                             f"it needs one array per result, named {', '.join(names)}")
        chosen = [arrays[n] for n in names]
    for name, array, result_type in zip(names, chosen, types, strict=True):
        shape = tuple(result_type.get_shape())
        if array.shape != shape or not np.issubdtype(array.dtype, np.number):
            raise UsageError(f"--expect: '{path}': {name} is {array.dtype} {list(array.shape)}; "
                             f"the result is {list(shape)} floating point")
    return chosen


def expect_line(check: Comparison, path: Path, types) -> str:
    """The `--expect` verdict with the tolerance it was held to."""
    tolerances = ", ".join(sorted({f"{t.element_type} {RELATIVE_TOLERANCE.get(str(t.element_type), 1e-4):g}"
                                   for t in types}))
    return (f"expect ({path}): {'PASS' if check.passed else 'FAIL'}  max abs error: "
            f"{check.max_abs:.3g}  max rel error: {check.max_rel:.3g}  (tolerance: {tolerances} "
            "of the largest expected magnitude)")


def run_report(check_passed: bool, check: Comparison, cycles: int, package) -> dict:
    """The outcome of a run, as `--json` prints it (keys shared by .mlir and package runs)."""
    return {"check": "PASS" if check_passed else "FAIL", "max_abs_error": check.max_abs,
            "max_rel_error": check.max_rel, "modeled_cycles": int(cycles),
            "tiles_used": int(package.metadata.get("tiles_used", package.tiles))}


def print_report(report: dict, tiles: int) -> None:
    print(f"check: {report['check']}")
    print(f"max abs error: {report['max_abs_error']:.3g}  "
          f"max rel error: {report['max_rel_error']:.3g}")
    print(f"modeled cycles: {report['modeled_cycles']}")
    print(f"tiles used: {report['tiles_used']} of {tiles}")
