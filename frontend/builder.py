"""A small Python builder for graph-dialect functions.

    g = GraphBuilder("block")
    x = g.input([128, 768], f16, name="x")
    w = g.input([768, 768], f16, name="w")
    y = g.gelu(g.gemm(x, w))
    g.output(y)
    module = g.build()          # a verified ModuleOp holding `func.func @block`

Result types are inferred by the ops' builders, so shape errors surface at the call that makes
them, as the same `VerifyException` the textual IR would give. A `graph.repeat` body is a Python
function of its block arguments that returns the next carried values:

    def layer(carried, invariants, slices):
        (x,), (bias,), (w,) = carried, invariants, slices
        return [g.add(g.gemm(x, w), bias)]

    (out,) = g.repeat(4, layer, carried=[x], invariant=[bias], sequence=[weights])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import Float8E4M3FNUZType, ModuleOp, TensorType, f16, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ipu_dialects.graph import (
    AddOp,
    AttentionOp,
    Fp8ScaleAttr,
    GeluOp,
    GemmOp,
    RepeatOp,
    YieldOp,
)

f8 = Float8E4M3FNUZType()

__all__ = ["GraphBuilder", "f8", "f16", "f32", "tensor_type"]

RepeatBody = Callable[
    [Sequence[SSAValue], Sequence[SSAValue], Sequence[SSAValue]], Sequence[SSAValue]
]


def tensor_type(shape: Sequence[int], element_type: Attribute, scale: int | None = None) -> TensorType:
    """A graph tensor type; `scale` attaches the FP8 power-of-two scale (`#graph.fp8_scale`)."""
    if scale is None:
        return TensorType(element_type, shape)
    return TensorType(element_type, shape, Fp8ScaleAttr(scale))


class GraphBuilder:
    """Builds one `func.func` of graph ops; `build()` wraps it in a verified module."""

    def __init__(self, name: str):
        self.name = name
        self.entry = Block()
        self.blocks = [self.entry]  # innermost last: where new ops go
        self.outputs: list[SSAValue] | None = None
        self.op_count = 0

    # -- arguments and results ----------------------------------------------------------------

    def input(
        self,
        shape: Sequence[int],
        element_type: Attribute = f32,
        name: str | None = None,
        scale: int | None = None,
    ) -> SSAValue:
        index = len(self.entry.args)
        arg = self.entry.insert_arg(tensor_type(shape, element_type, scale), index)
        arg.name_hint = name or f"arg{index}"
        return arg

    def output(self, *values: SSAValue) -> None:
        if len(self.blocks) != 1:
            raise VerifyException("output() inside a repeat body: return the carried values instead")
        self.outputs = list(values)

    def build(self) -> ModuleOp:
        if self.outputs is None:
            raise VerifyException(f"graph @{self.name} has no outputs: call output(...) first")
        self.entry.add_op(ReturnOp(*self.outputs))
        arg_types = [a.type for a in self.entry.args]
        result_types = [v.type for v in self.outputs]
        func = FuncOp(self.name, (arg_types, result_types), Region(self.entry))
        module = ModuleOp([func])
        module.verify()
        return module

    # -- ops ----------------------------------------------------------------------------------

    def _add(self, op: Operation) -> Operation:
        """Insert `op`; unnamed results get readable names (`%gemm3`) for diagnostics."""
        self.blocks[-1].add_op(op)
        for result in op.results:
            if result.name_hint is None:
                self.op_count += 1
                result.name_hint = f"{op.name.split('.', 1)[1]}{self.op_count}"
        return op

    def gemm(
        self, lhs: SSAValue, rhs: SSAValue, transpose_lhs: bool = False, transpose_rhs: bool = False
    ) -> SSAValue:
        return self._add(GemmOp(lhs, rhs, transpose_lhs, transpose_rhs)).results[0]

    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self._add(AddOp(lhs, rhs)).results[0]

    def gelu(self, x: SSAValue) -> SSAValue:
        return self._add(GeluOp(x)).results[0]

    def attention(
        self,
        query: SSAValue,
        key: SSAValue,
        value: SSAValue,
        causal: bool = False,
        scale: float | None = None,
    ) -> SSAValue:
        op = AttentionOp(query, key, value, causal, scale)
        op.verify()  # the shape rules live in the verifier; report them at the call
        return self._add(op).results[0]

    def repeat(
        self,
        count: int,
        body: RepeatBody,
        carried: Sequence[SSAValue] = (),
        invariant: Sequence[SSAValue] = (),
        sequence: Sequence[SSAValue] = (),
    ) -> list[SSAValue]:
        """`graph.repeat count`: `body(carried, invariants, slices)` returns the next carried."""
        arg_types = RepeatOp.body_arg_types(
            [v.type for v in carried], [v.type for v in invariant], [v.type for v in sequence]
        )
        block = Block(arg_types=arg_types)
        for arg, outer in zip(block.args, [*carried, *invariant, *sequence]):
            arg.name_hint = outer.name_hint
        n_carried, n_invariant = len(carried), len(invariant)
        self.blocks.append(block)
        try:
            args = block.args
            next_carried = body(
                args[:n_carried],
                args[n_carried : n_carried + n_invariant],
                args[n_carried + n_invariant :],
            )
            block.add_op(YieldOp(*next_carried))
        finally:
            self.blocks.pop()
        op = RepeatOp(count, carried, invariant, sequence, Region(block))
        op.verify()  # before inserting it, so a failed repeat leaves the graph unchanged
        return list(self._add(op).results)
