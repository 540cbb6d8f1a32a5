"""The text of the listing's statements (`-t ipu-asm`): tile sets, provenance comments with
their loop indices, and the `exchange` and `call` statements with `{}` for their numbers.

Shared by the per-program listing (`tools/asm_listing.py`) and the per-shape listing with
field tables (`tools/asm_shared.py`), so a statement reads the same in both.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
from xdsl.utils.exceptions import PassFailedException

from device.kernels import UnknownKernelError, get_kernel
from device.package import KernelStep, LoopStep, RunStep, Step
from tools.asm_loops import Leaf, Strided, strided_loop


def tiles_by_signature(columns: list[np.ndarray], tiles: int) -> list[np.ndarray]:
    """Tiles grouped by their values across `columns` (one array over the tiles each),
    groups in the order of their first tile; one group when there are no columns."""
    if not columns:
        return [np.arange(tiles)]
    _, first, group_of_tile = np.unique(np.stack(columns, axis=1), axis=0, return_index=True,
                                        return_inverse=True)
    group_of_tile = group_of_tile.reshape(-1)
    return [np.flatnonzero(group_of_tile == g) for g in np.argsort(first)]


def format_tile_set(tiles: np.ndarray | list[int]) -> str:
    """`[0, 1, 2, 5]` -> `0-2,5`."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive tiles
    for tile in sorted(int(t) for t in tiles):
        if runs and tile == runs[-1][1] + 1:
            runs[-1][1] = tile
        else:
            runs.append([tile, tile])
    return ",".join(str(first) if first == last else f"{first}-{last}" for first, last in runs)


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


EXCHANGE_TEXT, EXCHANGE_KINDS = "exchange {}, {}", ("row", "hex")


def with_comment(statement: str, provenance: str) -> tuple[str, tuple[int, ...]]:
    comment, iteration = comment_parts(provenance)
    return statement + (f"\t{comment}" if comment else ""), iteration


def kernel_text(step: KernelStep) -> tuple[str, tuple[str, ...], tuple[int, ...]]:
    """A call's statement with `{}` for its pointers, scalars and loop indices; the kinds of
    those numbers; the loop indices' values (from the provenance)."""
    try:  # the tile verifier leaves a symbol it does not know to the passes
        abi = get_kernel(step.symbol)
    except UnknownKernelError as error:
        what = step.provenance or f"a tile.kernel @{step.symbol}"
        raise PassFailedException(f"no listing for the kernel step of {what}: {error}") from None
    named, words = abi.split_scalars(step.scalars)
    scalar_args = [f"{_escaped(name)}={{}}" for name in named]
    if abi.variadic:  # the operands' format descriptors, as the vertex state holds them
        scalar_args.append(f"descriptor=[{', '.join('{}' for _ in words)}]")
    args = [f"{_escaped(name)}={{}}" for name in abi.pointers] + scalar_args
    text, iteration = with_comment(f"call {step.symbol}, {', '.join(args)}", step.provenance)
    kinds = ("hex",) * len(abi.pointers) + ("dec",) * (len(step.scalars) + len(iteration))
    return text, kinds, iteration


def statement_strides(statement: Leaf, step: RunStep, depth: int) -> list[tuple[int, ...]]:
    """Per enclosing loop, how the statement's numbers advance: a kernel call's pointers by
    their strides (its scalars and iteration numbers stay), nothing else moves."""
    still = (0,) * len(statement.numbers)
    if not isinstance(step, KernelStep) or step.pointer_strides is None:
        return [still] * depth
    unmoved = still[step.pointers.shape[1]:]
    return [tuple(int(v) for v in step.pointer_strides[level]) + unmoved
            for level in range(depth)]


def package_nodes(steps: list[Step], statements_of: Callable[[RunStep], list[Leaf]],
                  depth: int = 0) -> list[Strided]:
    """The statements of a program (`statements_of` each step's), with their strides; a
    `LoopStep` is one `loop` whose strides are its kernels' pointer strides (the package
    keeps it as a loop, so the listing does too)."""
    nodes: list[Strided] = []
    for step in steps:
        if isinstance(step, LoopStep):
            body = package_nodes(step.body, statements_of, depth + 1)
            if body:
                nodes.append(strided_loop(step.count, body, depth))
            continue
        nodes.extend((statement, statement_strides(statement, step, depth))
                     for statement in statements_of(step))
    return nodes
