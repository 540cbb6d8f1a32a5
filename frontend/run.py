"""Compile a graph module and run it on the device model, from Python.

    from frontend.builder import GraphBuilder
    from frontend.run import compile_and_run

    result = compile_and_run(module, tiles=16, inputs={"x": x, "w": w})
    result.passed, result.outputs["result0"], result.cycles

It is `ipu-run` without the command line: the default pipeline (`ipu-pipeline`), the package,
the device model, and the check against the NumPy reference with `ipu-run`'s tolerances.
Inputs are by argument name (or in argument order); arguments left out get `ipu-run`'s random
values for `seed`. A compile diagnostic is raised as xDSL's `DiagnosticException` (a
`VerifyException` or `PassFailedException`), a device-model failure as `ModelError`, bad inputs
as `InterpreterError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from device.package import Package
from ipu_dialects.mid_attrs import IndivisibleOption


@dataclass
class DeviceRun:
    outputs: dict[str, np.ndarray]  # "result0", ... as ipu-run --save-outputs names them
    reference: dict[str, np.ndarray]
    passed: bool  # within ipu-run's tolerance, with no exchange errors
    max_abs_error: float
    max_rel_error: float
    cycles: int
    package: Package
    summary: dict  # the `ipu-run --json` object


def complete_inputs(func, inputs, seed: int) -> list[np.ndarray]:
    """The given inputs (by name or in order) as storage arrays of the argument types (FP8
    arguments take the stored q, as `run_function`), random ones (as ipu-run) for the rest."""
    from interpreters.graph import InterpreterError, input_names, inputs_in_order, storage_dtype
    from tools.run_io import argument_types, random_inputs

    arrays = random_inputs(func, seed)
    if inputs is None:
        return arrays
    if isinstance(inputs, Mapping):
        given = inputs_in_order(
            func, {**dict(zip(input_names(func), arrays, strict=True)), **inputs})
    else:
        given = list(inputs)
        if len(given) != len(arrays):
            raise InterpreterError(f"@{func.sym_name.data} takes {len(arrays)} inputs "
                                   f"({', '.join(input_names(func))}), got {len(given)}")
    return [np.asarray(value, dtype=storage_dtype(arg_type))
            for value, arg_type in zip(given, argument_types(func), strict=True)]


def compile_and_run(module: ModuleOp, tiles: int = 16,
                    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray] | None = None,
                    seed: int = 0, function: str | None = None,
                    indivisible: IndivisibleOption = "pad") -> DeviceRun:
    """Compile `module`'s function (a copy: `module` is left as it is) for `tiles` tiles, run
    it on the device model and check it against the NumPy reference."""
    from device.model import run_package
    from device.model.host import stored_of_values, values_of_stored
    from interpreters.graph import check_runnable, find_function, run_function
    from tools.ipu_run import compile_module
    from tools.pass_timing import PassTimer
    from tools.run_io import compare, fp8_spreads, output_names
    from tools.run_summary import RunFacts

    func = find_function(module, function)
    check_runnable(func)
    arrays = complete_inputs(func, inputs, seed)
    expected = run_function(module, arrays, func.sym_name.data)
    timer = PassTimer()
    package = compile_module(ModuleOp([func.clone()]), tiles, indivisible, timer=timer)
    feeds = {t.name: values_of_stored(t, array) for t, array in zip(package.inputs, arrays, strict=True)}
    outcome = run_package(package, feeds)
    results = [stored_of_values(t, outcome.outputs[t.name]) for t in package.outputs]
    result_types = list(func.function_type.outputs.data)
    check = compare(results, expected, result_types,
                    fp8_spreads(module, arrays, func.sym_name.data))
    passed = check.passed and not outcome.exchange_errors
    compile_seconds = sum(s.seconds for s in timer.grouped() if s.parent is None)
    facts = RunFacts("<python>", func.sym_name.data, passed, check.max_abs, check.max_rel,
                     check.note, outcome.exchange_errors, package, outcome.cycles_by_step,
                     compile_seconds, timer.per_pass())
    names = output_names(func)
    return DeviceRun(dict(zip(names, results, strict=True)),
                     dict(zip(names, expected, strict=True)), passed, check.max_abs,
                     check.max_rel, outcome.cycles, package, facts.summary())
