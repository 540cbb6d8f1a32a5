"""`ipu-opt`: xDSL's opt driver restricted to ipu-stack's dialects, passes and emitters.

Beyond xDSL's driver, mlir-opt's habits: `--help` lists each pass with what it does and its
options (with their values), `--version` gives ours, `--time-passes` (`--mlir-timing`) writes an
MLIR-style table of each pass's wall time to stderr (the stages of `ipu-pipeline` one by one),
`--pass-pipeline` takes mlir-opt's `builtin.module(...)` spelling with nested `func.func(...)`
anchors, `--verify-diagnostics` matches `expected-error` annotations
(`tools/verify_diagnostics.py`), `-` reads standard input, and `--mlir-print-debuginfo`,
`--mlir-print-ir-after-all`, `--mlir-print-op-generic` are xDSL's `--print-*` flags.
"""

import argparse
import dataclasses
import io
import re
import sys
from collections.abc import Sequence
from io import BytesIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from tools.pass_help import passes_help
from tools.pass_timing import PassTimer
from tools.progress import terminal_progress
from tools.registry import opt_dialects, opt_passes
from tools.source_locations import parse_located_module, verify_with_locations
from tools.usage import EXIT_USAGE
from tools.verify_diagnostics import Diagnostic, expectations, parse_diagnostics, verify
from tools.version import version_line

# xDSL's passes that act op by op inside any function: nested under a func.func anchor they do
# what they do on the whole module. Ours transform the module as a whole.
FUNCTION_LOCAL = ("canonicalize", "cse", "dce")


class PipelineSpecError(ValueError):
    pass


def split_top_level(text: str) -> list[str]:
    """`a{x=1,2},f(b,c)` -> [`a{x=1,2}`, `f(b,c)`]: commas outside braces and parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "{(":
            depth += 1
        elif char in "})":
            depth -= 1
            if depth < 0:
                raise PipelineSpecError(f"unbalanced '{char}' at offset {i}")
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise PipelineSpecError("unbalanced brackets")
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


ANCHORED = re.compile(r"([\w.]+)\s*\((.*)\)", re.S)


def flatten_pipeline(spec: str, anchor: str = "builtin.module") -> list[str]:
    """mlir-opt's `--pass-pipeline` as xDSL's flat list: `builtin.module(a, func.func(cse))`
    is `a,cse`. A pass nested under `func.func(...)` or `any(...)` must be one that works op by
    op (FUNCTION_LOCAL); our passes transform the whole module and stay at its level."""
    flat = []
    for part in split_top_level(spec):
        nested = ANCHORED.fullmatch(part)
        if nested is None:
            name = re.match(r"[\w.-]+", part)
            if anchor != "builtin.module" and (name is None or name.group() not in FUNCTION_LOCAL):
                raise PipelineSpecError(
                    f"'{part}' cannot be nested under {anchor}(...): it runs on the whole "
                    f"builtin.module (only {', '.join(FUNCTION_LOCAL)} run per function)")
            flat.append(part)
            continue
        inner_anchor, body = nested.groups()
        if inner_anchor not in ("func.func", "any"):
            raise PipelineSpecError(
                f"unknown anchor '{inner_anchor}(...)': nest passes under func.func(...) or "
                "any(...) inside builtin.module(...)")
        flat += flatten_pipeline(body, inner_anchor)
    return flat


def mlir_pipeline(spec: str) -> str:
    """Accept mlir-opt's `builtin.module(a,func.func(b),c{x=1})` spelling: the anchors are
    flattened (`flatten_pipeline`); a spec without the anchor is xDSL's, taken as it is."""
    match = re.fullmatch(r"\s*builtin\.module\s*\((.*)\)\s*", spec, re.S)
    if match is None:
        return spec
    try:
        return ",".join(flatten_pipeline(match.group(1)))
    except PipelineSpecError as error:
        raise argparse.ArgumentTypeError(f"'{spec}': {error}") from None


MLIR_ALIASES = (
    ("--mlir-print-debuginfo", "print_debuginfo", "--print-debuginfo"),
    ("--mlir-print-ir-after-all", "print_between_passes", "--print-between-passes"),
    ("--mlir-timing", "time_passes", "--time-passes"),
    ("--mlir-print-op-generic", "print_op_generic", "--print-op-generic"),
)


