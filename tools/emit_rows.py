"""`-t ipu-rows`: every encoded exchange row as hex words, with the tiles that run it.

One line per unique row: its symbol, its words, and then, per step that uses it, the code
address and the tiles running it. Identical rows are shared by all tiles that run them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from device.package import ExchangeStep, Package, flat_steps
from tools.asm_listing import format_tile_set


def row_uses(package: Package) -> dict[int, list[tuple[int, int, np.ndarray]]]:
    """row id -> [(step index, row address, tiles running it)]."""
    uses: dict[int, list[tuple[int, int, np.ndarray]]] = {}
    for index, (_, step) in enumerate(flat_steps(package.steps)):
        if not isinstance(step, ExchangeStep):
            continue
        for row in np.unique(step.row_id[step.row_id >= 0]):
            tiles = np.flatnonzero(step.row_id == row)
            uses.setdefault(int(row), []).append((index, step.row_address, tiles))
    return uses


def format_rows(package: Package) -> str:
    symbols = package.metadata.get("row_symbols") or [f"row{i}" for i in range(len(package.rows))]
    lines = [f"# ipu-rows: function @{package.function}, {package.tiles} tiles, "
             f"{len(package.rows)} unique rows"]
    uses = row_uses(package)
    for row_id, (symbol, words) in enumerate(zip(symbols, package.rows, strict=True)):
        hex_words = " ".join(f"{int(w):08x}" for w in words)
        lines.append(f"@{symbol}: {hex_words}")
        for step, address, tiles in uses.get(row_id, []):
            lines.append(f"  step {step} at {address:#x} on tiles {format_tile_set(tiles)}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class IpuRowsTarget(Target):
    name = "ipu-rows"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from tools.package_writer import build_package

        output.write(format_rows(build_package(module, with_assembly=False)))
