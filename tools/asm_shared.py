"""The listing of a package whose tiles run many distinct programs: one listing per program
shape, with the fields that differ between its tiles in a table.

A 2-D grid GEMM on 1472 tiles gives nearly every tile its own program: the rows differ per
grid row and column and the home pointers per tile, while the statements are the same. One
listing per distinct program would print the same statements 1,400 times (145,000 lines,
10 s), so above `SHARED_LISTING_PROGRAMS` distinct programs, tiles that take part in the
same steps (the same statements, possibly with different numbers) share one listing. A
number that is the same on all of them is printed in place; one that differs reads
`field[N]`, and the table after the listing gives its value on each tile, one line per tile.
Everything here works per step across tiles (NumPy), never per tile and step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np

from device.package import ExchangeStep, KernelStep, Package, RunStep, flat_steps
from tools.asm_loops import Leaf, fold, leaf_skeleton, render
from tools.asm_statements import (
    EXCHANGE_TEXT,
    comment_parts,
    format_tile_set,
    kernel_text,
    package_nodes,
    tiles_by_signature,
)

SHARED_LISTING_PROGRAMS = 16  # more distinct programs than this: share listings by shape


def shape_groups(package: Package) -> list[np.ndarray]:
    """Tiles that take part in the same steps (a row in each exchange, a call in each
    kernel step), in tile order: their statements are the same up to their numbers."""
    columns: list[np.ndarray] = []
    for _, step in flat_steps(package.steps):
        if isinstance(step, ExchangeStep):
            columns.append(step.row_id >= 0)
        elif isinstance(step, KernelStep):
            present = np.zeros(package.tiles, dtype=bool)
            present[step.tiles] = True
            columns.append(present)
    return tiles_by_signature(columns, package.tiles)


@dataclass
class FieldTable:
    """The numbers that differ between the tiles of one shape group, one column each."""

    tiles: np.ndarray
    columns: list[np.ndarray] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)

    def number(self, values: np.ndarray, kind: str) -> tuple[int, str]:
        """The number as a statement holds it: the value when every tile has it, else a
        new column (kind `col`, number = its index)."""
        if np.all(values == values[0]):
            return int(values[0]), kind
        self.columns.append(values)
        self.kinds.append(kind)
        return len(self.columns) - 1, "col"

    def lines(self) -> list[str]:
        if not self.columns:
            return []
        header = "# " + " ".join(["tile", *(f"field[{n}]" for n in range(len(self.columns)))])
        cells = [_cells(column, kind) for column, kind in zip(self.columns, self.kinds,
                                                             strict=True)]
        rows = [" ".join(parts) for parts in zip(self.tiles.astype(str), *cells, strict=True)]
        return ["# the fields of this listing on each of its tiles:", header,
                *(f"#   {row}" for row in rows)]


def _cells(column: np.ndarray, kind: str) -> list[str]:
    if kind == "hex":
        return [f"{int(v):#x}" for v in column]
    if kind == "row":
        return [f"row[{int(v)}]" for v in column]
    return column.astype(str).tolist()


def shared_leaf(text: str, numbers: list[tuple[int, str]]) -> Leaf:
    """A statement whose `col` numbers are part of its skeleton: a column is one tile's own
    field, so statements with columns never fold into a loop of their own."""
    values = tuple(n for n, _ in numbers)
    kinds = tuple(k for _, k in numbers)
    columns = tuple(n for n, k in numbers if k == "col")
    return Leaf(text, values, kinds, leaf_skeleton(text, kinds, columns))


def step_statements(package: Package, step: RunStep, table: FieldTable) -> list[Leaf]:
    """The group's statements for one step: a sync and its row, or the call (none where
    the group takes no part)."""
    tiles = table.tiles
    if isinstance(step, ExchangeStep):
        comment, iteration = comment_parts(step.provenance)
        sync = shared_leaf("sync" + (f"\t{comment}" if comment else ""),
                           [(v, "dec") for v in iteration])
        rows = step.row_id[tiles]
        if rows[0] < 0:  # the whole group takes no part (same shape)
            return [sync]
        return [sync, shared_leaf(EXCHANGE_TEXT, [table.number(rows, "row"),
                                                  (step.row_address, "hex")])]
    position = np.full(package.tiles, -1, dtype=np.int64)
    position[step.tiles] = np.arange(len(step.tiles))
    if position[tiles[0]] < 0:
        return []
    pointers = step.pointers[position[tiles]]
    text, kinds, iteration = kernel_text(step)
    numbers = [table.number(pointers[:, p], "hex") for p in range(pointers.shape[1])]
    numbers += [(int(v), k) for v, k in zip((*step.scalars, *iteration),
                                              kinds[pointers.shape[1]:], strict=True)]
    return [shared_leaf(text, numbers)]


def shared_listing(package: Package, symbols: list[str]) -> list[str]:
    """Per shape group: its tiles, its statements (loops folded) and its field table."""
    lines: list[str] = []
    for group in shape_groups(package):
        table = FieldTable(group)
        statements = partial(step_statements, package, table=table)
        nodes = [node for node, _ in package_nodes(package.steps, statements)]
        title = f"# tiles {format_tile_set(group)}"
        if table.columns:
            title += " (one program shape; field[N]: per tile, in the table below)"
        lines += ["", title, f"tile_{int(group[0])}:", *render(fold(nodes), symbols), "    ret",
                  *table.lines()]
    return lines
