"""`ipu-opt`: xDSL's opt driver restricted to ipu-stack's dialects, passes and emitters.

Beyond xDSL's driver: `--help` lists each pass with what it does and its options,
`--version` gives ours, `--time-passes` writes an MLIR-style table of each pass's wall time to
stderr (the stages of `ipu-pipeline` one by one), and `--pass-pipeline` takes mlir-opt's
`builtin.module(...)` spelling.
"""

import argparse
import io
import re
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from tools.pass_help import passes_help
from tools.pass_timing import PassTimer
from tools.registry import opt_dialects, opt_passes
from tools.source_locations import parse_located_module, verify_with_locations
from tools.usage import EXIT_USAGE


def mlir_pipeline(spec: str) -> str:
    """Accept mlir-opt's `builtin.module(a,b{x=1})` spelling by stripping the anchor."""
    match = re.fullmatch(r"\s*builtin\.module\((.*)\)\s*", spec, re.S)
    return match.group(1) if match else spec


def usage_error(message: str):
    print(f"ipu-opt: error: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def ipu_stack_version() -> str:
    try:
        return version("ipu-stack")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


class PendingOutput(io.StringIO):
    """The text for `-o FILE`, kept when the driver closes the stream."""

    text = ""

    def close(self) -> None:
        self.text = self.getvalue()
        super().close()


class IpuOptMain(xDSLOptMain):
    version_format = f"ipu-opt {ipu_stack_version()} (ipu-stack, on xdsl {{xdsl_version}})"
    timer: PassTimer

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="ipu-stack modular optimizer driver", args=args)

    def run(self):
        """Report malformed input as a diagnostic on stderr with exit status 1, not a traceback.
        `-o FILE` is written only when everything succeeded, under a temporary name renamed
        into place (`tools/output_files.py`): a failure leaves FILE as it was."""
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
        super().apply_passes(prog)
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
            help="mlir-opt spelling of -p; the 'builtin.module(...)' anchor is accepted",
        )


def main():
    IpuOptMain().run()


if __name__ == "__main__":
    main()
