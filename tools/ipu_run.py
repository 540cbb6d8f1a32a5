"""`ipu-run`: compile a graph function, run it on the device model, check it against NumPy.

`ipu-run DIR` runs a package saved with `--package DIR` instead (`tools/run_package.py`): it
is loaded through the package schema and checked against the graph it records. `--json`
prints the outcome as one JSON object (`run_report`). What the two share (exit codes,
inputs and outputs, the check and the report) is in `tools/run_io.py`.

Exit status: 0 when the check passes, 1 when it fails, 2 when the input does not compile
(a diagnostic) or cannot be read.

Diagnostics. An error in the IR (a parse error, a verifier error, a function the reference
cannot run, such as a tensor larger than the device) is reported MLIR-style with the position of
the text or op at fault, `file.mlir:12:5: error: graph.gemm: ...`, followed by that source line
and carets under it; other input errors
(command line, .npy files, a package that fails its schema) start with `ipu-run: error:`.

Files. `--inputs FILE.npz` gives named arrays (`numpy.savez`) for any subset of the arguments
(the rest are seeded random), read like `--input`; `ipu-import` writes such a file of weights.
`--input NAME=PATH.npy` takes a floating-point array of the argument's shape (never
unpickled; an .npz archive or an empty file is a usage error); it holds
the tensor's values, so for an FP8 argument `tensor<..xf8E4M3FNUZ, #graph.fp8_scale<s>>` it is
divided by 2**s and rounded to FP8 (saturating). `--save-outputs DIR` writes `DIR/resultI.npy`
in the same form: f32 and f16 results in their own dtype, FP8 results as float32 arrays of their
values `q * 2**s` (exact), which `--input` reads back unchanged.

For scripts. `--json` prints one JSON object on stdout instead of the text lines (the check,
errors, modeled cycles by phase, kernel and graph op, tiles used, compile time per pass;
`tools/run_summary.py`); a diagnostic is still on stderr, and the object then holds
`"check": "DIAGNOSTIC"` and its text. `--report DIR` writes `DIR/report.html` with its
pictures and `DIR/trace.json`, a Chrome trace for ui.perfetto.dev (`tools/report.py`,
`tools/trace.py`).

Progress. Work that runs longer than a second shows a bar on stderr from then on, redrawn
while it runs: the NumPy reference, each stage of the pipeline (by name), the package build,
the listing and the model run (`tools/progress.py`); only when stderr is a terminal, and
`--quiet` turns them off.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError

from interpreters.graph import find_function as find_function
from ipu_dialects.mid_attrs import IndivisibleOption
from ipu_dialects.mid_config import GemmPartials, ProfilingOption
from tools.progress import Progress, no_progress, phase, terminal_progress
from tools.registry import make_context as make_context
from tools.run_io import EXIT_DIAGNOSTIC as EXIT_DIAGNOSTIC
from tools.run_io import EXIT_FAIL as EXIT_FAIL
from tools.run_io import EXIT_PASS as EXIT_PASS
from tools.run_io import OVERFLOW_NOTE as OVERFLOW_NOTE
from tools.run_io import RELATIVE_TOLERANCE as RELATIVE_TOLERANCE
from tools.run_io import compare as compare
from tools.run_io import (
    diagnostic_text,
    expect_line,
    fp8_spreads,
    load_expected,
    load_inputs,
    output_directory,
    read_source,
    save_outputs,
    shown,
)
from tools.run_io import output_names as output_names
from tools.run_io import parse_module as parse_module
from tools.run_io import random_inputs as random_inputs
from tools.usage import UsageError
from tools.version import version_callback


def compile_module(module: ModuleOp, tiles: int, indivisible: IndivisibleOption,
                   profiling: ProfilingOption = "off", with_assembly: bool = True,
                   timer=None, progress: Progress = no_progress,
                   gemm_partials: GemmPartials = "f32",
                   catalog: tuple[str, ...] = (), program_layouts: bool = False):
    """Run the default pipeline and build the package; diagnostics propagate (an
    `indivisible` policy from the command line is checked there, by `ipu.config`'s verifier). A
    `tools.pass_timing.PassTimer` given as `timer` records each stage and the package build;
    `progress` wraps the stages and the package's loops (`tools.progress`)."""
    from passes.ipu_pipeline import IpuPipelinePass
    from tools.package_writer import build_package
    from tools.pass_timing import PassTimer

    timer = PassTimer() if timer is None else timer
    pipeline = IpuPipelinePass(tiles=tiles, indivisible=indivisible, profiling=profiling,
                               gemm_partials=gemm_partials, catalog=catalog,
                               program_layouts=program_layouts)
    ctx = make_context()

    def run_timed(stages: Sequence[ModulePass]) -> None:  # the pipeline's stages, timed
        timer.adopt(stages, pipeline.name)
        previous = None
        for stage in progress(stages, "compile", len(stages)):
            timer.callback(previous, module, stage)
            stage.apply(ctx, module)
            previous = stage
        timer.callback(previous, module, None)

    chosen = pipeline.run_with_fallback(module, run_timed)
    package = timer.time("build-package", lambda: build_package(module, with_assembly, progress))
    package.pipeline = str(chosen.pipeline_pass_spec())  # the fallback that compiled it
    return package


def explain_gemms(func: FuncOp, tiles: int, indivisible: str, gemm_partials: str) -> list[str]:
    """`--explain`: per graph.gemm, the selector's candidates (planning.gemm_selection)."""
    from ipu_dialects.graph import GemmOp
    from ipu_dialects.locations import value_label
    from planning.gemm_problem import GemmProblem, catalog_entries, default_catalog_names
    from planning.gemm_selection import explain_gemm

    catalog = catalog_entries(default_catalog_names(gemm_partials))
    lines = []
    for op in func.walk():
        if not isinstance(op, GemmOp):
            continue
        lhs, rhs, out = (v.type for v in (op.lhs, op.rhs, op.result))
        assert isinstance(lhs, TensorType) and isinstance(rhs, TensorType)  # the verifier's
        assert isinstance(out, TensorType)
        problem = GemmProblem.from_types(lhs, rhs, out, op.transpose_lhs is not None,
                                         op.transpose_rhs is not None)
        lines.append(f"explain: graph.gemm {value_label(op.result)} on {tiles} tiles "
                     "(* = chosen; cycles as the device model charges them):")
        lines += explain_gemm(problem, tiles, indivisible, catalog=catalog)
    return lines


def print_json(summary: dict) -> None:
    print(json.dumps(summary, indent=1))


def module_text(module: ModuleOp) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue() + "\n"


app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

CHECK_EPILOG = (
    "The check: PASS when, for every result, the largest absolute difference from the NumPy "
    "reference (over the elements both hold as finite numbers) is at most the tolerance of "
    "the result's element type times the largest reference magnitude: "
    + ", ".join(f"{t} {v:g}" for t, v in RELATIVE_TOLERANCE.items())
    + ". --expect FILE.npz holds the results to the same tolerances against arrays saved "
    "elsewhere (torch's outputs, say) and prints the tolerance; a FAIL there fails the run. "
    "'max rel error' is that normwise ratio (max |got - want| / max |want|), not an "
    "elementwise one. A NaN, or an infinity the reference does not have, fails. Exit status: "
    "0 PASS, 1 FAIL, 2 a diagnostic or a usage error.")


@app.command(epilog=CHECK_EPILOG)
def run(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(
        help="textual IR holding a graph func.func, or a package directory (--package)")],
    tiles: Annotated[int, typer.Option(help="tiles to compile for")] = 16,
    seed: Annotated[int, typer.Option(help="seed for the random inputs")] = 0,
    input: Annotated[list[str], typer.Option(
        metavar="NAME=PATH.npy", help="an argument's values, by its name; repeatable")] = [],  # noqa: B006
    inputs: Annotated[list[str], typer.Option(
        metavar="FILE.npz", help="named arrays for any of the arguments; repeatable (an "
                                 "argument in two files is refused)")] = [],  # noqa: B006
    save_outputs_dir: Annotated[
        Path | None, typer.Option("--save-outputs", help="write each result as DIR/NAME.npy")
    ] = None,
    reference: Annotated[bool, typer.Option(help="run only the NumPy reference")] = False,
    function: Annotated[str | None, typer.Option(help="function to run")] = None,
    indivisible: Annotated[IndivisibleOption, typer.Option(
        help="extents that are no multiple of a plan's block: pad them or reject the plan")] = "pad",
    package_dir: Annotated[
        Path | None, typer.Option("--package", help="also write the package to DIR")
    ] = None,
    profile: Annotated[
        bool, typer.Option(help="compile with profiling=cycles and print the cycle profile")
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="print one JSON object on stdout instead of text")
    ] = False,
    report_dir: Annotated[
        Path | None,
        typer.Option("--report", help="write DIR/report.html (with pictures) and DIR/trace.json"),
    ] = None,
    quiet: Annotated[
        bool, typer.Option(help="no progress bars (they show on a terminal's stderr only)")
    ] = False,
    gemm_partials: Annotated[
        GemmPartials, typer.Option(
                          help="GEMM partial sums over K: f32 (one rounding) or f16 (cheaper "
                               "candidates that round after every 64-deep block)")
    ] = "f32",
    explain: Annotated[
        bool, typer.Option(help="print, per graph.gemm, every candidate plan with its "
                                "estimated cycles and memory per tile, or why it was rejected "
                                "(on stderr)")
    ] = False,
    max_model_seconds: Annotated[
        float | None, typer.Option(help="a package directory only: refuse it if its run is "
                                        "estimated to take the device model longer (default "
                                        "1 h: MAX_MODEL_SECONDS, device/limits.py)")
    ] = None,
    expect: Annotated[Path | None, typer.Option(
        metavar="FILE.npz", help="also compare the results with a reference set saved elsewhere "
        "(torch's, say): arrays named result0, result1, ... (any name for one result), held to "
        "the same tolerances as the check")] = None,
    version: Annotated[bool, typer.Option(
        "--version", callback=version_callback("ipu-run"), is_eager=True,
        help="print the version and exit")] = False,
) -> None:
    """Compile FILE with the default pipeline (or load a saved package), run it on the device
    model, check it against the NumPy reference."""
    if file.is_dir():
        from tools.run_package import run_package_main

        sys.exit(run_package_main(file, seed, input, save_outputs_dir, json_output,
                                  refused_package_options(ctx), inputs, quiet,
                                  max_model_seconds))
    if max_model_seconds is not None:  # a package compiled here is the compiler's: not bounded
        print(f"ipu-run: --max-model-seconds: only for a package directory ({file} is not "
              "one; a program compiled in this run is not held to it)", file=sys.stderr)
        sys.exit(EXIT_DIAGNOSTIC)
    sys.exit(run_main(file, tiles, seed, input, save_outputs_dir, reference, function,
                      indivisible, package_dir, profile, json_output, report_dir, inputs, quiet,
                      gemm_partials, explain, expect))


