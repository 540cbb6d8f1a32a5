"""A small Python builder for graph-dialect functions.

    g = GraphBuilder("block")
    x = g.input([128, 768], f16, name="x")
    w = g.input([768, 768], f16, name="w")
    y = g.gelu(g.gemm(x, w))
    g.output(y)
    module = g.build()          # a verified ModuleOp holding `func.func @block`

Result types are inferred by the ops' builders and every op is verified as it is added, so shape
and element-type errors surface at the call that makes them, as the same `VerifyException` the
textual IR would give. Arguments of the wrong Python type (a list where a value belongs, a float
count) raise `BuilderTypeError`, a `TypeError`. A `graph.repeat` body is a Python
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
    checked_tensor,
)

f8 = Float8E4M3FNUZType()

__all__ = ["BuilderTypeError", "GraphBuilder", "f8", "f16", "f32", "tensor_type"]


class BuilderTypeError(TypeError):
    """A builder call got a Python object of the wrong kind (named in the message)."""

RepeatBody = Callable[
    [Sequence[SSAValue], Sequence[SSAValue], Sequence[SSAValue]], Sequence[SSAValue]
]


def tensor_type(shape: Sequence[int], element_type: Attribute, scale: int | None = None) -> TensorType:
    """A graph tensor type; `scale` attaches the FP8 power-of-two scale (`#graph.fp8_scale`)."""
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence):
        raise BuilderTypeError(f"shape must be a sequence of ints, got {shape!r}")
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise BuilderTypeError(f"shape must be a sequence of ints, got {list(shape)!r}")
    if not isinstance(element_type, Attribute):
        raise BuilderTypeError(f"element type must be f32, f16 or f8, got {element_type!r}")
    if scale is not None and (not isinstance(scale, int) or isinstance(scale, bool)):
        raise BuilderTypeError(f"scale must be an int exponent, got {scale!r}")
    if any(d < 1 for d in shape):  # -1 would print as a dynamic extent the parser reads as `?`
        raise VerifyException(f"shape {list(shape)}: every extent must be >= 1")
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
        self.built = False

    # -- arguments and results ----------------------------------------------------------------

    def input(
        self,
        shape: Sequence[int],
        element_type: Attribute = f32,
        name: str | None = None,
        scale: int | None = None,
    ) -> SSAValue:
        index = len(self.entry.args)
        arg_name = name or f"arg{index}"
        # the signature rules of a graph function (`check_graph_signature`), at the call
        arg_type = checked_tensor(
            "GraphBuilder.input", f"input {arg_name}", tensor_type(shape, element_type, scale)
        )
        arg = self.entry.insert_arg(arg_type, index)
        arg.name_hint = arg_name
        return arg

    def output(self, *values: SSAValue) -> None:
        if len(self.blocks) != 1:
            raise VerifyException("output() inside a repeat body: return the carried values instead")
        self.outputs = [self._value(v, f"output #{i}") for i, v in enumerate(values)]

    def build(self) -> ModuleOp:
        if self.built:
            raise BuilderTypeError(f"graph @{self.name} was already built: build() once per builder")
        if self.outputs is None:
            raise VerifyException(f"graph @{self.name} has no outputs: call output(...) first")
        self.built = True
        self.entry.add_op(ReturnOp(*self.outputs))
        arg_types = [a.type for a in self.entry.args]
        result_types = [v.type for v in self.outputs]
        func = FuncOp(self.name, (arg_types, result_types), Region(self.entry))
        module = ModuleOp([func])
        module.verify()
        return module

    # -- ops ----------------------------------------------------------------------------------

    @staticmethod
    def _value(value: object, what: str) -> SSAValue:
        if not isinstance(value, SSAValue):
            raise BuilderTypeError(
                f"{what} must be a value returned by input() or an op method, got {value!r}"
            )
        return value

    def _add(self, op: Operation) -> Operation:
        """Verify and insert `op` (so a rejected op leaves the graph unchanged); unnamed results
        get readable names (`%gemm3`) for diagnostics."""
        if self.built:
            raise BuilderTypeError(f"graph @{self.name} was already built: no ops can be added")
        op.verify()
        self.blocks[-1].add_op(op)
        for result in op.results:
            if result.name_hint is None:
                self.op_count += 1
                result.name_hint = f"{op.name.split('.', 1)[1]}{self.op_count}"
        return op

    def gemm(
        self, lhs: SSAValue, rhs: SSAValue, transpose_lhs: bool = False, transpose_rhs: bool = False
    ) -> SSAValue:
        lhs, rhs = self._value(lhs, "gemm lhs"), self._value(rhs, "gemm rhs")
        return self._add(GemmOp(lhs, rhs, transpose_lhs, transpose_rhs)).results[0]

    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        lhs, rhs = self._value(lhs, "add lhs"), self._value(rhs, "add rhs")
        return self._add(AddOp(lhs, rhs)).results[0]

    def gelu(self, x: SSAValue) -> SSAValue:
        return self._add(GeluOp(self._value(x, "gelu input"))).results[0]

    def attention(
        self,
        query: SSAValue,
        key: SSAValue,
        value: SSAValue,
        causal: bool = False,
        scale: float | None = None,
    ) -> SSAValue:
        query, key, value = (
            self._value(v, f"attention {what}")
            for v, what in ((query, "query"), (key, "key"), (value, "value"))
        )
        return self._add(AttentionOp(query, key, value, causal, scale)).results[0]

    def repeat(
        self,
        count: int,
        body: RepeatBody,
        carried: Sequence[SSAValue] = (),
        invariant: Sequence[SSAValue] = (),
        sequence: Sequence[SSAValue] = (),
    ) -> list[SSAValue]:
        """`graph.repeat count`: `body(carried, invariants, slices)` returns the next carried."""
        if not isinstance(count, int) or isinstance(count, bool):
            raise BuilderTypeError(f"repeat count must be an int, got {count!r}")
        carried = [self._value(v, f"repeat carried #{i}") for i, v in enumerate(carried)]
        invariant = [self._value(v, f"repeat invariant #{i}") for i, v in enumerate(invariant)]
        sequence = [self._value(v, f"repeat sequence #{i}") for i, v in enumerate(sequence)]
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
            if isinstance(next_carried, SSAValue) or not isinstance(next_carried, Sequence):
                raise BuilderTypeError(
                    "a repeat body must return a list of the next carried values, got "
                    f"{next_carried!r}"
                )
            values = [self._value(v, f"repeat body result #{i}") for i, v in enumerate(next_carried)]
            block.add_op(YieldOp(*values))
        finally:
            self.blocks.pop()
        op = RepeatOp(count, carried, invariant, sequence, Region(block))
        return list(self._add(op).results)
