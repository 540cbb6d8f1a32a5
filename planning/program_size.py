"""The size of a tile program as the device runs it, checked before anything expands it.

`schedule-exchange` builds rows per iteration of an exchange's loops and the package writer
expands every loop it does not keep as a loop; both first check here that the program, its
loops unrolled, executes at most `MAX_EXECUTED_STEPS` steps (`device/limits.py`: what
`Package.load` accepts). A `tile.loop` of a billion iterations is then a diagnostic in
microseconds, not hours of expansion or a package the loader refuses.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from device.limits import MAX_EXECUTED_STEPS
from ipu_dialects.locations import located
from ipu_dialects.tile import ExchangeOp, KernelOp, enclosing_loops, loop_bounds


def executed_steps(op: ExchangeOp | KernelOp) -> int:
    """How often `op` runs: the product of its enclosing loops' trip counts."""
    return math.prod(max(ub - lb, 0) for lb, ub in loop_bounds(enclosing_loops(op)))


def check_program_size(module: ModuleOp, who: str) -> None:
    total = 0
    for op in module.walk():
        if isinstance(op, ExchangeOp | KernelOp):
            total += executed_steps(op)
            if total > MAX_EXECUTED_STEPS:
                raise PassFailedException(located(
                    op, f"{who}: the program runs more than {MAX_EXECUTED_STEPS} steps, its loops "
                        f"unrolled ({op.name} alone runs {executed_steps(op)} times): "
                        "MAX_EXECUTED_STEPS, device/limits.py"))
