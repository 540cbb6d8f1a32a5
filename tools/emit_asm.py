"""`-t ipu-asm`: supervisor assembly for every tile, with provenance comments.

The assembly is printed from the finalized package, so it shows exactly what the device
model runs. Tiles whose programs are identical share one listing; the rows are printed once,
as `.word` data in an `.exchange_rows` section, with their disassembly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from device.package import ExchangeStep, KernelStep, Package


def format_tile_set(tiles: np.ndarray | list[int]) -> str:
    """`[0, 1, 2, 5]` -> `0-2,5`."""
    tiles = sorted(int(t) for t in tiles)
    parts: list[str] = []
    start = prev = None
    for tile in tiles + [None]:
        if start is not None and (tile is None or tile != prev + 1):
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if tile is not None and start is None:
            start = tile
        prev = tile
    return ",".join(parts)


def tile_groups(package: Package) -> list[np.ndarray]:
    """Tiles with identical programs (same rows, same kernel calls), in tile order."""
    columns = []
    for step in package.steps:
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


def kernel_line(step: KernelStep, tile: int) -> str:
    from device.kernels import get_kernel

    abi = get_kernel(step.symbol)
    index = int(np.flatnonzero(step.tiles == tile)[0])
    args = [f"{name}={int(v):#x}" for name, v in zip(abi.pointers, step.pointers[index],
                                                      strict=True)]
    named, words = abi.split_scalars(step.scalars)
    args += [f"{name}={v}" for name, v in named.items()]
    if abi.variadic:  # the operands' format descriptors, as the vertex state holds them
        args.append(f"descriptor=[{', '.join(str(w) for w in words)}]")
    return f"    call {step.symbol}, {', '.join(args)}"


def program_lines(ctx: AsmContext, tile: int) -> list[str]:
    lines: list[str] = []
    for step in ctx.package.steps:
        if isinstance(step, ExchangeStep):
            lines.append(f"{'    sync':<43} # {step.provenance}")
            row = int(step.row_id[tile])
            if row >= 0:
                lines.append(f"    exchange .L{ctx.symbols[row]}, {step.row_address:#x}")
        elif tile in step.tiles:
            lines.append(f"{kernel_line(step, tile):<43} # {step.provenance}")
    return lines


def row_section(ctx: AsmContext) -> list[str]:
    lines = ["", "    .section .exchange_rows"]
    for symbol, words, instrs in zip(ctx.symbols, ctx.package.rows, ctx.instructions,
                                     strict=True):
        lines.append(f".L{symbol}:")
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


def format_assembly(package: Package) -> str:
    from device import isa

    symbols = package.metadata.get("row_symbols") or [f"row{i}" for i in range(len(package.rows))]
    instructions = [isa.decode([int(w) for w in row]) for row in package.rows]
    ctx = AsmContext(package, symbols, instructions)
    lines = [f"# ipu-asm: function @{package.function}, {package.tiles} tiles, "
             f"target {package.target}", "    .text"]
    for group in tile_groups(package):
        lines.append("")
        lines.append(f"# tiles {format_tile_set(group)}")
        lines.append(f"tile_{int(group[0])}:")
        lines.extend(program_lines(ctx, int(group[0])))
        lines.append("    ret")
    lines.extend(row_section(ctx))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class IpuAsmTarget(Target):
    name = "ipu-asm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from tools.package_writer import build_package

        output.write(build_package(module).assembly)  # the writer formats it once
