"""The supervisor assembly listing of a package (`-t ipu-asm`, `program.s`), with
provenance comments.

The assembly is printed from the finalized package (`format_assembly`; the package writer
stores it as `Package.assembly`), so it shows exactly what the device
model runs. Tiles whose programs are identical share one listing; repeated statements whose
fields change by a constant step are printed as loops (`tools.asm_loops`); the rows are
printed once, as `.word` data in an `.exchange_rows` section, with their disassembly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from device.package import ExchangeStep, KernelStep, LoopStep, Package, RunStep, Step, flat_steps
from tools.asm_loops import COMMENT_COLUMN, Leaf, Node, fold, leaf, leaf_skeleton, loop, render


def format_tile_set(tiles: np.ndarray | list[int]) -> str:
    """`[0, 1, 2, 5]` -> `0-2,5`."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive tiles
    for tile in sorted(int(t) for t in tiles):
        if runs and tile == runs[-1][1] + 1:
            runs[-1][1] = tile
        else:
            runs.append([tile, tile])
    return ",".join(str(first) if first == last else f"{first}-{last}" for first, last in runs)


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
    if not columns:
        return [np.arange(package.tiles)]
    signature = np.stack(columns, axis=1)
    _, group_of_tile = np.unique(signature, axis=0, return_inverse=True)
    group_of_tile = group_of_tile.reshape(-1)
    order = sorted(set(group_of_tile.tolist()), key=lambda g: int(np.argmax(group_of_tile == g)))
    return [np.flatnonzero(group_of_tile == g) for g in order]


def _row_keys(pointers: np.ndarray) -> np.ndarray:
    _, keys = np.unique(pointers, axis=0, return_inverse=True)
    return keys.reshape(-1)


@dataclass
class AsmContext:
    package: Package
    symbols: list[str]
    instructions: list[list]  # each row decoded once, from its words
    prepared: dict = field(default_factory=dict)  # PreparedStep by id of each program step


ITERATION = re.compile(r"\[([^\]]*)\]\s*$")  # `[j=0, k=1]` at the end of a provenance


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def comment_parts(provenance: str) -> tuple[str, tuple[int, ...]]:
    """A provenance as text with `{}` for its loop indices, and their values."""
    match = ITERATION.search(provenance)
    if match is None:
        return _escaped(provenance), ()
    names, values = [], []
    for item in match.group(1).split(","):
        name, equals, value = item.strip().partition("=")
        if not equals:  # the index of a loop the package keeps as a loop: no value
            names.append(_escaped(name))
            continue
        if not value.lstrip("-").isdigit():
            return _escaped(provenance), ()
        names.append(f"{_escaped(name)}={{}}")
        values.append(int(value))
    return f"{_escaped(provenance[:match.start()])}[{', '.join(names)}]", tuple(values)


@dataclass
class PreparedStep:
    """What every tile's statement for one step shares, computed once per step."""

    sync: Leaf | None  # exchange steps
    text: str = ""  # kernel steps: the statement with `{}` for its numbers
    kinds: tuple[str, ...] = ()
    skeleton: int = -1
    iteration: tuple[int, ...] = ()
    numbers: dict[int, tuple[int, ...]] | None = None  # per tile on which the kernel runs


EXCHANGE_TEXT, EXCHANGE_KINDS = "exchange {}, {}", ("row", "hex")


def _with_comment(statement: str, provenance: str) -> tuple[str, tuple[int, ...]]:
    comment, iteration = comment_parts(provenance)
    return statement + (f"\t{comment}" if comment else ""), iteration


