"""How diagnostics point at IR: values by name, ops by source position (MLIR's
`file:line:col: error: ...` form).

Ops parsed by the drivers (`tools/source_locations.py`) or written with an explicit
`loc("file":line:col)` carry a `FileLineColLoc`; ops built in Python carry none.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation, SSAValue


def location_of(op: Operation) -> str | None:
    """`file:line:col` of an op with a source location, else None."""
    loc = op.location
    if not isinstance(loc, FileLineColLoc):
        return None
    return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"


def located(op: Operation, message: str) -> str:
    """`file:line:col: error: message` when the op has a source position, else `message`."""
    location = location_of(op)
    return f"{location}: error: {message}" if location else message


def value_label(value: SSAValue) -> str:
    """`%c`: a value as the user wrote it."""
    return f"%{value.name_hint}" if value.name_hint else "%<unnamed>"
