"""The work a tile program's expansion costs the compiler, checked before anything expands it.

A tile program's loops stay loops until `schedule-exchange` builds rows per iteration of an
exchange's row loops (`row_loops`: the loops its maps read) and the package writer expands
every loop it does not keep as a loop (`tools.package_loops.folds`). Both first check here
that no loop runs more than `MAX_LOOP_COUNT` times (what a package can hold) and that the
steps they are about to build number at most `MAX_EXPANDED_STEPS` (`device/limits.py`). What
a run of the program costs is not bounded here: a program compiled in this process is the
compiler's own, and the model runs it for as long as it takes (a loaded package is bounded
by `Package.load`). A `tile.loop` of a billion iterations is then a diagnostic in
microseconds, not hours of expansion or a package the loader refuses.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from device.limits import MAX_EXPANDED_STEPS, MAX_LOOP_COUNT
from ipu_dialects.locations import located
from ipu_dialects.tile import ExchangeOp, KernelOp, LoopOp, enclosing_loops, loop_bounds
from planning.exchange_phases import row_loop_positions


def check_loop_counts(module: ModuleOp, who: str) -> None:
    for op in module.walk():
        if isinstance(op, LoopOp) and op.upper_bound - op.lower_bound > MAX_LOOP_COUNT:
            raise PassFailedException(located(
                op, f"{who}: a tile.loop of {op.upper_bound - op.lower_bound} iterations (at "
                    f"most {MAX_LOOP_COUNT}, what a package holds: MAX_LOOP_COUNT, "
                    "device/limits.py)"))


def row_iterations(op: ExchangeOp | KernelOp) -> int:
    """The copies of `op` `schedule-exchange` builds: an exchange's rows per iteration of
    its row loops (a kernel: none)."""
    if isinstance(op, KernelOp):
        return 0
    bounds = loop_bounds(enclosing_loops(op))
    return (math.prod(max(bounds[p][1] - bounds[p][0], 0) for p in row_loop_positions(op))
            * math.prod(max(ub - lb, 0) for lb, ub in op.group_bounds()))


def check_expansion(module: ModuleOp, who: str,
                    copies: Callable[[ExchangeOp | KernelOp], int] = row_iterations) -> None:
    """Loop counts are bounded and the steps built, `copies` of each op, are at most
    `MAX_EXPANDED_STEPS`."""
    check_loop_counts(module, who)
    total = 0
    for op in module.walk():
        if isinstance(op, ExchangeOp | KernelOp):
            total += copies(op)
            if total > MAX_EXPANDED_STEPS:
                raise PassFailedException(located(
                    op, f"{who}: expanding the program's loops builds more than "
                        f"{MAX_EXPANDED_STEPS} steps ({op.name} alone {copies(op)}): "
                        "MAX_EXPANDED_STEPS, device/limits.py"))
