"""`-t ipu-asm` folds repeated statements into loops; expanding them gives the flat listing.

Also pinned here: what `ipu-as` does with the listing (it stops at the first supervisor line
with a located diagnostic; each row's instruction text assembles back to the row's words),
and that `-t ipu-rows` never formats the assembly.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from e2e_support import ROW_PLANS
from typer.testing import CliRunner
from xdsl.parser import Parser

from device.package import ExchangeStep
from tools import asm_listing, ipu_as, package_writer
from tools.asm_loops import Loop, fold, leaf, render
from tools.ipu_run import compile_module, make_context

GEMM = """
func.func @gemm(%a: tensor<64x512xf16>, %b: tensor<512x256xf16>) -> tensor<64x256xf16> {
  %c = graph.gemm %a, %b : (tensor<64x512xf16>, tensor<512x256xf16>) -> tensor<64x256xf16>
  func.return %c : tensor<64x256xf16>
}
"""


@pytest.fixture(scope="module")
def package():
    # the row plan: its j and k loops are the nest the listing test below expects
    return compile_module(Parser(make_context(), GEMM).parse_module(), 4, "pad",
                          with_assembly=False, catalog=ROW_PLANS)


TERM = re.compile(r"([+-])(0x[0-9a-f]+|\d+)\*(i\d+)")
NUMBER_WITH_TERMS = re.compile(r"(0x[0-9a-f]+|\d+)((?:[+-](?:0x[0-9a-f]+|\d+)\*i\d+)+)")


def substitute(line: str, counters: dict[str, int], rows: dict[int, str]) -> str:
    def value(match: re.Match) -> str:
        base = match.group(1)
        total = int(base, 0)
        for sign, stride, name in TERM.findall(match.group(2)):
            total += (1 if sign == "+" else -1) * int(stride, 0) * counters[name]
        return f"{total:#x}" if base.startswith("0x") else str(total)

    line = NUMBER_WITH_TERMS.sub(value, line)
    if not line.strip().startswith("exchange "):  # row labels carry `# row[k]` comments
        return line
    return re.sub(r"row\[(\d+)\]", lambda m: f".L{rows[int(m.group(1))]}", line)


def expand(listing: str) -> list[str]:
    """The listing with every loop unrolled, written independently of `tools.asm_loops`."""
    lines = listing.splitlines()
    rows = {int(m.group(2)): m.group(1) for m in
            (re.match(r"\.L(\S+):\s+# row\[(\d+)\]", line) for line in lines) if m}

    def run(start: int, counters: dict[str, int]) -> tuple[list[str], int]:
        out, index = [], start
        while index < len(lines):
            line = lines[index]
            loop = re.match(r"\s*loop (i\d+), (\d+)$", line)
            if loop:
                body_end = index
                for iteration in range(int(loop.group(2))):
                    body, body_end = run(index + 1, {**counters, loop.group(1): iteration})
                    out.extend(body)
                index = body_end + 1
                continue
            if line.strip() == "endloop":
                return out, index
            out.append(substitute(line, counters, rows).strip())
            index += 1
        return out, index

    return run(0, {})[0]


def statements(listing: str) -> list[str]:
    """Statement lines with whitespace normalised (padding before comments differs)."""
    return [re.sub(r"\s+", " ", line.strip()) for line in listing
            if not line.startswith("#")]


def test_a_grid_plan_listing_expands_to_its_flat_listing():
    grid = compile_module(Parser(make_context(), GEMM).parse_module(), 16, "pad",
                          with_assembly=False, catalog=("amp_gemm_f16_grid",))
    looped = asm_listing.format_assembly(grid)
    flat = asm_listing.format_assembly(grid, loops=False)
    assert "loop i0" in looped  # the panel loop stays a loop
    assert statements(expand(looped)) == statements(line.strip() for line in flat.splitlines())


def test_the_listing_has_loops_and_expands_to_the_flat_listing(package):
    looped = asm_listing.format_assembly(package)
    flat = asm_listing.format_assembly(package, loops=False)
    assert "loop i0, 7" in looped and "loop i1, 7" in looped  # nested: j outer, k inner
    assert len(looped.splitlines()) * 2 < len(flat.splitlines())
    assert statements(expand(looped)) == statements(line.strip() for line in flat.splitlines())


def test_fold_and_render_round_trip_negative_strides_and_tails():
    leaves = [leaf("call f, p={}", (0x100 - 0x10 * n,), ("hex",)) for n in range(5)]
    leaves.append(leaf("sync", (), ()))
    folded = fold(leaves)
    assert isinstance(folded[0], Loop) and folded[0].count == 5 and folded[1] == leaves[5]
    lines = render(folded, [])
    assert lines[:2] == ["    loop i0, 5", "        call f, p=0x100-0x10*i0"]
    assert statements(expand("\n".join(lines))) == statements(
        render(leaves, []))


def test_ipu_as_stops_at_the_first_supervisor_line_with_its_line_number(package):
    listing = asm_listing.format_assembly(package)
    first = next(number for number, line in enumerate(listing.splitlines(), start=1)
                 if line.strip().startswith("sync"))
    result = CliRunner().invoke(ipu_as.app, [], input=listing)
    assert result.exit_code == 1
    assert f"line {first}: unknown mnemonic 'sync'" in result.output
    assert "ipu-as assembles exchange instructions" not in result.output  # the header says it
    assert "`ipu-as` assembles exchange instructions\n# only" in listing


def test_each_rows_instruction_text_assembles_back_to_its_words(package):
    listing = asm_listing.format_assembly(package).split(".section .exchange_rows")[1]
    texts: dict[str, list[str]] = {}
    for line in listing.splitlines():
        if line.startswith(".L"):
            current = texts.setdefault(line.split(":")[0][2:], [])
        elif ".word" in line:
            current.append(line.split("#", 1)[1].strip())
    symbols = package.metadata["row_symbols"]
    address = {}
    for step in package.steps:
        if isinstance(step, ExchangeStep):
            for row in np.unique(step.row_id[step.row_id >= 0]).tolist():
                address.setdefault(row, step.row_address)
    assert len(texts) == len(package.rows)
    for row, words in enumerate(package.rows):
        assembled = ipu_as.assemble("\n".join(texts[symbols[row]]), address[row])
        assert assembled == [int(w) for w in words]


def test_ipu_rows_does_not_format_the_assembly(monkeypatch):
    from passes.ipu_pipeline import IpuPipelinePass
    from tools.emit_rows import IpuRowsTarget
    from tools.ipu_opt import IpuOptMain  # noqa: F401  (registers the pipeline's passes)

    module = Parser(make_context(), GEMM).parse_module()
    IpuPipelinePass(tiles=4).apply(make_context(), module)

    def refuse(*args, **kwargs):
        raise AssertionError("-t ipu-rows formatted the assembly")

    monkeypatch.setattr(package_writer, "format_assembly", refuse)  # where the writer looks it up
    import io

    output = io.StringIO()
    IpuRowsTarget().emit(make_context(), module, output)
    assert output.getvalue().startswith("# ipu-rows: function @gemm")


def program_blocks(listing: str) -> list[tuple[list[str], list[str]]]:
    """(program lines between `tile_N:` and `ret`, the table lines after it) per listing."""
    text = listing.split(".section .exchange_rows")[0].splitlines()
    starts = [n for n, line in enumerate(text) if re.match(r"tile_\d+:$", line)]
    blocks = []
    for start, stop in zip(starts, [*starts[1:], len(text)], strict=True):
        end = text.index("    ret", start)
        blocks.append((text[start + 1:end], text[end + 1:stop]))
    return blocks


def flat_program_of(flat: str, tile: int) -> list[str]:
    """The flat (unrolled) program of `tile`, from the `# tiles a-b,c` headers."""
    lines = flat.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("# tiles "):
            spans = [part.split("-") for part in line[len("# tiles "):].split(",")]
            if any(int(s[0]) <= tile <= int(s[-1]) for s in spans):
                end = lines.index("    ret", number)
                return statements(line.strip() for line in lines[number + 2:end])
    raise AssertionError(f"tile {tile} has no flat listing")


def test_a_shared_listing_with_field_tables_expands_to_each_tiles_flat_listing():
    grid = compile_module(Parser(make_context(), GEMM).parse_module(), 16, "pad",
                          with_assembly=False, catalog=("amp_gemm_f16_grid",))
    shared = asm_listing.format_assembly(grid, shared_above=0)
    flat = asm_listing.format_assembly(grid, loops=False)
    assert len(asm_listing.tile_groups(grid)) > 1  # the tiles' programs do differ
    rows_section = shared[shared.index("    .section .exchange_rows"):]
    covered = []
    for program, table in program_blocks(shared):
        header = next(line for line in table if line.startswith("# tile "))
        assert any("field[" in line.split("#")[0] for line in program)  # differing fields
        names = header.split()[2:]
        for entry in (line.split()[1:] for line in table if line.startswith("#   ")):
            tile, values = int(entry[0]), dict(zip(names, entry[1:], strict=True))
            filled = [re.sub(r"field\[\d+\]", lambda m, v=values: v[m.group(0)], line)
                      for line in program]
            expanded = expand("\n".join([*filled, rows_section]))
            program_only = expanded[:expanded.index(".section .exchange_rows")]
            assert statements(program_only) == flat_program_of(flat, tile), f"tile {tile}"
            covered.append(tile)
    assert sorted(covered) == list(range(16))


def test_few_distinct_programs_keep_one_listing_per_program(package):
    program = asm_listing.format_assembly(package).split(".section")[0].splitlines()
    assert not any("field[" in line.split("#")[0] for line in program)
    assert not any(line.startswith("# the fields of this listing") for line in program)