def refused_package_options(ctx: typer.Context) -> list[str]:
    """The options given on the command line that a package run does not use
    (`tools.run_package.PACKAGE_OPTIONS`), as they were spelled there."""
    from tools.run_package import PACKAGE_OPTIONS

    def given(name: str) -> bool:  # click's ParameterSource.COMMANDLINE (typer vendors click)
        source = ctx.get_parameter_source(name)
        return source is not None and source.name == "COMMANDLINE"

    return [param.opts[0] for param in ctx.command.params
            if param.name is not None and param.name not in PACKAGE_OPTIONS and given(param.name)]


def run_main(file, tiles=16, seed=0, inputs=(), save_dir=None, reference=False,
             function=None, indivisible="pad", package_dir=None, profile=False,
             json_output=False, report_dir=None, archive=None, quiet=False,
             gemm_partials="f32", explain=False, expect=None) -> int:
    from interpreters.graph import InterpreterError, check_runnable, input_names, run_function
    from tools.pass_timing import PassTimer

    def diagnostic(message: str) -> int:
        print(message, file=sys.stderr)
        if json_output:
            print_json({"file": str(file), "check": "DIAGNOSTIC", "diagnostic": message})
        return EXIT_DIAGNOSTIC

    text = ""
    try:
        text = read_source(Path(file))
        module = parse_module(Path(file), text)
        func = find_function(module, function, "--function")
        check_runnable(func)
        save_dir = output_directory("--save-outputs", save_dir)
        package_dir = output_directory("--package", package_dir)
        report_dir = output_directory("--report", report_dir)
        names = input_names(func)
        arrays = load_inputs(func, names, list(inputs), seed, archive)
        progress = terminal_progress(quiet)
        expected = phase(progress, "reference (NumPy)",
                         lambda: run_function(module, arrays, func.sym_name.data))
        outside = (None if expect is None else
                   load_expected(Path(expect), output_names(func),
                                 func.function_type.outputs.data))
    except (ParseError, DiagnosticException, InterpreterError, UsageError, OSError,
            ValueError) as error:
        return diagnostic(diagnostic_text(error, text))
    result_names = output_names(func)
    result_types = func.function_type.outputs.data
    if reference:
        if save_dir is not None:
            save_outputs(save_dir, result_names, expected, result_types)
        if json_output:
            print_json({"file": str(file), "function": func.sym_name.data, "check": "REFERENCE",
                        "results": {n: {"shape": list(v.shape), "dtype": str(v.dtype)}
                                    for n, v in zip(result_names, expected, strict=True)}})
            return EXIT_PASS
        for name, value in zip(result_names, expected, strict=True):
            print(f"{name}: shape {value.shape} {value.dtype}")
        print("reference: done")
        if outside is not None:
            against = compare(expected, outside, result_types)
            print(expect_line(against, Path(expect), result_types))
            return EXIT_PASS if against.passed else EXIT_FAIL
        return EXIT_PASS

    from device.model import ModelError, run_package
    from device.model.host import stored_of_values, values_of_stored

    if explain:
        try:
            print("\n".join(explain_gemms(func, tiles, indivisible, gemm_partials)),
                  file=sys.stderr)
        except ValueError as error:  # a bad --gemm-partials: graph-to-mid words it below
            print(f"ipu-run: --explain: {error}", file=sys.stderr)
    started = time.perf_counter()
    timer = PassTimer()
    source = ModuleOp([func.clone()])
    compiled = source.clone()
    try:
        package = compile_module(compiled, tiles, indivisible,
                                 "cycles" if profile else "off",
                                 with_assembly=package_dir is not None, timer=timer,
                                 progress=progress, gemm_partials=gemm_partials)
    except DiagnosticException as error:
        return diagnostic(shown(str(error), text, "ipu-run: compile error"))
    compile_seconds = time.perf_counter() - started
    if package_dir is not None:
        package.source = module_text(source)  # so that `ipu-run DIR` can check a run of it
        try:
            package.save(package_dir)
        except OSError as error:  # a directory in a file's place, a full disk: nothing half-written
            return diagnostic(f"ipu-run: error: --package: cannot write '{package_dir}': {error}")
    feeds = {tensor.name: values_of_stored(tensor, array)
             for tensor, array in zip(package.inputs, arrays, strict=True)}
    try:
        outcome = run_package(package, feeds, progress=progress)
    except ModelError as error:
        print(f"ipu-run: the device model stopped: {error}", file=sys.stderr)
        if json_output:
            print_json({"file": str(file), "check": "FAIL", "model_error": str(error)})
        else:
            print("check: FAIL")
        return EXIT_FAIL
    results = [stored_of_values(t, outcome.outputs[t.name]) for t in package.outputs]
    if save_dir is not None:
        save_outputs(save_dir, result_names, results, result_types)
    check = compare(results, expected, func.function_type.outputs.data,
                    fp8_spreads(module, arrays, func.sym_name.data))
    check_passed = check.passed and not outcome.exchange_errors
    agreed = None if outside is None else compare(results, outside, result_types)
    device_check = check_passed
    check_passed &= agreed is None or agreed.passed
    for message in outcome.exchange_errors[:5]:
        print(f"exchange error: {message}", file=sys.stderr)
    if check.note:
        print(f"note: {check.note}", file=sys.stderr)
    if json_output or report_dir is not None:
        from tools.run_summary import RunFacts

        facts = RunFacts(str(file), func.sym_name.data, check_passed, check.max_abs,
                         check.max_rel, check.note, outcome.exchange_errors, package,
                         outcome.cycles_by_step, compile_seconds, timer.per_pass())
        if report_dir is not None:
            from tools.output_files import staged_directory
            from tools.report import write_report

            with staged_directory(report_dir) as staging:  # renamed into place, never followed
                write_report(staging, facts, compiled, timer)
        if json_output:
            print_json(facts.summary())
            return EXIT_PASS if check_passed else EXIT_FAIL
    print(f"check: {'PASS' if device_check else 'FAIL'}")
    print(f"max abs error: {check.max_abs:.3g}  max rel error: {check.max_rel:.3g}")
    print(f"modeled cycles: {outcome.cycles}")
    if "estimated_cycles" in package.metadata:
        print(f"estimated cycles: {package.metadata['estimated_cycles']} (the selector's, "
              "from the plans graph-to-mid chose)")
    print(f"tiles used: {package.metadata.get('tiles_used', package.tiles)} of {package.tiles}")
    print(f"compile time: {compile_seconds:.2f} s")
    if agreed is not None:
        print(expect_line(agreed, Path(expect), result_types))
    if package.metadata.get("profiling") == "cycles":
        from device.model.profile import cycle_profile, format_profile

        print(format_profile(cycle_profile(package, outcome.cycles_by_step)))
    return EXIT_PASS if check_passed else EXIT_FAIL


def main() -> None:
    app()


if __name__ == "__main__":
    main()
