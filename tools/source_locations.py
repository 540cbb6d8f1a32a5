"""Source locations for verifier diagnostics: `file.mlir:12:5: error: graph.gemm: ...`.

xDSL 0.74's parser attaches a location to an op only when the text spells `loc(...)`, and a
`VerifyException` carries nothing but its message (plus a note with the whole module printed
generically). The drivers want MLIR's habit instead: every diagnostic starts with the position of
the op in the user's file. Two small pieces give that:

* `LocatingParser` records where each op's text starts as a `FileLineColLoc` (unless the text
  gave an explicit `loc(...)` other than `loc(unknown)`). Locations are printed only with `--print-debuginfo`, so output
  does not change.
* `LocatingParser` also lexes string literals with an equivalent pattern that cannot
  backtrack: xDSL 0.74's `(?:[^"...]+|...)*"` takes exponential time on an unterminated
  string (`"tensor<...` on a long line), so a one-character typo made `ipu-opt` hang.
* `check_text_limits(text, name)`, before the parser sees the text, bounds what would cost
  more than the text's size (`device/limits.py`): brackets nested deeper than `MAX_NESTING`
  (the parser recurses per level and Python's stack ends near 150 regions) and `dense<...>`
  attributes claiming more than `MAX_DENSE_ELEMENTS` elements (xDSL expands a splat into a
  list entry per element). Each is a located parse error naming the limit; it runs in one
  linear pass. A RecursionError that still escapes the parser is a parse error too.
* `verify_with_locations(module)` verifies; on failure it finds the innermost op whose own
  verification fails and re-raises its error prefixed with that op's location.
"""

from __future__ import annotations

import bisect
import re

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span

from device.limits import MAX_DENSE_ELEMENTS, MAX_NESTING
from ipu_dialects.locations import located

# xDSL's string-literal pattern without the nested `+`: one way to match each character.
STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


class LocatingParser(Parser):
    """A Parser that gives every op the file:line:col where its text starts."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self.lexer._unescaped_characters_regex = STRING_LITERAL  # type: ignore[attr-defined]  # linear time, same tokens
        self.file_name = StringAttr(name)
        # lines before this chunk of a --split-input-file input
        self.line_offset = line_offset
        self.line_starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):  # keep an explicit loc(...), fused ones too
            line = bisect.bisect_right(self.line_starts, start)
            column = start - self.line_starts[line - 1] + 1
            op.location = FileLineColLoc(
                self.file_name, IntAttr(line + self.line_offset), IntAttr(column)
            )
        return op


# what the nesting scan looks at: string literals and comments (skipped), `->`, brackets
NESTING_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|->|[(\[{<)\]}>]')
OPENERS, CLOSERS = frozenset("([{<"), frozenset(")]}>")
DENSE = re.compile(r'dense<(?:[^<>"]|"(?:[^"\\\n]|\\.)*")*>\s*:\s*(?:tensor|vector)<([0-9x?]*)')


def check_text_limits(text: str, name: str) -> None:
    """Raise a located `ParseError` for nesting deeper than `MAX_NESTING` or a `dense<...>`
    of more than `MAX_DENSE_ELEMENTS` elements (see the module docstring)."""
    def error(position: int, message: str) -> ParseError:
        return ParseError(Span(position, position + 1, Input(text, name)), message)

    depth = 0
    for token in NESTING_TOKENS.finditer(text):
        bracket = token.group()
        if bracket in OPENERS:
            depth += 1
            if depth > MAX_NESTING:
                raise error(token.start(), f"brackets nested more than {MAX_NESTING} deep "
                                           "(MAX_NESTING, device/limits.py)")
        elif bracket in CLOSERS:
            depth = max(depth - 1, 0)
    for match in DENSE.finditer(text):
        elements = 1
        for dim in match.group(1).split("x"):
            if dim.isdigit():
                elements *= int(dim)
        if elements > MAX_DENSE_ELEMENTS:
            raise error(match.start(), f"dense attribute of {elements} elements (at most "
                                       f"{MAX_DENSE_ELEMENTS}: MAX_DENSE_ELEMENTS, device/limits.py)")


def parse_located_module(
    ctx: Context, text: str, name: str, line_offset: int = 0, allow_implicit_module: bool = True
) -> ModuleOp:
    check_text_limits(text, name)
    try:
        return LocatingParser(ctx, text, name, line_offset).parse_module(allow_implicit_module)
    except RecursionError:  # a backstop: MAX_NESTING keeps the parser well inside the stack
        raise ParseError(Span(0, 1, Input(text, name)), "the text nests too deeply to parse "
                         f"(MAX_NESTING, device/limits.py: {MAX_NESTING})") from None


def first_failing_op(op: Operation) -> tuple[Operation, VerifyException] | None:
    """The innermost op (children before parents, in program order) whose own checks fail.

    The same order as xDSL's verifier, which verifies nested ops before the parent's verify_,
    so the error found here is the one `module.verify()` reports.
    """
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                if (found := first_failing_op(child)) is not None:
                    return found
    try:
        op.verify(verify_nested_ops=False)
    except VerifyException as error:
        return op, error
    return None


def located_message(op: Operation, message: str) -> str:
    """`file:line:col: error: <op>: message` (op name added when the message lacks it)."""
    if op.name not in message:
        message = f"{op.name}: {message}"
    return located(op, message)


def verify_with_locations(module: Operation) -> None:
    """`module.verify()`, but a failure names the source position of the failing op."""
    try:
        module.verify()
    except VerifyException:
        found = first_failing_op(module)
        if found is None:  # a block-level check (e.g. an empty block): no op to point at
            raise
        op, op_error = found
        located = VerifyException(located_message(op, str(op_error)))
        for note in getattr(op_error, "__notes__", ()):  # xDSL's marked IR, for ipu-opt
            located.add_note(note)
        raise located from None
