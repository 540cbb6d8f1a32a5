"""Loops the package keeps as loops: `LoopStep`s for tile loops whose index moves only
kernel pointers.

A structured repeat lowers to a `tile.loop` whose body reads its sequences at
`base + r * stride` and runs the same exchanges in every layer (`schedule-exchange` gives
those one row set and one slot: `row_loops`). Unrolling such a loop in the package would make
the package, its tile images and its listing grow with the depth. `folds` decides from the IR
alone whether every iteration runs the same rows and kernel calls up to a linear pointer
advance; the package writer then expands the body for the first two iterations and
`loop_body` turns their difference into `KernelStep.pointer_strides`. Any other loop (a GEMM
block loop, whose rows and tiles change per iteration) is unrolled as before.
"""

from __future__ import annotations

import numpy as np
from xdsl.utils.exceptions import PassFailedException

from device.package import ExchangeStep, KernelStep, LoopStep, Step
from ipu_dialects.tile import LoopOp, enclosing_loops


def folds(loop: LoopOp) -> bool:
    """Whether every iteration of `loop` runs the same steps up to kernel pointers that
    advance linearly with its index (and it runs at least twice): each op of the body says
    (`LoopNestInterface.repeats_across`)."""
    if loop.upper_bound - loop.lower_bound < 2:
        return False
    return loop.repeats_across(len(enclosing_loops(loop)))


def loop_body(first: list[Step], second: list[Step], where: str, depth: int = 0) -> list[Step]:
    """The body of a folded loop from its first two iterations' steps: kernel pointers of
    the first, with the advance to the second as the new outermost stride."""
    if len(first) != len(second):
        raise mismatch(where, f"{len(first)} steps in iteration 0, {len(second)} in iteration 1")
    body: list[Step] = []
    for a, b in zip(first, second, strict=True):
        if isinstance(a, LoopStep) and isinstance(b, LoopStep) and a.count == b.count:
            body.append(LoopStep(a.count, loop_body(a.body, b.body, where, depth + 1),
                                 a.provenance))
        elif isinstance(a, KernelStep) and isinstance(b, KernelStep):
            body.append(strided_kernel(a, b, where, depth))
        elif (isinstance(a, ExchangeStep) and isinstance(b, ExchangeStep)
              and a.row_address == b.row_address and np.array_equal(a.row_id, b.row_id)):
            body.append(a)
        else:
            raise mismatch(where, f"'{a.provenance}' differs between iterations 0 and 1")
    return body


def strided_kernel(a: KernelStep, b: KernelStep, where: str, depth: int) -> KernelStep:
    advance = b.pointers - a.pointers
    same_call = (a.symbol == b.symbol and a.scalars == b.scalars
                 and np.array_equal(a.tiles, b.tiles))
    if not same_call or not (advance == advance[:1]).all():
        raise mismatch(where, f"the kernel call '{a.provenance}' differs between iterations "
                              "0 and 1 by more than a pointer advance")
    inner = inner_strides(a, depth)
    if not np.array_equal(inner, inner_strides(b, depth)):
        raise mismatch(where, f"the inner strides of '{a.provenance}' differ")
    return KernelStep(a.symbol, a.tiles, a.pointers, a.scalars, a.provenance,
                      np.vstack([advance[:1], inner]))


def inner_strides(step: KernelStep, depth: int) -> np.ndarray:
    if step.pointer_strides is not None:
        return step.pointer_strides
    return np.zeros((depth, step.pointers.shape[1]), dtype=np.int64)


def mismatch(where: str, problem: str) -> PassFailedException:
    return PassFailedException(
        f"package: internal compiler error (a bug in ipu-stack's package writer, not in the "
        f"input): the loop '{where}' was judged to repeat the same steps, but {problem}"
    )
