"""The supervisor assembly listing of a package (`-t ipu-asm`, `program.s`), with
provenance comments.

The assembly is printed from the finalized package (`format_assembly`; the package writer
stores it as `Package.assembly`), so it shows exactly what the device
model runs. Tiles whose programs are identical share one listing (above
`SHARED_LISTING_PROGRAMS` distinct programs, tiles whose programs have the same shape do,
with their differing fields in a table: `tools/asm_shared.py`); repeated statements whose
fields change by a constant step are printed as loops (`tools.asm_loops`); the rows are
printed once, as `.word` data in an `.exchange_rows` section, with their disassembly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from device.package import ExchangeStep, KernelStep, LoopStep, Package, RunStep, flat_steps
from tools.asm_loops import COMMENT_COLUMN, Leaf, Node, Strided, fold, leaf, leaf_skeleton, render
from tools.asm_shared import SHARED_LISTING_PROGRAMS, shared_listing
from tools.asm_statements import (
    EXCHANGE_KINDS,
    EXCHANGE_TEXT,
    format_tile_set,
    kernel_text,
    package_nodes,
    tiles_by_signature,
    with_comment,
)


def tile_groups(package: Package) -> list[np.ndarray]:
    """Tiles with identical programs (same rows, same kernel calls), in tile order."""
    columns: list[np.ndarray] = []
    for _, step in flat_steps(package.steps):
        if isinstance(step, LoopStep):
            continue
        if isinstance(step, ExchangeStep):
            columns.append(step.row_id.astype(np.int64))
        else:
            active = np.full(package.tiles, -1, dtype=np.int64)
            active[step.tiles] = np.arange(len(step.tiles))
            pointer_key = np.full(package.tiles, -1, dtype=np.int64)
            pointer_key[step.tiles] = _row_keys(step.pointers)
            columns.extend([active >= 0, pointer_key])
    return tiles_by_signature(columns, package.tiles)


def _row_keys(pointers: np.ndarray) -> np.ndarray:
    _, keys = np.unique(pointers, axis=0, return_inverse=True)
    return keys.reshape(-1)


@dataclass
class AsmContext:
    package: Package
    symbols: list[str]
    instructions: list[list]  # each row decoded once, from its words
    prepared: dict = field(default_factory=dict)  # PreparedStep by id of each program step


@dataclass
class PreparedStep:
    """What every tile's statement for one step shares, computed once per step."""

    sync: Leaf | None  # exchange steps
    text: str = ""  # kernel steps: the statement with `{}` for its numbers
    kinds: tuple[str, ...] = ()
    skeleton: int = -1
    iteration: tuple[int, ...] = ()
    numbers: dict[int, tuple[int, ...]] | None = None  # per tile on which the kernel runs


def prepare_step(step: ExchangeStep | KernelStep) -> PreparedStep:
    if isinstance(step, ExchangeStep):
        text, iteration = with_comment("sync", step.provenance)
        return PreparedStep(leaf(text, iteration, ("dec",) * len(iteration)))
    text, kinds, iteration = kernel_text(step)
    scalars = tuple(int(v) for v in step.scalars) + iteration
    numbers = {int(tile): tuple(pointers) + scalars
               for tile, pointers in zip(step.tiles.tolist(), step.pointers.tolist(),
                                         strict=True)}
    return PreparedStep(None, text, kinds, leaf_skeleton(text, kinds), iteration, numbers)


def step_leaves(prepared: PreparedStep, step: RunStep, tile: int) -> list[Leaf]:
    """Tile `tile`'s statements for one exchange or kernel step: a sync and its row, or the
    call (none where the tile takes no part)."""
    if prepared.sync is not None:
        assert isinstance(step, ExchangeStep)  # only exchange steps are prepared with a sync
        row = int(step.row_id[tile])
        if row < 0:
            return [prepared.sync]
        return [prepared.sync, Leaf(EXCHANGE_TEXT, (row, step.row_address), EXCHANGE_KINDS,
                                    leaf_skeleton(EXCHANGE_TEXT, EXCHANGE_KINDS))]
    if prepared.numbers is None or tile not in prepared.numbers:
        return []
    return [Leaf(prepared.text, prepared.numbers[tile], prepared.kinds, prepared.skeleton)]


