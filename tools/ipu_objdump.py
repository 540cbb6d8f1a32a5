"""`ipu-objdump`: disassemble exchange-row words into the spec's text form.

Input: hex words as arguments, placed at `--address` (default 0, word aligned); or `--file
PATH` (`-` for stdin: whitespace-separated hex, `#` comments, and each `# row at ADDR: N
words` header, as `ipu-as` writes for a listing of several rows, starts a new row at ADDR;
words before any header are placed at `--address`); or `--package DIR --tile N` (every row
segment of that tile's image, at its slot). For each row it prints a header and one line per
instruction (`ipu-objdump --address 0x4c008 f54a0109 19015000`):

    # row at 0x4c008: 2 words, 43 events
    0x0004c008: f54a0109 19015000  sendpicp 42, 0x14021, 1, 0, xpic = 0x640, pic = 0x15000  # events [0, 43); sends 43 words from 0x14021 dir 1; XPIC=1600 at 0; PIC=0x15000 at 0

The address column is the instruction's byte address; the words follow; `#` starts the
event interval and its effects (from `device.exchange_timeline`). `ipu-as` reads this
listing back (it ignores the address/word columns and comments and places each row at its
`# row at` header), so `ipu-as(ipu-objdump(words)) == words`, row by row for a package tile.

Exit status: 0; 1 with a diagnostic when a word cannot be read or decoded, or a row has no
valid event timeline (the decoded instructions are still listed); 2 (a usage error,
`tools/usage.py`) when no input or several inputs are given, for a package that does not pass
the package schema (`PackageError`, naming the file and field), a tile outside the package,
`--tile` without `--package` or `--package` without `--tile`, or a misaligned or
non-integer `--address`.
"""  # noqa: E501 (the listing line above is shown as the tool prints it)

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from device.exchange_timeline import (
    XPIC_MUX_PAIR,
    RowTimeline,
    TimelineError,
    instruction_intervals,
    row_timeline,
)
from device.isa import DecodeError, Instruction, decode_at, format_instruction
from device.target import WORD_BYTES
from tools.usage import EXIT_USAGE, UsageError
from tools.version import version_callback

app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


class InputError(Exception):
    """Unreadable input (exit 1)."""


# `# row at 0x4c000: 4 words` (objdump's own header, and what ipu-as writes per row).
ROW_HEADER = re.compile(r"^\s*#\s*row at (0x[0-9a-fA-F]+|[0-9]+):\s*[0-9]+ words?\b")


def parse_words(tokens: list[str]) -> list[int]:
    words = []
    for token in tokens:
        text = token.lower().removeprefix("0x")
        try:
            value = int(text, 16)
        except ValueError:
            raise InputError(f"'{token}' is not a hexadecimal word") from None
        if not 0 <= value <= 0xFFFFFFFF or len(text) > 8:
            raise InputError(f"'{token}' does not fit in 32 bits")
        words.append(value)
    return words


def read_word_file(path: Path, address: int) -> list[tuple[int, list[int]]]:
    """The rows of a word file (`-` = stdin): one per `# row at` header, plus any words
    before the first header, at `address`."""
    text = sys.stdin.read() if str(path) == "-" else path.read_text()
    segments: list[tuple[int, list[str]]] = [(address, [])]
    for line in text.splitlines():
        header = ROW_HEADER.match(line)
        if header is not None:
            base = checked_address(int(header.group(1), 0), f"'{line.strip()}'", InputError)
            segments.append((base, []))
            continue
        segments[-1][1].extend(line.split("#", 1)[0].split())
    if len(segments) > 1 and not segments[0][1]:
        segments.pop(0)
    return [(base, parse_words(tokens)) for base, tokens in segments]


def checked_address(address: int, what: str, error: type[Exception] = UsageError) -> int:
    """Rows are word aligned; a `sendpicp` inside one checks its own 8-byte alignment."""
    if address < 0 or address % WORD_BYTES:
        raise error(f"{what}: row address {address:#x} is not a {WORD_BYTES}-byte aligned "
                    "byte address")
    return address


def decode_prefix(words: list[int], base_address: int) -> tuple[list[Instruction], DecodeError | None]:
    """Decode as far as possible: the instructions before the first bad word, and the error."""
    instrs: list[Instruction] = []
    index = 0
    while index < len(words):
        try:
            instr = decode_at(words, index, base_address + WORD_BYTES * index)
        except DecodeError as error:
            return instrs, error
        instrs.append(instr)
        index += instr.words
    return instrs, None


