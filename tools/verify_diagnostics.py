"""`ipu-opt --verify-diagnostics`, as `mlir-opt` does it: the diagnostics a run produces are
matched against `expected-*` annotations in the input, and any difference fails the run.

An annotation is a comment anywhere on a line of the input:

    // expected-error {{text}}          a diagnostic on this line whose message contains text
    // expected-error @+1 {{text}}      ... on the next line (@-2: two lines up)
    // expected-error @above {{text}}   ... on the closest line above that is not an annotation
    // expected-error @below {{text}}   ... on the closest line below that is not an annotation
    // expected-error @unknown {{text}} ... with no source location
    // expected-error-re {{a {{[0-9]+}} b}}   text with {{regex}} parts (Python `re` syntax)

`error`, `warning`, `note` and `remark` are the kinds. A diagnostic matches an annotation of its
kind, line and text that no earlier diagnostic matched; `file:line:col: note: ...` lines after
an error are notes of their own. The run fails (exit status 1) when a diagnostic matches no
annotation ("unexpected error") or an annotation matches no diagnostic ("expected error ...
was not produced"), with one located message per difference on stderr; otherwise it succeeds
and prints nothing but the output of the chunks that compiled. A malformed annotation (no
`{{...}}`, an offset that points outside the input) is a failure too.

With `--split-input-file` every chunk is one run: its annotations are matched against its
diagnostics only; line numbers are those of the whole input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KINDS = ("error", "warning", "note", "remark")

ANNOTATION = re.compile(
    r"expected-(?P<kind>error|warning|note|remark)(?P<re>-re)?"
    r"(?:\s*@(?P<where>[+-]\d+|above|below|unknown))?\s*\{\{(?P<text>.*)\}\}\s*$")
# A comment that starts with `expected-<kind>` is meant as an annotation: malformed, it fails.
STARTS = re.compile(r"^[^/]*//\s*expected-(?:error|warning|note|remark)\b")
LOCATED = re.compile(
    r"^(?P<file>[^\n]*?):(?P<line>\d+):(?P<column>\d+): (?P<kind>error|warning|note|remark): ",
    re.M)


@dataclass
class Expected:
    kind: str
    line: int | None  # None: @unknown
    text: str
    pattern: re.Pattern[str] | None  # expected-*-re
    at: int  # the annotation's own line
    matched: bool = False

    def matches(self, kind: str, line: int | None, message: str) -> bool:
        if self.matched or kind != self.kind or line != self.line:
            return False
        if self.pattern is not None:
            return self.pattern.search(message) is not None
        return self.text in message


@dataclass
class Diagnostic:
    kind: str
    line: int | None  # None: no location in the input
    column: int | None
    message: str


@dataclass
class Expectations:
    expected: list[Expected] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # malformed annotations, located


def annotation_regex(text: str) -> re.Pattern[str]:
    """`a {{[0-9]+}} b`: literal text with `{{...}}` regex parts, as mlir-opt's `-re`."""
    parts, position = [], 0
    for match in re.finditer(r"\{\{(.*?)\}\}", text):
        parts.append(re.escape(text[position:match.start()]))
        parts.append(f"(?:{match.group(1)})")
        position = match.end()
    parts.append(re.escape(text[position:]))
    return re.compile("".join(parts))


def expectations(text: str, name: str, first_line: int = 1) -> Expectations:
    """The annotations of `text`, whose first line is line `first_line` of the input `name`."""
    lines = text.split("\n")
    found = Expectations()
    # Lines that hold only annotations (a comment): @above and @below skip them.
    is_annotation = [line.lstrip().startswith("//") and (ANNOTATION.search(line) is not None
                                                         or STARTS.search(line) is not None)
                     for line in lines]
    pending_below: list[Expected] = []
    for index, line in enumerate(lines):
        number = first_line + index
        if not is_annotation[index]:
            for waiting in pending_below:
                waiting.line = number
            pending_below.clear()
        match = ANNOTATION.search(line)
        if match is None and STARTS.search(line) is None:
            continue
        if match is None:
            found.problems.append(f"{name}:{number}: error: malformed annotation (want "
                                  f"expected-<kind>[-re] [@+N|@-N|@above|@below|@unknown] "
                                  f"{{{{text}}}}): {line.strip()}")
            continue
        where, body = match.group("where"), match.group("text")
        try:
            pattern = annotation_regex(body) if match.group("re") else None
        except re.error as error:
            found.problems.append(f"{name}:{number}: error: invalid regex in annotation: {error}")
            continue
        expected = Expected(match.group("kind"), number, body, pattern, number)
        if where == "unknown":
            expected.line = None
        elif where == "above":
            above = [i for i in range(index) if not is_annotation[i]]
            if not above:
                found.problems.append(f"{name}:{number}: error: @above with no line above")
                continue
            expected.line = first_line + above[-1]
        elif where == "below":
            pending_below.append(expected)
        elif where is not None:
            expected.line = number + int(where)
            if not first_line <= expected.line < first_line + len(lines):
                found.problems.append(f"{name}:{number}: error: {where} points at line "
                                      f"{expected.line}, outside the input")
                continue
        found.expected.append(expected)
    for waiting in pending_below:
        found.problems.append(f"{name}:{waiting.at}: error: @below with no line below")
        found.expected.remove(waiting)
    return found


def parse_diagnostics(text: str, name: str) -> list[Diagnostic]:
    """Diagnostics from a diagnostic's text: each `file:line:col: kind: ` starts one (a
    position in another file counts as none); text before the first is one unlocated error."""
    starts = list(LOCATED.finditer(text))
    found: list[Diagnostic] = []
    head = text[:starts[0].start()] if starts else text
    if head.strip():
        found.append(Diagnostic("error", None, None, head.strip()))
    for i, start in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        here = start.group("file") == name
        found.append(Diagnostic(start.group("kind"),
                                int(start.group("line")) if here else None,
                                int(start.group("column")) if here else None,
                                text[start.end():end].strip()))
    return found


def verify(found: Expectations, diagnostics: list[Diagnostic], name: str) -> list[str]:
    """The differences between the expected and the produced diagnostics, one message each."""
    failures = list(found.problems)
    for diagnostic in diagnostics:
        match = next((e for e in found.expected
                      if e.matches(diagnostic.kind, diagnostic.line, diagnostic.message)), None)
        if match is not None:
            match.matched = True
            continue
        where = (f"{name}:{diagnostic.line}:{diagnostic.column}" if diagnostic.line is not None
                 else f"{name}: (no location)")
        failures.append(f"{where}: error: unexpected {diagnostic.kind}: {diagnostic.message}")
    for expected in found.expected:
        if not expected.matched:
            where = "@unknown" if expected.line is None else f"on line {expected.line}"
            failures.append(f'{name}:{expected.at}: error: expected {expected.kind} "'
                            f'{expected.text}" {where} was not produced')
    return failures
