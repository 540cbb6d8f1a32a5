"""How diagnostics point at IR: values by name, ops by source position (MLIR's
`file:line:col: error: ...` form).

Ops parsed by the drivers (`tools/source_locations.py`) or written with an explicit
`loc("file":line:col)` carry a `FileLineColLoc`; ops built in Python carry none (`loc(unknown)`).

Ops that the passes create carry the location of the graph op they come from. Work that serves
several graph ops (a conversion between a producer and its consumer, the copy of a returned
value) carries a `loc(fused[...])` of theirs, built by `fused_location` with MLIR's rules; the
first location in it is the op the work is done *for*, and it is the one a diagnostic names
(MLIR's diagnostic handler also reports a fused location at its first file position).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from xdsl.dialects.builtin import (
    ArrayAttr,
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    LocationAttr,
    NameLoc,
    NoneAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue


def file_positions(loc: Attribute) -> Iterator[FileLineColLoc]:
    """The file positions inside a location, in order (a call site: the callee's first)."""
    if isinstance(loc, FileLineColLoc):
        yield loc
    elif isinstance(loc, FusedLoc):
        for inner in cast(ArrayAttr, loc.locations).data:
            yield from file_positions(inner)
    elif isinstance(loc, NameLoc):
        yield from file_positions(loc.location)
    elif isinstance(loc, CallSiteLoc):
        yield from file_positions(loc.callee)
        yield from file_positions(loc.caller)


def location_of(op: Operation) -> str | None:
    """`file:line:col` of an op with a source location (a fused one: its first), else None."""
    return position_text(op.location)


def position_text(loc: Attribute) -> str | None:
    """`file:line:col` of a location's first file position, else None."""
    first = next(file_positions(loc), None)
    if first is None:
        return None
    return f"{first.filename.data}:{first.line.data}:{first.column.data}"


def located(op: Operation, message: str) -> str:
    """`file:line:col: error: message` when the op has a source position, else `message`."""
    location = location_of(op)
    return f"{location}: error: {message}" if location else message


def located_value(value: SSAValue, message: str) -> str:
    """`located`, at where `value` comes from (`value_location`)."""
    location = position_text(value_location(value))
    return f"{location}: error: {message}" if location else message


def is_known(loc: Attribute) -> bool:
    return not isinstance(loc, UnknownLoc | NoneAttr)


def fused_location(*locations: Attribute) -> LocationAttr:
    """One location for work that serves several ops, as MLIR's `FusedLoc::get` builds it:
    nested fused locations are flattened, unknown ones dropped, duplicates kept once (first
    occurrence); one location left is itself, none is `loc(unknown)`."""
    parts: list[Attribute] = []
    for loc in locations:
        inner = cast(ArrayAttr, loc.locations).data if isinstance(loc, FusedLoc) else (loc,)
        parts.extend(p for p in inner if is_known(p) and p not in parts)
    if not parts:
        return UnknownLoc()
    if len(parts) == 1:
        return parts[0]  # type: ignore[return-value]  # a known location attribute
    return FusedLoc(ArrayAttr(parts), NoneAttr())


def value_location(value: SSAValue) -> LocationAttr:
    """Where `value` comes from: its defining op's location; a block argument's own location
    when it has one, else that of the op owning the block (a function's argument: the
    function's signature; a repeat body's: the repeat)."""
    owner = value.owner
    if isinstance(owner, Operation):
        return owner.location
    assert isinstance(owner, Block) and isinstance(value, BlockArgument)
    if is_known(value.location):
        return value.location
    parent = owner.parent_op()
    return parent.location if parent is not None else UnknownLoc()


def value_label(value: SSAValue) -> str:
    """`%c`: a value as the user wrote it."""
    return f"%{value.name_hint}" if value.name_hint else "%<unnamed>"


def op_label(op: Operation) -> str:
    """`graph.gemm %c`: the op named by its first result, as the user wrote it."""
    return f"{op.name} {value_label(op.results[0])}" if op.results else op.name
