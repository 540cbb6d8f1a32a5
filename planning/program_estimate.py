"""The program estimate: what the selector expects a function to cost, from the estimates
graph-to-mid records on the mid ops it selects plans for (`ipu.estimate`, each op's plan and
its operands' conversions into it). An op in the body of a `mid.repeat` runs once per
iteration of every repeat around it. `test/pytest/test_program_estimate.py` holds it equal
to the device model's modeled cycles on the examples."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation

from ipu_dialects import mid


@dataclass(frozen=True)
class OpEstimate:
    op: Operation
    cycles: int  # one run
    runs: int  # the product of the enclosing repeats' counts

    @property
    def total(self) -> int:
        return self.cycles * self.runs


def runs_of(op: Operation) -> int:
    """How many times `op` runs: once per iteration of each enclosing `mid.repeat`."""
    runs, parent = 1, op.parent_op()
    while parent is not None:
        if isinstance(parent, mid.RepeatOp):
            runs *= parent.count.value.data
        parent = parent.parent_op()
    return runs


def op_estimates(root: Operation) -> list[OpEstimate]:
    """Every op under `root` that carries a selector estimate, in program order."""
    found = []
    for op in root.walk():
        attr = op.attributes.get(mid.ESTIMATE_ATTR_NAME)
        if isinstance(attr, IntegerAttr):
            found.append(OpEstimate(op, attr.value.data, runs_of(op)))
    return found


def program_estimate(root: Operation) -> int:
    """The estimated cycles of everything under `root` (a function or a module)."""
    return sum(e.total for e in op_estimates(root))
