"""`ipu-as`: assemble the spec's exchange text form into hex row words.

Reads exchange instructions, one per line (`sendpicp 42, 0x14021, 1, 0, xpic = 0x640,
pic = 0x15000`), from a file or stdin. `#` starts a comment; labels and directives are
skipped (including `.word` lines, so the `.exchange_rows` section of `-t ipu-asm` output,
whose instruction text is a comment, yields no words). An `ipu-objdump` listing is accepted
as is: its `0xADDR:` column and 8-digit word columns are skipped, and each
`# row at ADDR: N words ...` header starts a new row placed at ADDR (so a whole
`ipu-objdump --package P --tile T` listing assembles row by row, each row's `sendpicp`
alignment checked at its own address).

Instructions before any row header form one row at `--address` (default: the first listed
`0xADDR:` address, else 0). `--address` may also relocate the single row of a listing with
one header; with several rows each header decides its row's address.

Output: one word per line (8 hex digits). When the input has row headers, each row's words
are preceded by its header `# row at 0xADDR: N words`, which `ipu-objdump --file` reads back
as the row's address: `ipu-objdump --package P --tile T | ipu-as | ipu-objdump --file -`
prints the tile's listing again.

Exit status: 0, or 1 with a diagnostic naming the line (2 for a bad `--address`).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

from device.isa import AsmSyntaxError, EncodeError, encode, parse_instruction
from device.target import WORD_BYTES
from tools.ipu_objdump import checked_address, parse_address
from tools.usage import EXIT_USAGE, UsageError
from tools.version import version_callback

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])

# An objdump listing line: `0x0004c008: f54a0109 19015000  sendpicp ...`. Mnemonics all
# contain letters outside a-f, so an 8-hex-digit token is always a word column.
LISTING_PREFIX = re.compile(r"^\s*(0x[0-9a-fA-F]+):\s*((?:[0-9a-fA-F]{8}\s+)*)")
# Labels (`rhs_0:`) and directives (`.text`) of `-t ipu-asm` output carry no words.
LABEL_OR_DIRECTIVE = re.compile(r"^\s*(?:[A-Za-z_$][\w.$]*:|\.\w+.*)\s*$")
# A row header of an objdump listing (or of our own output): `# row at 0x4c000: 4 words...`.
# The word count is required so that `# row at 0x0: decode error ...` lines are not headers.
ROW_HEADER = re.compile(r"^\s*#\s*row at (0x[0-9a-fA-F]+|[0-9]+):\s*[0-9]+ words?\b")


@dataclass
class SourceRow:
    """The statements of one row: (line number, instruction text), and where it was placed."""

    address: int | None  # from its `# row at` header; None for instructions before any header
    header_line: int | None = None
    statements: list[tuple[int, str]] = field(default_factory=list)
    listed_address: int | None = None  # the first `0xADDR:` column in the row


def read_rows(text: str) -> list[SourceRow]:
    """Split the input into rows at `# row at` headers; drop comments, labels, directives."""
    rows = [SourceRow(None)]
    for number, line in enumerate(text.splitlines(), start=1):
        header = ROW_HEADER.match(line)
        if header is not None:
            rows.append(SourceRow(int(header.group(1), 0), number))
            continue
        line = line.split("#", 1)[0]
        match = LISTING_PREFIX.match(line)
        if match is not None:
            if rows[-1].listed_address is None:
                rows[-1].listed_address = int(match.group(1), 16)
            line = line[match.end():]
        if line.strip() and not LABEL_OR_DIRECTIVE.match(line):
            rows[-1].statements.append((number, line.strip()))
    if len(rows) > 1 and not rows[0].statements:  # nothing before the first header
        rows.pop(0)
    return rows


def place_rows(rows: list[SourceRow], address: int | None) -> list[int]:
    """The byte address of every row (see the module docstring for the rules)."""
    headed = [row for row in rows if row.header_line is not None]
    if address is not None and len(rows) > 1:
        raise AsmSyntaxError(
            f"--address {address:#x} cannot place {len(rows)} rows: each '# row at' header "
            f"gives its row's address (line {headed[0].header_line} is the first)"
        )
    bases = []
    for row in rows:
        if address is not None:
            bases.append(address)
        elif row.address is not None:
            bases.append(row.address)
        else:
            bases.append(row.listed_address if row.listed_address is not None else 0)
    return bases


def assemble_row(row: SourceRow, base: int) -> list[int]:
    if base % WORD_BYTES:
        where = f"line {row.header_line}: " if row.header_line is not None else ""
        raise AsmSyntaxError(f"{where}row address {base:#x} is not {WORD_BYTES}-byte aligned")
    if not row.statements:
        where = f"line {row.header_line}: " if row.header_line is not None else ""
        raise AsmSyntaxError(f"{where}the row at {base:#x} has no instructions")
    words: list[int] = []
    for number, statement in row.statements:
        try:
            instr = parse_instruction(statement)
            words.extend(encode([instr], base + WORD_BYTES * len(words)))
        except (AsmSyntaxError, EncodeError) as error:
            raise type(error)(f"line {number}: {error}") from None
    return words


def assemble_rows(text: str, address: int | None = None) -> list[tuple[int, list[int], bool]]:
    """(address, words, had_header) of every row in `text`; errors name the line."""
    rows = read_rows(text)
    if len(rows) == 1 and not rows[0].statements and rows[0].header_line is None:
        raise AsmSyntaxError("no exchange instructions in the input (labels, directives and "
                             "comments alone assemble to nothing)")
    bases = place_rows(rows, address)
    return [(base, assemble_row(row, base), row.header_line is not None)
            for row, base in zip(rows, bases)]


def assemble(text: str, address: int | None = None) -> list[int]:
    """Encode the single row in `text` (see `assemble_rows` for listings of several rows)."""
    rows = assemble_rows(text, address)
    if len(rows) != 1:
        raise AsmSyntaxError(f"the input has {len(rows)} rows; use assemble_rows")
    return rows[0][1]


def format_hex_words(rows: list[tuple[int, list[int], bool]]) -> str:
    """One word per line; rows that came with a header get `# row at 0xADDR: N words`."""
    lines = []
    for base, words, had_header in rows:
        if had_header:
            lines.append(f"# row at {base:#x}: {len(words)} words")
        lines.extend(f"{word:08x}" for word in words)
    return "".join(line + "\n" for line in lines)


@app.command()
def assemble_command(
    file: Annotated[Path | None, typer.Argument(help="assembly file (default: stdin)")] = None,
    address: Annotated[str | None, typer.Option("--address", help="byte address of the row")] = None,
    version: Annotated[bool, typer.Option(
        "--version", callback=version_callback("ipu-as"), is_eager=True,
        help="print the version and exit")] = False,
) -> None:
    """Assemble exchange instructions into hex words."""
    try:
        base = None if address is None else checked_address(parse_address(address), "--address")
    except UsageError as error:  # the same --address rules as ipu-objdump
        typer.echo(f"ipu-as: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    try:
        text = file.read_text() if file is not None else sys.stdin.read()
        rows = assemble_rows(text, base)
    except UnicodeDecodeError as error:
        typer.echo(f"ipu-as: the input is not UTF-8 text ({error.reason} at byte "
                   f"{error.start})", err=True)
        raise typer.Exit(1) from None
    except (AsmSyntaxError, EncodeError, OSError) as error:
        typer.echo(f"ipu-as: {error}", err=True)
        raise typer.Exit(1) from None
    typer.echo(format_hex_words(rows), nl=False)


def main() -> None:
    app(prog_name="ipu-as")


if __name__ == "__main__":
    main()
