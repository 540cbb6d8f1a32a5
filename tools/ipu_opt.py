"""`ipu-opt`: xDSL's opt driver restricted to ipu-stack's dialects, passes and emitters."""

import argparse
import re
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from ipu_dialects import get_all_dialects
from passes import get_all_passes
from tools.source_locations import parse_located_module, verify_with_locations


def mlir_pipeline(spec: str) -> str:
    """Accept mlir-opt's `builtin.module(a,b{x=1})` spelling by stripping the anchor."""
    match = re.fullmatch(r"\s*builtin\.module\((.*)\)\s*", spec, re.S)
    return match.group(1) if match else spec


def usage_error(message: str):
    print(f"ipu-opt: error: {message}", file=sys.stderr)
    sys.exit(1)


class IpuOptMain(xDSLOptMain):
    version_format = "ipu-opt (xdsl {xdsl_version})"

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="ipu-stack modular optimizer driver", args=args)

    def run(self):
        """Report malformed input as a diagnostic on stderr with exit status 1, not a traceback."""
        try:
            super().run()
        except (ParseError, DiagnosticException) as error:
            print(error, file=sys.stderr)
            for note in getattr(error, "__notes__", ()):  # the IR with the failing op marked
                print(note, file=sys.stderr)
            sys.exit(1)

    def setup_pipeline(self):
        """An unknown pass, option or option value is a usage error, not a traceback."""
        try:
            super().setup_pipeline()
        except (ValueError, ArgSpecParseError) as error:
            usage_error(f"pass pipeline '{self.args.passes}': {error}")

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
        super().apply_passes(prog)

    def register_all_dialects(self):
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self):
        from xdsl.targets.mlir import MLIRTarget

        from tools.targets import get_all_targets

        self.available_targets["mlir"] = lambda: MLIRTarget
        for name, factory in get_all_targets().items():
            self.available_targets[name] = factory

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
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