def prepare_step(step: ExchangeStep | KernelStep) -> PreparedStep:
    from device.kernels import get_kernel

    if isinstance(step, ExchangeStep):
        text, iteration = _with_comment("sync", step.provenance)
        return PreparedStep(leaf(text, iteration, ("dec",) * len(iteration)))
    abi = get_kernel(step.symbol)
    named, words = abi.split_scalars(step.scalars)
    scalar_args = [f"{_escaped(name)}={{}}" for name in named]
    if abi.variadic:  # the operands' format descriptors, as the vertex state holds them
        scalar_args.append(f"descriptor=[{', '.join('{}' for _ in words)}]")
    args = [f"{_escaped(name)}={{}}" for name in abi.pointers] + scalar_args
    text, iteration = _with_comment(f"call {step.symbol}, {', '.join(args)}", step.provenance)
    kinds = ("hex",) * len(abi.pointers) + ("dec",) * (len(step.scalars) + len(iteration))
    scalars = tuple(int(v) for v in step.scalars) + iteration
    numbers = {int(tile): tuple(pointers) + scalars
               for tile, pointers in zip(step.tiles.tolist(), step.pointers.tolist(),
                                         strict=True)}
    return PreparedStep(None, text, kinds, leaf_skeleton(text, kinds), iteration, numbers)


# A statement and, per enclosing package loop (outermost first), how each of its numbers
# advances per iteration of that loop.
Strided = tuple[Node, list[tuple[int, ...]]]


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


def program_nodes(ctx: AsmContext, steps: list[Step], tile: int, depth: int = 0) -> list[Strided]:
    """Tile `tile`'s statements; a `LoopStep` is one `loop` whose strides are its kernels'
    pointer strides (the package keeps it as a loop, so the listing does too)."""
    nodes: list[Strided] = []
    for step in steps:
        if isinstance(step, LoopStep):
            body = program_nodes(ctx, step.body, tile, depth + 1)
            if not body:
                continue
            inner = tuple(n for _, levels in body for n in levels[depth])
            outer = [tuple(n for _, levels in body for n in levels[level]) for level in range(depth)]
            nodes.append((loop(step.count, tuple(node for node, _ in body), inner), outer))
            continue
        for statement in step_leaves(ctx.prepared[id(step)], step, tile):
            nodes.append((statement, statement_strides(statement, step, depth)))
    return nodes


def statement_strides(statement: Leaf, step: RunStep, depth: int) -> list[tuple[int, ...]]:
    """Per enclosing loop, how the statement's numbers advance: a kernel call's pointers by
    their strides (its scalars and iteration numbers stay), nothing else moves."""
    still = (0,) * len(statement.numbers)
    if not isinstance(step, KernelStep) or step.pointer_strides is None:
        return [still] * depth
    unmoved = still[step.pointers.shape[1]:]
    return [tuple(int(v) for v in step.pointer_strides[level]) + unmoved
            for level in range(depth)]


def program_lines(ctx: AsmContext, tile: int, loops: bool = True) -> list[str]:
    if not loops:
        return render(list(unrolled_leaves(ctx, tile)), ctx.symbols)
    nodes: list[Node] = [node for node, _ in program_nodes(ctx, ctx.package.steps, tile)]
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
# as does `ipu-objdump --package DIR --tile T`."""


def format_assembly(package: Package, loops: bool = True) -> str:
    """The listing; `loops=False` prints every iteration (what the loops expand to)."""
    from device import isa

    symbols = package.metadata.get("row_symbols") or [f"row{i}" for i in range(len(package.rows))]
    instructions = [isa.decode([int(w) for w in row]) for row in package.rows]
    ctx = AsmContext(package, symbols, instructions,
                     {id(s): prepare_step(s) for _, s in flat_steps(package.steps)
                      if not isinstance(s, LoopStep)})
    lines = [*HEADER.splitlines(), f"# ipu-asm: function @{package.function}, "
             f"{package.tiles} tiles, target {package.target}", "    .text"]
    for group in tile_groups(package):
        lines.append("")
        lines.append(f"# tiles {format_tile_set(group)}")
        lines.append(f"tile_{int(group[0])}:")
        lines.extend(program_lines(ctx, int(group[0]), loops))
        lines.append("    ret")
    lines.extend(row_section(ctx))
    return "\n".join(lines) + "\n"