def program_nodes(ctx: AsmContext, tile: int) -> list[Strided]:
    """Tile `tile`'s statements."""
    return package_nodes(ctx.package.steps,
                         lambda step: step_leaves(ctx.prepared[id(step)], step, tile))


def program_lines(ctx: AsmContext, tile: int, loops: bool = True) -> list[str]:
    if not loops:
        return render(list(unrolled_leaves(ctx, tile)), ctx.symbols)
    nodes: list[Node] = [node for node, _ in program_nodes(ctx, tile)]
    return render(fold(nodes), ctx.symbols)


def unrolled_leaves(ctx: AsmContext, tile: int) -> list[Leaf]:
    """Every statement as the device runs it, loops unrolled (what the loops expand to)."""
    return [statement for step in ctx.package.executed()
            for statement in step_leaves(prepare_step(step), step, tile)]


def row_section(ctx: AsmContext) -> list[str]:
    lines = ["", "    .section .exchange_rows"]
    for index, (symbol, words, instrs) in enumerate(zip(ctx.symbols, ctx.package.rows,
                                                        ctx.instructions, strict=True)):
        lines.append(f"{f'.L{symbol}:':<{COMMENT_COLUMN}} # row[{index}]")
        lines.extend(word_lines(words, instrs))
    return lines


def word_lines(words: np.ndarray, instrs: list) -> list[str]:
    """One `.word` line per instruction (a `sendpicp` carries two words), with its text."""
    from device import isa

    lines = []
    index = 0
    for instr in instrs:
        chunk = ", ".join(f"{int(w):#010x}" for w in words[index: index + instr.words])
        lines.append(f"    .word {chunk:<24}# {isa.format_instruction(instr)}")
        index += instr.words
    return lines


HEADER = """\
# Supervisor code per group of tiles with identical programs, then the exchange rows.
# `loop iN, R` .. `endloop` runs its body R times with iN = 0 .. R-1; a field written
# `base+stride*iN` takes that value in iteration iN, and `row[k]` is the row labelled
# `# row[k]` below. This listing is for reading: `ipu-as` assembles exchange instructions
# only, so it stops at the first supervisor line (`sync`, `exchange`, `call`, `loop`); the
# rows' instruction text (the comment on each data line) assembles back to their words,
# as does `ipu-objdump --package DIR --tile T`. When more than 16 tiles run distinct
# programs, tiles that take part in the same steps share one listing: a field that differs
# between them reads `field[N]`, and the table after the listing gives its value per tile."""


def format_assembly(package: Package, loops: bool = True,
                    shared_above: int = SHARED_LISTING_PROGRAMS) -> str:
    """The listing; `loops=False` prints every iteration (what the loops expand to), one
    listing per distinct program; above `shared_above` distinct programs (with loops),
    one listing per program shape with field tables."""
    from device import isa

    symbols = package.metadata.get("row_symbols") or [f"row{i}" for i in range(len(package.rows))]
    instructions = [isa.decode([int(w) for w in row]) for row in package.rows]
    lines = [*HEADER.splitlines(), f"# ipu-asm: function @{package.function}, "
             f"{package.tiles} tiles, target {package.target}", "    .text"]
    groups = tile_groups(package)
    if loops and len(groups) > shared_above:
        ctx = AsmContext(package, symbols, instructions)
        lines.extend(shared_listing(package, symbols))
        lines.extend(row_section(ctx))
        return "\n".join(lines) + "\n"
    ctx = AsmContext(package, symbols, instructions,
                     {id(s): prepare_step(s) for _, s in flat_steps(package.steps)
                      if not isinstance(s, LoopStep)})
    for group in groups:
        lines.append("")
        lines.append(f"# tiles {format_tile_set(group)}")
        lines.append(f"tile_{int(group[0])}:")
        lines.extend(program_lines(ctx, int(group[0]), loops))
        lines.append("    ret")
    lines.extend(row_section(ctx))
    return "\n".join(lines) + "\n"