def usage_error(message: str):
    print(f"ipu-opt: error: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


class PendingOutput(io.StringIO):
    """The text for `-o FILE`, kept when the driver closes the stream."""

    text = ""

    def close(self) -> None:
        self.text = self.getvalue()
        super().close()


class IpuOptMain(xDSLOptMain):
    version_format = version_line("ipu-opt").replace("{", "{{").replace("}", "}}")
    timer: PassTimer

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="ipu-stack modular optimizer driver", args=args)

    def run(self):
        """Report malformed input as a diagnostic on stderr with exit status 1, not a traceback.
        `-o FILE` is written only when everything succeeded, under a temporary name renamed
        into place (`tools/output_files.py`): a failure leaves FILE as it was. With
        `--verify-diagnostics`, match the diagnostics against the input's annotations."""
        if self.args.verify_diagnostics:
            sys.exit(self.run_verifying())
        try:
            super().run()
        except (ParseError, DiagnosticException) as error:
            print(error, file=sys.stderr)
            for note in getattr(error, "__notes__", ()):  # the IR with the failing op marked
                print(note, file=sys.stderr)
            sys.exit(1)
        if isinstance(self.pending, PendingOutput):
            from pathlib import Path

            from tools.output_files import write_file

            try:
                write_file(Path(self.args.output_file), self.pending.text)
            except OSError as error:
                usage_error(f"output {self.args.output_file}: {error}")

    pending: object = None

    def prepare_output(self):
        """`-o FILE`: collected in memory, written by `run` when nothing failed."""
        if self.args.output_file is None:
            return super().prepare_output()
        self.pending = PendingOutput()
        return self.pending

    def run_verifying(self) -> int:
        """mlir-opt's `--verify-diagnostics` (`tools/verify_diagnostics.py`): each chunk's
        diagnostics against its `expected-*` annotations; 1 on any difference, else 0."""
        chunks, file_extension = self.prepare_input()
        output_stream = self.prepare_output()
        name = self.get_input_name()
        failures: list[str] = []
        try:
            for i, (chunk, offset) in enumerate(chunks):
                data = chunk.read()
                chunk.close()
                found = expectations(data.decode("utf-8", errors="replace"), name, offset + 1)
                diagnostics: list[Diagnostic] = []
                if i > 0:
                    output_stream.write("// -----\n")
                try:
                    module = self.parse_chunk(BytesIO(data), file_extension, offset)
                    if module is not None:
                        self.apply_passes(module)
                        output_stream.write(self.output_resulting_program(module))
                except ParseError as error:
                    where = dataclasses.replace(error.span, line_offset=offset).get_location()
                    here = where.file == name
                    diagnostics = [Diagnostic("error", where.line if here else None,
                                              where.col if here else None, error.msg)]
                except DiagnosticException as error:
                    diagnostics = parse_diagnostics(str(error), name)
                failures += verify(found, diagnostics, name)
                output_stream.flush()
        finally:
            if output_stream is not sys.stdout:
                output_stream.close()
        for failure in failures:
            print(failure, file=sys.stderr)
        return 1 if failures else 0

    def setup_pipeline(self):
        """Time every pass, the stages of `ipu-pipeline` one by one (`PassTimer`). An unknown
        pass, option or option value is a usage error, not a traceback."""
        try:
            parsed = PassPipeline.parse_spec(self.available_passes, self.args.passes)
        except (ValueError, ArgSpecParseError) as error:
            usage_error(f"pass pipeline '{self.args.passes}': {error}")
        self.timer = PassTimer(verify=not self.args.disable_verify,
                               between=self.print_between if self.args.print_between_passes
                               else None)
        self.pipeline = self.timer.pipeline(parsed.passes)

    @staticmethod
    def print_between(done: ModulePass, module: ModuleOp) -> None:
        print(f"IR after {done.name}:")
        Printer(stream=sys.stdout).print_op(module)
        print("\n\n\n")

    def get_input_stream(self):
        """`-` is standard input, as for mlir-opt."""
        if self.args.input_file == "-":
            return sys.stdin.buffer, "mlir"
        return super().get_input_stream()

    def get_input_name(self):
        return "stdin" if self.args.input_file == "-" else super().get_input_name()

    def prepare_input(self):
        """A missing or unreadable input file is a usage error, not a traceback."""
        try:
            return super().prepare_input()
        except (OSError, ValueError) as error:
            usage_error(f"input {self.args.input_file}: {error}")

    def parse_chunk(self, chunk, file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        """Parse MLIR text with a source location on every op (for located verifier errors);
        a file that is not UTF-8 text is a usage error."""
        if file_extension != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        try:
            text = chunk.read().decode("utf-8")
        except UnicodeDecodeError as error:
            usage_error(f"input {self.get_input_name()} is not UTF-8 text: {error}")
        return parse_located_module(self.ctx, text, self.get_input_name(), start_offset,
                                    not self.args.no_implicit_module)

    def apply_passes(self, prog: ModuleOp):
        """Verify the parsed input first, so that its errors carry the op's file:line:col
        (the pipeline verifies again after every pass)."""
        if not self.args.disable_verify:
            verify_with_locations(prog)
        self.timer.spans.clear()  # one report per input chunk
        # xDSL's PassPipeline.apply, with a progress bar over the passes (the stages of
        # ipu-pipeline one by one) on a terminal's stderr once they run a second
        passes, callback = self.pipeline.passes, self.pipeline.callback
        previous: ModulePass | None = None
        for upcoming in terminal_progress()(passes, "ipu-opt", len(passes)):
            if callback is not None:
                callback(previous, prog, upcoming)
            upcoming.apply(self.ctx, prog)
            previous = upcoming
        if callback is not None:
            callback(previous, prog, None)
        if self.args.time_passes:  # stderr: stdout holds the IR
            print(self.timer.report(), file=sys.stderr)

    def register_all_dialects(self):
        for name, factory in opt_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        for name, factory in opt_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self):
        from xdsl.targets.mlir import MLIRTarget

        from tools.targets import get_all_targets

        self.available_targets["mlir"] = lambda: MLIRTarget
        for name, factory in get_all_targets().items():
            self.available_targets[name] = factory

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.epilog = passes_help(self.available_passes)
        arg_parser.add_argument(
            "--pass-pipeline",
            dest="passes",
            type=mlir_pipeline,
            default=argparse.SUPPRESS,
            help="mlir-opt spelling of -p: 'builtin.module(a,func.func(cse),b{x=1})'; "
                 "canonicalize, cse and dce may be nested under func.func(...) or any(...)",
        )
        # mlir-opt's spellings of xDSL's options, the same flags under a second name
        for mlir_name, dest, xdsl_name in MLIR_ALIASES:
            arg_parser.add_argument(mlir_name, dest=dest, action="store_true",
                                    default=argparse.SUPPRESS, help=f"the same as {xdsl_name}")


def main():
    IpuOptMain().run()


if __name__ == "__main__":
    main()