def effects(timeline: RowTimeline | None, position: int) -> list[str]:
    if timeline is None:
        return []
    span = timeline.spans[position]
    notes = []
    for send in timeline.sends:
        if span.start_event <= send.start_event < span.end_event:
            # words, and for 64-bit items how many (one per event)
            items = f" as {send.events} 64-bit item{'s' if send.events != 1 else ''}"
            notes.append(
                f"sends {send.words} word{'s' if send.words != 1 else ''}"
                f"{items if send.width == 2 else ''} from {send.address:#x} dir {send.direction}"
            )
    for control in timeline.controls:
        if span.start_event <= control.event < span.end_event:
            value = str(control.value) if control.kind == "xpic" else f"{control.value:#x}"
            pair = " (pair mux)" if control.kind == "xpic" and control.selector == XPIC_MUX_PAIR else ""
            notes.append(f"{control.kind.upper()}={value}{pair} at {control.event}")
    return notes


def disassemble(words: list[int], base_address: int = 0) -> tuple[str, str | None]:
    """The listing of one row and its error: the decode error, else the timeline error
    (None when the row decodes and has a valid timeline)."""
    instrs, error = decode_prefix(words, base_address)
    try:
        timeline = row_timeline(instrs)
        timeline_error = None
    except TimelineError as problem:
        timeline, timeline_error = None, str(problem)
    intervals = instruction_intervals(instrs)
    total = intervals[-1][1] if intervals else 0
    lines = [f"# row at {base_address:#x}: {len(words)} words, {total} events"]
    index = 0
    for position, instr in enumerate(instrs):
        address = base_address + WORD_BYTES * index
        hex_words = " ".join(f"{w:08x}" for w in words[index : index + instr.words])
        start, end = intervals[position]
        comment = "; ".join([f"events [{start}, {end})", *effects(timeline, position)])
        lines.append(f"{address:#010x}: {hex_words:<17}  {format_instruction(instr):<52}  # {comment}")
        index += instr.words
    message = None
    if timeline_error is not None:
        message = f"row at {base_address:#x}: timeline error: {timeline_error}"
        lines.append(f"# timeline error: {timeline_error}")
    if error is not None:
        message = f"row at {base_address:#x}: decode error at {error}"
        lines.append(f"# {message}")
    return "\n".join(lines) + "\n", message


def load_segments(words: list[str] | None, file: Path | None, package: Path | None,
                  tile: int | None, address: int) -> list[tuple[int, list[int]]]:
    sources = sum(x is not None and x != [] for x in (words, file, package))
    if sources != 1:
        raise UsageError("give exactly one of: hex words, --file, or --package with --tile")
    if tile is not None and package is None:
        raise UsageError("--tile needs --package")
    if package is not None:
        if tile is None:
            raise UsageError("--package needs --tile")
        return package_segments(package, tile)
    address = checked_address(address, "--address")
    if file is not None:
        return read_word_file(file, address)
    return [(address, parse_words(words or []))]


def package_segments(package: Path, tile: int) -> list[tuple[int, list[int]]]:
    from device.package import Package

    loaded = Package.load(package, max_model_seconds=math.inf)  # listed, never run
    if not 0 <= tile < loaded.tiles:
        raise UsageError(f"--tile {tile} is outside the package {package}, which has "
                         f"{loaded.tiles} tiles (0 .. {loaded.tiles - 1})")
    return [(int(addr), [int(w) for w in row]) for addr, row in loaded.tile_image(tile)]


def parse_address(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise UsageError(f"--address '{text}' is not an integer") from None


@app.command()
def objdump(
    words: Annotated[list[str] | None, typer.Argument(help="hex words of one row")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="file of hex words ('-': stdin)")] = None,
    package: Annotated[Path | None, typer.Option("--package", help="package directory")] = None,
    tile: Annotated[int | None, typer.Option("--tile", help="tile whose image to disassemble")] = None,
    address: Annotated[str, typer.Option("--address", help="byte address of the row")] = "0",
    version: Annotated[bool, typer.Option(
        "--version", callback=version_callback("ipu-objdump"), is_eager=True,
        help="print the version and exit")] = False,
) -> None:
    """Disassemble exchange rows with their event intervals and effects."""
    from device.package import PackageError

    try:
        segments = load_segments(words, file, package, tile, parse_address(address))
    except (UsageError, PackageError) as error:
        typer.echo(f"ipu-objdump: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    except (InputError, OSError, ValueError) as error:  # ValueError: non-UTF-8, bad package
        typer.echo(f"ipu-objdump: {error}", err=True)
        raise typer.Exit(1) from None
    if not segments and package is not None:  # say so, rather than print nothing
        typer.echo(f"# tile {tile} of {package} holds no exchange rows")
    failed = False
    for segment_address, row in segments:
        listing, problem = disassemble(row, segment_address)
        typer.echo(listing, nl=False)
        if problem is not None:
            typer.echo(f"ipu-objdump: {problem}", err=True)
            failed = True
    if failed:
        raise typer.Exit(1)


def main() -> None:
    app(prog_name="ipu-objdump")


if __name__ == "__main__":
    main()
