"""The registry of operators: one module per operator kind, one `Operator` each.

`graph-to-mid` and `mid-to-tile` look operators up here by the op they handle and name none
of them. The registry is every concrete `Operator` with a mid op defined in a module of this
package, found by importing them (`get_all_operators`), so adding an operator is one module,
its kernel and its tests: nothing here names it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Sequence
from functools import cache

from xdsl.ir import Operation

from passes.operators.base import Operator


def is_operator(found: object, module: str) -> bool:
    """`found` is an operator class `module` defines: concrete, with a mid op (bases such as
    `PointwiseOperator` and `layout.LayoutOperator` have none)."""
    return (isinstance(found, type) and issubclass(found, Operator) and found.__module__ == module
            and not inspect.isabstract(found) and getattr(found, "mid_op", None) is not None)


@cache
def get_all_operators() -> tuple[Operator, ...]:
    """One instance of each operator of the modules of this package, in module name order,
    then in definition order; two operators of one graph or mid op are an error."""
    operators: list[Operator] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        operators += [cls() for cls in vars(module).values() if is_operator(cls, module.__name__)]
    check_one_per_op(operators)
    return tuple(operators)


def check_one_per_op(operators: Sequence[Operator]) -> None:
    """No graph or mid op has two operators (the lookups below would take the first)."""
    for attribute in ("graph_op", "mid_op"):
        handled = [getattr(o, attribute) for o in operators if getattr(o, attribute) is not None]
        twice = {op.name for op in handled if handled.count(op) > 1}
        if twice:
            raise ValueError(f"two operators handle {', '.join(sorted(twice))}")


def operator_for_graph(op: Operation) -> Operator | None:
    return next((o for o in get_all_operators() if o.graph_op is type(op)), None)


def operator_for_mid(op: Operation) -> Operator | None:
    return next((o for o in get_all_operators() if o.mid_op is type(op)), None)
