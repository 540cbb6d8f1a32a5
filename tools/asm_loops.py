"""Loops in the `-t ipu-asm` listing: repeated statements with affine fields, folded.

A statement is a `Leaf`: a skeleton (its text with the numbers taken out) and its numbers.
A run of r >= 2 repetitions of p statements whose skeletons repeat and whose numbers change
by the same amount from one repetition to the next becomes a `Loop` of r iterations; a loop
is itself a statement (skeleton: its count, strides and body), so a second pass folds loops
of loops. Printed, a number that changes reads `base+stride*iN` (or `base-stride*iN`) (iN counts 0 .. r-1 in the
loop `loop iN, r`), so expanding the loops gives back the statements exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_PERIOD = 8  # statements per loop body looked for; bodies are a few statements long


COMMENT_COLUMN = 43  # statements are padded to here before their `# comment`


@dataclass(frozen=True, slots=True)
class Leaf:
    """One statement: `text.format(*numbers)` after each number is formatted by `kinds`;
    a tab in `text` starts its comment. Build it with `leaf` (which sets `skeleton`)."""

    text: str  # with `{}` where each number goes (literal braces doubled)
    numbers: tuple[int, ...]
    kinds: tuple[str, ...]  # "hex" | "dec" | "row" | "col" (a table column's index) per number
    skeleton: int  # the same for statements that differ only in their numbers


@dataclass(frozen=True, slots=True)
class Loop:
    count: int
    body: tuple[Leaf | Loop, ...]
    strides: tuple[int, ...]  # per number of the body, in body order
    numbers: tuple[int, ...]  # the body's numbers in the first iteration
    skeleton: int


Node = Leaf | Loop
_SKELETONS: dict[tuple, int] = {}


def _intern(skeleton: tuple) -> int:
    """A small integer per distinct skeleton, so that comparing statements is cheap."""
    return _SKELETONS.setdefault(skeleton, len(_SKELETONS))


def leaf_skeleton(text: str, kinds: tuple[str, ...], columns: tuple[int, ...] = ()) -> int:
    """`columns`: the table columns a shared listing's statement reads (`tools.asm_shared`);
    they are part of the skeleton, so that a per-tile field never becomes a loop stride."""
    return _intern((text, kinds, columns) if columns else (text, kinds))


def leaf(text: str, numbers: tuple[int, ...], kinds: tuple[str, ...]) -> Leaf:
    return Leaf(text, numbers, kinds, leaf_skeleton(text, kinds))


def loop(count: int, body: tuple[Node, ...], strides: tuple[int, ...]) -> Loop:
    numbers = tuple(n for node in body for n in node.numbers)
    skeleton = _intern(("loop", count, strides, tuple(node.skeleton for node in body)))
    return Loop(count, body, strides, numbers, skeleton)


# A statement and, per enclosing package loop (outermost first), how each of its numbers
# advances per iteration of that loop.
Strided = tuple[Node, list[tuple[int, ...]]]


def strided_loop(count: int, body: list[Strided], depth: int) -> Strided:
    """A package loop at `depth` over `body`: a `Loop` whose strides are the body's strides
    at that depth, and the body's strides for the loops around it."""
    inner = tuple(n for _, levels in body for n in levels[depth])
    outer = [tuple(n for _, levels in body for n in levels[level]) for level in range(depth)]
    return loop(count, tuple(node for node, _ in body), inner), outer


def _flat(numbers: list[tuple[int, ...]], start: int, stop: int) -> list[int]:
    return [n for item in numbers[start:stop] for n in item]


def _repeats(keys: list[int], numbers: list[tuple[int, ...]], start: int,
             period: int) -> tuple[int, tuple[int, ...]]:
    """How many times the `period` statements at `start` repeat with affine numbers, and
    the strides."""
    first = keys[start:start + period]
    if keys[start + period:start + 2 * period] != first:
        return 1, ()
    base = _flat(numbers, start, start + period)
    strides = tuple(b - a for a, b in zip(base, _flat(numbers, start + period,
                                                       start + 2 * period)))
    count = 2
    expected = [b + 2 * s for b, s in zip(base, strides)]
    while start + (count + 1) * period <= len(keys):
        block = start + count * period
        if keys[block:block + period] != first or _flat(numbers, block,
                                                          block + period) != expected:
            break
        count += 1
        expected = [e + s for e, s in zip(expected, strides)]
    return count, strides


def fold_once(nodes: list[Node]) -> list[Node]:
    keys = [node.skeleton for node in nodes]
    numbers = [node.numbers for node in nodes]
    folded: list[Node] = []
    index = 0
    while index < len(nodes):
        best = None  # (statements saved, count, period, strides)
        for period in range(1, min(MAX_PERIOD, (len(nodes) - index) // 2) + 1):
            if keys[index + period] != keys[index] or (best and period % best[2] == 0):
                continue  # a multiple of a repeating body covers no more than the body
            count, strides = _repeats(keys, numbers, index, period)
            saved = (count - 1) * period - 2  # the loop and endloop lines cost two
            if count >= 2 and saved > 0 and (best is None or saved > best[0]):
                best = (saved, count, period, strides)
        if best is None:
            folded.append(nodes[index])
            index += 1
            continue
        _, count, period, strides = best
        folded.append(loop(count, tuple(nodes[index:index + period]), strides))
        index += count * period
    return folded


def fold(nodes: list[Node]) -> list[Node]:
    """Fold until nothing changes (each pass can fold the loops of the last one)."""
    while True:
        folded = fold_once(nodes)
        if len(folded) == len(nodes):
            return folded
        nodes = folded


def _format_number(value: int, kind: str, terms: list[tuple[str, int]],
                   row_symbols: list[str]) -> str:
    if kind == "row" and not terms:
        return f".L{row_symbols[value]}"
    text = f"field[{value}]" if kind == "col" else f"{value:#x}" if kind == "hex" else str(value)
    for name, stride in terms:
        step = f"{abs(stride):#x}" if kind in ("hex", "col") else str(abs(stride))
        text += f"{'+' if stride > 0 else '-'}{step}*{name}"
    return f"row[{text}]" if kind == "row" else text


def render(nodes: list[Node], row_symbols: list[str], indent: str = "    ",
           depth: int = 0, terms: list[list[tuple[str, int]]] | None = None) -> list[str]:
    """The statements as lines; a number under loops gets its `+stride*iN` terms."""
    lines: list[str] = []
    offset = 0  # position of each node's first number in `terms`
    for node in nodes:
        count = len(node.numbers)
        mine = terms[offset:offset + count] if terms is not None else [[] for _ in range(count)]
        offset += count
        if isinstance(node, Leaf):
            values = [_format_number(v, k, t, row_symbols)
                      for v, k, t in zip(node.numbers, node.kinds, mine)]
            statement, _, comment = node.text.format(*values).partition("\t")
            statement = indent * (depth + 1) + statement
            lines.append(f"{statement:<{COMMENT_COLUMN}} # {comment}" if comment else statement)
            continue
        name = f"i{depth}"
        inner = [t + [(name, s)] if s else list(t) for t, s in zip(mine, node.strides)]
        lines.append(f"{indent * (depth + 1)}loop {name}, {node.count}")
        lines.extend(render(list(node.body), row_symbols, indent, depth + 1, inner))
        lines.append(f"{indent * (depth + 1)}endloop")
    return lines
