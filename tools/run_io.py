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
    """Uniform values in [-1, 1), rounded to each argument's element type."""
    from interpreters.graph import storage_dtype

    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    rng = np.random.default_rng(seed)
    arrays = []
    for arg_type in argument_types(func):
        values = rng.uniform(-1.0, 1.0, size=tuple(arg_type.get_shape()))
        arrays.append(values.astype(storage_dtype(arg_type)))
    return arrays


def archive_inputs(path: str | None) -> list[tuple[str, str, str, np.ndarray | None]]:
    """`--inputs FILE.npz`: (argument name, how messages name it, origin, array) per array."""
    if path is None:
        return []
    try:
        archive = np.load(path)
    except (OSError, ValueError) as error:  # missing, a directory, not numpy's, pickled
        raise UsageError(f"--inputs: cannot read '{path}': {error}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise UsageError(f"--inputs: '{path}' is a single array, not an .npz archive of named "
                         "arrays (use --input NAME=PATH.npy)")
    try:
        with archive:
            return [(name, f"--inputs {path}: array '{name}'", path, archive[name])
                    for name in archive.files]
    except (OSError, ValueError) as error:  # a pickled (object) array, a damaged member
        raise UsageError(f"--inputs: cannot read '{path}': {error}") from None


def load_inputs(func: FuncOp, names: list[str], given: list[str], seed: int,
                archive: str | Sequence[str] | None = None) -> list[np.ndarray]:
    """Random inputs, replaced by the arrays of `--inputs FILE.npz` (one file or several,
    merged: an argument in two of them is a usage error, as one given twice) and `--input
    NAME=PATH`."""
    arrays = random_inputs(func, seed)
    seen: dict[str, str] = {}  # argument name -> the option that gave it
    archives = [archive] if isinstance(archive, str) else list(archive or ())
    specs = [spec for path in archives for spec in archive_inputs(path)]
    for spec in given:
        if "=" not in spec:
            raise UsageError(f"--input expects NAME=PATH.npy, got '{spec}'")
        name, path = spec.split("=", 1)
        specs.append((name, f"--input {name}", path, None))
    for name, label, path, value in specs:
        if name not in names:
            raise UsageError(f"{label}: the function has no argument '{name}' "
                             f"(arguments: {', '.join(names)})")
        if name in seen:
            raise UsageError(f"{label}: given more than once (by {seen[name]})")
        seen[name] = label
        index = names.index(name)
        value = read_input_array(name, path) if value is None else value
        if value.dtype.kind != "f" and value.dtype != arrays[index].dtype:
            # integers, booleans and complex numbers would be cast silently (and lossily)
            raise UsageError(f"{label}: dtype {value.dtype} is not a floating-point type "
                             f"(the argument holds {arrays[index].dtype})")
        if value.shape != arrays[index].shape:
            raise UsageError(f"{label}: shape {value.shape} does not match the "
                             f"argument's {arrays[index].shape}")
        arrays[index] = stored_input(value, argument_types(func)[index])
    return arrays


def read_input_array(name: str, path: str) -> np.ndarray:
    """One .npy array; never unpickles, and an .npz archive or an empty file is a usage error."""
    try:
        value = np.load(path, allow_pickle=False)
    except EOFError:  # np.load of an empty file (click would print only "Aborted.")
        raise UsageError(f"--input {name}: '{path}' is empty, not an .npy array") from None
    except (OSError, ValueError) as error:  # missing, a directory, not an .npy, pickled
        raise UsageError(f"--input {name}: cannot read '{path}': {error}") from None
    if not isinstance(value, np.ndarray):  # an NpzFile: several arrays, which one is meant?
        value.close()
        raise UsageError(f"--input {name}: '{path}' is an .npz archive; give one array as .npy "
                         "(np.save)")
    return value


def stored_input(values: np.ndarray, arg_type: TensorType) -> np.ndarray:
    """An --input array (the tensor's values) as the interpreter's storage array; FP8 values
    are divided by the type's 2**scale and rounded (saturating) to the stored q."""
    from interpreters.graph import to_storage

    return to_storage(np.asarray(values, np.float64), arg_type)


def output_directory(option: str, path: str | None) -> Path | None:
    """The directory an option writes to, created now so that a bad path is a usage error
    before anything is compiled or run."""
    if path is None:
        return None
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a file in the way, no permission, a read-only file system
        raise UsageError(f"{option}: cannot use '{path}' as an output directory: {error}") from None
    return directory


def output_names(func: FuncOp) -> list[str]:
    return [f"result{i}" for i in range(len(func.function_type.outputs.data))]


def save_outputs(directory: Path, names: list[str], arrays: list[np.ndarray], types) -> None:
    """Each result as DIR/NAME.npy; FP8 results as float32 values (see the module docstring)."""
    from interpreters.graph import FP8, from_storage

    directory.mkdir(parents=True, exist_ok=True)
    for name, array, result_type in zip(names, arrays, types, strict=True):
        if array.dtype == FP8:  # np.save would write raw bytes ('V1') that nothing reads back
            array = from_storage(array, result_type).astype(np.float32)
        np.save(directory / f"{name}.npy", array)


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


def compare(results: list[np.ndarray], references: list[np.ndarray], types) -> Comparison:
    """Errors over the elements both sides hold as finite numbers. An infinity (an FP16
    overflow) passes only where the reference has the same one; a NaN, or a result with no
    finite element, never passes: it would say nothing about the rows and layouts."""
    passed, max_abs, max_rel = True, 0.0, 0.0
    for got, want, result_type in zip(results, references, types, strict=True):
        got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if got64.shape != want64.shape or np.isnan(got64).any():
            return Comparison(False, math.inf, math.inf)
        finite = np.isfinite(got64) & np.isfinite(want64)
        if not np.all(finite | (got64 == want64)) or (got64.size and not finite.any()):
            overflow = np.isinf(got64) & np.isfinite(want64)
            f16 = str(result_type.element_type) == "f16"
            return Comparison(False, math.inf, math.inf, OVERFLOW_NOTE if f16 and overflow.any() else "")
        got64, want64 = got64[finite], want64[finite]
        error = float(np.max(np.abs(got64 - want64), initial=0.0))
        scale = max(float(np.max(np.abs(want64), initial=0.0)), 1e-30)
        tolerance = RELATIVE_TOLERANCE.get(str(result_type.element_type), 1e-4)
        max_abs, max_rel = max(max_abs, error), max(max_rel, error / scale)
        passed &= error <= tolerance * scale
    return Comparison(passed, max_abs, max_rel)



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
