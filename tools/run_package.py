"""`ipu-run PACKAGE_DIR`: run a saved package on the device model and check it.

A package records the graph function it was built from (``source.mlir``) and the pipeline
that built it, so a run is checked against the NumPy reference exactly as a run of the
.mlir file is: the same random inputs for a seed, the same `--input` files and tolerances.
The package is untrusted input: `Package.load` checks it against its schema, and its source
graph must have the package's inputs and outputs (names and shapes) before anything runs.

A package run honours the options in `PACKAGE_OPTIONS` (the inputs, the seed, where the
outputs go, `--json`, `--quiet`); every other option given on the command line is a usage
error, never silently ignored: compile options have nothing to change in a compiled package,
and `--report` needs the compiled module (its buffers' memory), which a package does not hold.

Exit status: 0 when the check passes, 1 when it fails (or the device model stops), 2 when
the package or an input file cannot be used (`ipu-run: error: <file>: <field>: ...`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import DiagnosticException, ParseError

from device.limits import MAX_MODEL_SECONDS
from device.package import Package, PackageError
from interpreters.graph import find_function
from tools.run_io import (
    EXIT_DIAGNOSTIC,
    EXIT_FAIL,
    EXIT_PASS,
    compare,
    diagnostic_text,
    fp8_spreads,
    load_inputs,
    output_directory,
    output_names,
    parse_module,
    print_report,
    run_report,
    save_outputs,
)
from tools.usage import UsageError

# the `ipu-run` parameters a package run uses; the file argument is the package itself
PACKAGE_OPTIONS = frozenset({"file", "seed", "input", "inputs", "save_outputs_dir", "json_output",
                             "quiet", "max_model_seconds"})


def check_signature(package: Package, func: FuncOp, names: list[str], where: str) -> None:
    """The package's host tensors are the source function's arguments and results: names,
    shapes, element types (storage precision) and FP8 scales. The check's tolerance is chosen
    by the source's element type, so a source that names another type than the package holds
    would judge the package by the wrong tolerance (f16's is 100x f32's)."""
    from ipu_dialects.graph import fp8_scale
    from passes.operators.formats import storage_precision as element_precision

    # check_runnable has made every argument and result a ranked graph tensor
    arguments = [t for t in func.function_type.inputs.data if isinstance(t, TensorType)]
    results = [t for t in func.function_type.outputs.data if isinstance(t, TensorType)]
    for role, tensors, expected_names, types in (
        ("inputs", package.inputs, names, arguments),
        ("outputs", package.outputs, output_names(func), results),
    ):
        if [t.name for t in tensors] != expected_names:
            raise PackageError(f"{where}: {role}: the package's {[t.name for t in tensors]} are "
                               f"not the source function's {expected_names}")
        for index, (tensor, source_type) in enumerate(zip(tensors, types, strict=True)):
            shape = tuple(source_type.get_shape())
            if tuple(tensor.shape) != shape:
                raise PackageError(f"{where}: {role}[{index}].shape: {list(tensor.shape)} is "
                                   f"not the source function's {list(shape)}")
            element = source_type.get_element_type()
            if tensor.precision != element_precision(element):
                raise PackageError(f"{where}: {role}[{index}].precision: '{tensor.precision}' "
                                   f"is not the source function's {element} (stored as "
                                   f"'{element_precision(element)}')")
            if tensor.scale != fp8_scale(source_type):
                raise PackageError(f"{where}: {role}[{index}].scale: {tensor.scale} is not the "
                                   f"source function's FP8 scale {fp8_scale(source_type)}")


def load_checked(directory: Path, max_model_seconds: float = MAX_MODEL_SECONDS,
                 ) -> tuple[Package, ModuleOp, FuncOp]:
    """The package, its source module and function (verified, runnable)."""
    from interpreters.graph import check_runnable, input_names

    package = Package.load(directory, max_model_seconds)
    if not package.source:
        raise PackageError(f"{directory / 'source.mlir'}: missing; the package records no "
                           "source graph to check a run against (save it with ipu-run "
                           "FILE.mlir --package DIR)")
    module = parse_module(directory / "source.mlir", package.source)
    func = find_function(module, package.function, "--function")
    check_runnable(func)
    check_signature(package, func, input_names(func), str(directory / "metadata.json"))
    return package, module, func


def run_package_main(directory: Path, seed: int = 0, inputs=(), save_dir=None,
                     json_output: bool = False, compile_options=(),
                     archive: str | Sequence[str] | None = None,
                     quiet: bool = True, max_model_seconds: float | None = None) -> int:
    """Run the package in `directory` with `ipu-run`'s inputs (`--input` specs in `inputs`,
    the `--inputs` files `archive`, random for `seed` otherwise); `compile_options` are the
    refused options the command line gave (a usage error)."""
    from device.model import ModelError, run_package
    from device.model.host import stored_of_values, values_of_stored
    from interpreters.graph import InterpreterError, input_names, run_function
    from tools.progress import terminal_progress

    text = ""
    try:
        if compile_options:
            raise UsageError(f"{', '.join(compile_options)}: only for a .mlir file; a package "
                             f"is already compiled ({directory} is a package directory"
                             + ("; --report needs the compiled module, which a package does "
                                "not hold" if "--report" in compile_options else "") + ")")
        package, module, func = load_checked(
            Path(directory), MAX_MODEL_SECONDS if max_model_seconds is None else max_model_seconds)
        text = package.source
        save_dir = output_directory("--save-outputs", save_dir)
        arrays = load_inputs(func, input_names(func), list(inputs), seed, archive)
        expected = run_function(module, arrays, func.sym_name.data)
    except (ParseError, DiagnosticException, InterpreterError, UsageError, OSError,
            ValueError) as error:
        print(diagnostic_text(error, text), file=sys.stderr)
        return EXIT_DIAGNOSTIC
    # the reference holds an FP8 tensor as its stored q, the model reads and writes values
    feeds = {tensor.name: values_of_stored(tensor, array)
             for tensor, array in zip(package.inputs, arrays, strict=True)}
    try:
        outcome = run_package(package, feeds, progress=terminal_progress(quiet))
    except ModelError as error:
        print(f"ipu-run: the device model stopped: {error}", file=sys.stderr)
        print(json.dumps({"check": "FAIL", "max_abs_error": None, "max_rel_error": None,
                          "modeled_cycles": None, "tiles_used": None, "error": str(error)})
              if json_output else "check: FAIL")
        return EXIT_FAIL
    result_types = func.function_type.outputs.data
    results = [stored_of_values(t, outcome.outputs[t.name]) for t in package.outputs]
    if save_dir is not None:
        save_outputs(save_dir, output_names(func), results, result_types)
    check = compare(results, expected, result_types,
                    fp8_spreads(module, arrays, func.sym_name.data))
    check_passed = check.passed and not outcome.exchange_errors
    for message in outcome.exchange_errors[:5]:
        print(f"exchange error: {message}", file=sys.stderr)
    report = run_report(check_passed, check, outcome.cycles, package)
    if json_output:
        print(json.dumps(report))
    else:
        print(f"package: {directory} (built by {package.pipeline or 'an unrecorded pipeline'})")
        print_report(report, package.tiles)
    return EXIT_PASS if check_passed else EXIT_FAIL

