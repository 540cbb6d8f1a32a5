"""`ipu-as`: assemble the spec's exchange text form into hex row words.

Reads one row, one instruction per line (`sendpicp 42, 0x14021, 1, 0, xpic = 0x640,
pic = 0x15000`), from a file or stdin. `#` starts a comment; labels and directives are
skipped (including `.word` lines, so the `.exchange_rows` section of `-t ipu-asm` output,
whose instruction text is a comment, yields no words); an `ipu-objdump` listing is
accepted as is (its `0xADDR:` column and 8-digit word columns are skipped), so
`ipu-as(ipu-objdump(words)) == words`. The row is encoded at `--address` (default: the
first listed address, else 0), which decides `sendpicp` alignment. Output: one word per line.

Exit status: 0, or 1 with a diagnostic naming the line.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from device.isa import AsmSyntaxError, EncodeError, encode, parse_instruction

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])

# An objdump listing line: `0x0004c008: f54a0109 19015000  sendpicp ...`. Mnemonics all
# contain letters outside a-f, so an 8-hex-digit token is always a word column.
LISTING_PREFIX = re.compile(r"^\s*(0x[0-9a-fA-F]+):\s*((?:[0-9a-fA-F]{8}\s+)*)")
# Labels (`rhs_0:`) and directives (`.text`) of `-t ipu-asm` output carry no words.
LABEL_OR_DIRECTIVE = re.compile(r"^\s*(?:[A-Za-z_$][\w.$]*:|\.\w+.*)\s*$")


def read_lines(text: str) -> tuple[list[tuple[int, str]], int | None]:
    """(line number, instruction text) for every non-empty line, and the first listed address."""
    statements = []
    first_address = None
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0]
        match = LISTING_PREFIX.match(line)
        if match is not None:
            if first_address is None:
                first_address = int(match.group(1), 16)
            line = line[match.end():]
        if line.strip() and not LABEL_OR_DIRECTIVE.match(line):
            statements.append((number, line.strip()))
    return statements, first_address


def assemble(text: str, address: int | None = None) -> list[int]:
    """Encode the row in `text`; raises `AsmSyntaxError`/`EncodeError` naming the line."""
    statements, listed = read_lines(text)
    if not statements:
        raise AsmSyntaxError("no exchange instructions in the input (labels, directives and "
                             "comments alone assemble to nothing)")
    base = address if address is not None else (listed if listed is not None else 0)
    instrs = []
    for number, statement in statements:
        try:
            instrs.append(parse_instruction(statement))
        except AsmSyntaxError as error:
            raise AsmSyntaxError(f"line {number}: {error}") from None
    words: list[int] = []
    for (number, _), instr in zip(statements, instrs):
        try:
            words.extend(encode([instr], base + 4 * len(words)))
        except EncodeError as error:
            raise EncodeError(f"line {number}: {error}") from None
    return words


@app.command()
def assemble_command(
    file: Annotated[Path | None, typer.Argument(help="assembly file (default: stdin)")] = None,
    address: Annotated[str | None, typer.Option("--address", help="byte address of the row")] = None,
) -> None:
    """Assemble exchange instructions into hex words."""
    try:
        text = file.read_text() if file is not None else sys.stdin.read()
        words = assemble(text, int(address, 0) if address is not None else None)
    except (AsmSyntaxError, EncodeError, ValueError, OSError) as error:
        typer.echo(f"ipu-as: {error}", err=True)
        raise typer.Exit(1) from None
    for word in words:
        typer.echo(f"{word:08x}")


def main() -> None:
    app(prog_name="ipu-as")


if __name__ == "__main__":
    sys.exit(main())
