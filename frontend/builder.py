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
count, a string where a bool flag or a number belongs) raise `BuilderTypeError`, a `TypeError`;
a well-typed but invalid argument (a name that is not an SSA name) raises `BuilderValueError`,
a `ValueError`. Both name the argument.

Scoping. A value may be used only in the region that defines it: a value made inside a repeat
body lives only in that body (return it as a carried value to use it after the repeat), and a
body sees outer values only through its `carried`, `invariant` and `sequence` arguments. A use
outside the defining region raises `BuilderTypeError` at the call, naming the value and where it
was defined.

FP8 result scales. An FP8 tensor's values are `q * 2**s` for the stored `q` and the type's
`#graph.fp8_scale<s>` (0 when absent). The ops that make FP8 results (`gemm`, `add`, `gelu`,
`attention`) take `scale=s` to declare the result's scale; without it the result is unscaled
(s = 0), whatever the operands' scales. The scale is the caller's choice of range (values
saturate at 240 * 2**s); `scale=` on a non-FP8 result is a `VerifyException`.

    y = g.add(x, b, scale=-3)   # tensor<..xf8E4M3FNUZ, #graph.fp8_scale<-3>>

Python conveniences. Values made by a builder also support `x @ w` (`gemm(x, w)`) and `x + y`
(`add(x, y)`), and element types may be given as NumPy dtypes or strings as well as xDSL types:

    x = g.input([128, 768], np.float16, name="x")    # or "f16", "float16", f16
    w = g.input([768, 768], "f16", name="w")
    y = g.gelu(x @ w + x)

`as_element_type(...)` is the conversion: float32/"f32", float16/"f16", ml_dtypes'
float8_e4m3fnuz/"f8"/"f8E4M3FNUZ".

A `graph.repeat` body is a Python function of its block arguments that returns the next carried
values:

    def layer(carried, invariants, slices):
        (x,), (bias,), (w,) = carried, invariants, slices
        return [g.add(g.gemm(x, w), bias)]

    (out,) = g.repeat(4, layer, carried=[x], invariant=[bias], sequence=[weights])
"""

from __future__ import annotations

import numbers
import weakref
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import Float8E4M3FNUZType, ModuleOp, TensorType, f16, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ipu_dialects.graph import (
    AddOp,
    AttentionOp,
    ConcatOp,
    Fp8ScaleAttr,
    GeluOp,
    GemmOp,
    LayerNormOp,
    RepeatOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
    YieldOp,
    checked_tensor,
)

f8 = Float8E4M3FNUZType()

__all__ = [
    "BuilderTypeError", "BuilderValueError", "GraphBuilder", "as_element_type", "f8", "f16", "f32",
    "tensor_type",
]


class BuilderTypeError(TypeError):
    """A builder call got a Python object of the wrong kind (named in the message)."""


class BuilderValueError(ValueError):
    """A builder call got an object of the right kind with an invalid value (named)."""

RepeatBody = Callable[
    [Sequence[SSAValue], Sequence[SSAValue], Sequence[SSAValue]], Sequence[SSAValue]
]

ELEMENT_TYPES: dict[str, Attribute] = {
    "f32": f32, "float32": f32, "f16": f16, "float16": f16,
    "f8": f8, "f8E4M3FNUZ": f8, "float8_e4m3fnuz": f8,
}


def as_element_type(spec: object) -> Attribute:
    """An element type from an xDSL type, a NumPy dtype (or scalar type) or a string."""
    if isinstance(spec, Attribute):
        return spec
    if isinstance(spec, str):
        if spec not in ELEMENT_TYPES:
            raise BuilderValueError(
                f"element type {spec!r} is not one of {', '.join(ELEMENT_TYPES)}")
        return ELEMENT_TYPES[spec]
    try:
        dtype = np.dtype(spec)  # type: ignore[call-overload]
    except TypeError:
        raise BuilderTypeError(
            f"element type must be f32, f16 or f8 (an xDSL type, NumPy dtype or name), "
            f"got {spec!r}") from None
    if dtype == np.dtype(ml_dtypes.float8_e4m3fnuz):
        return f8
    if dtype.name not in ELEMENT_TYPES:
        raise BuilderValueError(f"NumPy dtype {dtype.name} has no graph element type "
                                f"(float32, float16 or float8_e4m3fnuz)")
    return ELEMENT_TYPES[dtype.name]


# weak both ways: the builder holds its blocks, so a strong value would keep both alive forever
_BUILDER_OF_BLOCK: weakref.WeakKeyDictionary[Block, weakref.ref[GraphBuilder]] = (
    weakref.WeakKeyDictionary())


class TensorOperators:
    """`@` and `+` on the values a builder made: `x @ w` is `gemm(x, w)`, `x + y` is `add`.

    The builder re-classes its values (`with_operators`) to these subclasses of xDSL's
    `OpResult` and `BlockArgument`, so they stay the same SSA values for xDSL."""

    __slots__ = ()

    def _builder(self, operator: str) -> GraphBuilder:
        assert isinstance(self, SSAValue)
        block = self.owner if isinstance(self.owner, Block) else self.owner.parent_block()
        reference = _BUILDER_OF_BLOCK.get(block) if block is not None else None
        builder = reference() if reference is not None else None
        if builder is None:
            raise BuilderTypeError(f"'{operator}' needs a value of a live GraphBuilder")
        return builder

    def __matmul__(self, other: SSAValue) -> SSAValue:
        return self._builder("@").gemm(self, other)  # type: ignore[arg-type]

    def __add__(self, other: SSAValue) -> SSAValue:
        return self._builder("+").add(self, other)  # type: ignore[arg-type]


class GraphTensorResult(OpResult, TensorOperators):
    __slots__ = ()


class GraphTensorArgument(BlockArgument, TensorOperators):
    __slots__ = ()


def with_operators(value: SSAValue) -> SSAValue:
    if type(value) is OpResult:
        value.__class__ = GraphTensorResult
    elif type(value) is BlockArgument:
        value.__class__ = GraphTensorArgument
    return value


def tensor_type(shape: Sequence[int], element_type: Attribute | str | object,
                scale: int | None = None) -> TensorType:
    """A graph tensor type; `scale` attaches the FP8 power-of-two scale (`#graph.fp8_scale`).
    The element type may be an xDSL type, a NumPy dtype or a name (`as_element_type`)."""
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence):
        raise BuilderTypeError(f"shape must be a sequence of ints, got {shape!r}")
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise BuilderTypeError(f"shape must be a sequence of ints, got {list(shape)!r}")
    element_type = as_element_type(element_type)
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
        if not isinstance(name, str):
            raise BuilderTypeError(f"GraphBuilder function name must be a str, got {name!r}")
        if not name:
            raise BuilderValueError("GraphBuilder function name must not be empty")
        self.name = name
        self.entry = Block()
        self.blocks = [self.entry]  # innermost last: where new ops go
        _BUILDER_OF_BLOCK[self.entry] = weakref.ref(self)  # for `x @ w` and `x + y`
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
        if name is not None and not isinstance(name, str):
            raise BuilderTypeError(f"input name must be a str, got {name!r}")
        if name is not None and not SSAValue.is_valid_name(name):
            # checked before the argument is added, so a rejected call leaves the graph unchanged
            raise BuilderValueError(
                f"input name {name!r} is not an SSA value name: use letters, digits and _$.- "
                "and do not start with a digit"
            )
        arg_name = name or f"arg{index}"
        # the signature rules of a graph function (`check_graph_signature`), at the call
        arg_type = checked_tensor(
            "GraphBuilder.input", f"input {arg_name}", tensor_type(shape, element_type, scale)
        )
        arg = with_operators(self.entry.insert_arg(arg_type, index))
        arg.name_hint = arg_name
        return arg

    def output(self, *values: SSAValue) -> None:
        if len(self.blocks) != 1:
            raise VerifyException("output() inside a repeat body: return the carried values instead")
        self.outputs = [self._value(v, f"output #{i}") for i, v in enumerate(values)]
        for i, value in enumerate(self.outputs):
            self._check_in_scope(value, f"output #{i}")

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

    def _value(self, value: object, what: str) -> SSAValue:
        """`value` as an operand of an op built now: an SSA value visible where ops go."""
        if not isinstance(value, SSAValue):
            raise BuilderTypeError(
                f"{what} must be a value returned by input() or an op method, got {value!r}"
            )
        self._check_in_scope(value, what)
        return value

    def _check_in_scope(self, value: SSAValue, what: str) -> None:
        """Repeat bodies are isolated regions: a value is usable only in the block defining it.
        The verifier would catch some misuses only at build() or not at all (a body value used
        after its repeat verifies, then fails to run), so check at the call."""
        defining = value.owner if isinstance(value.owner, Block) else value.owner.parent_block()
        if defining is self.blocks[-1]:
            return
        name = f"%{value.name_hint}" if value.name_hint else "the value"
        if defining in self.blocks:
            where = "outside this repeat body; pass it in as a carried, invariant or sequence value"
        elif defining is not None and isinstance(defining.parent_op(), RepeatOp):
            repeat_op = defining.parent_op()
            assert repeat_op is not None
            repeat_name = repeat_op.results[0].name_hint if repeat_op.results else None
            where = (
                f"inside the body of graph.repeat{' %' + repeat_name if repeat_name else ''}; "
                "it exists only there: return it as a carried value to use it after the repeat"
            )
        elif defining is not None and isinstance(func := defining.parent_op(), FuncOp):
            where = f"in another function, @{func.sym_name.data}"
        else:
            where = "by another GraphBuilder or in a repeat body that failed to build"
        raise BuilderTypeError(f"{what} {name} cannot be used here: it was defined {where}")

    @staticmethod
    def _flag(value: object, what: str) -> bool:
        if not isinstance(value, bool):  # a truthy string like "no" would silently mean True
            raise BuilderTypeError(f"{what} must be True or False, got {value!r}")
        return value

    def _with_result_scale(self, op: Operation, scale: int | None) -> Operation:
        """`op` with its FP8 result's `#graph.fp8_scale` set to `scale` (None: as built).

        The op classes infer an unscaled result type; the declared scale is the caller's, so the
        op is re-created with that result type (its operand uses dropped from the first one)."""
        if scale is None:
            return op
        if not isinstance(scale, int) or isinstance(scale, bool):
            raise BuilderTypeError(f"{op.name} scale must be an int exponent, got {scale!r}")
        result = op.results[0]
        assert isinstance(result.type, TensorType)
        try:
            scaled = checked_tensor(  # rejects a scale on an f32/f16 result
                op.name, "result",
                tensor_type(result.type.get_shape(), result.type.get_element_type(), scale),
            )
        except VerifyException:
            op.drop_all_references()  # the rejected op must not stay a use of its operands
            raise
        rebuilt = type(op).create(
            operands=list(op.operands),
            result_types=[scaled],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        op.drop_all_references()
        return rebuilt

    def _add(self, op: Operation) -> Operation:
        """Verify and insert `op` (so a rejected op leaves the graph unchanged); unnamed results
        get readable names (`%gemm3`) for diagnostics."""
        if self.built:
            raise BuilderTypeError(f"graph @{self.name} was already built: no ops can be added")
        try:
            op.verify()
        except VerifyException:
            op.drop_all_references()  # the rejected op must not stay a use of its operands
            raise
        self.blocks[-1].add_op(op)
        for result in op.results:
            with_operators(result)
            if result.name_hint is None:
                self.op_count += 1
                result.name_hint = f"{op.name.split('.', 1)[1]}{self.op_count}"
        return op

    def gemm(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        transpose_lhs: bool = False,
        transpose_rhs: bool = False,
        *,
        scale: int | None = None,
    ) -> SSAValue:
        lhs, rhs = self._value(lhs, "gemm lhs"), self._value(rhs, "gemm rhs")
        transpose_lhs = self._flag(transpose_lhs, "gemm transpose_lhs")
        transpose_rhs = self._flag(transpose_rhs, "gemm transpose_rhs")
        op = GemmOp(lhs, rhs, transpose_lhs, transpose_rhs)
        return self._add(self._with_result_scale(op, scale)).results[0]

    def add(self, lhs: SSAValue, rhs: SSAValue, *, scale: int | None = None) -> SSAValue:
        lhs, rhs = self._value(lhs, "add lhs"), self._value(rhs, "add rhs")
        return self._add(self._with_result_scale(AddOp(lhs, rhs), scale)).results[0]

    def gelu(self, x: SSAValue, *, scale: int | None = None) -> SSAValue:
        op = GeluOp(self._value(x, "gelu input"))
        return self._add(self._with_result_scale(op, scale)).results[0]

    def attention(
        self,
        query: SSAValue,
        key: SSAValue,
        value: SSAValue,
        causal: bool = False,
        scale: float | None = None,
        *,
        result_scale: int | None = None,
    ) -> SSAValue:
        """`scale` is the logit scale (default 1/sqrt(head_dim)); `result_scale` is the FP8
        result's `#graph.fp8_scale` (attention's `scale` keyword was taken first)."""
        query, key, value = (
            self._value(v, f"attention {what}")
            for v, what in ((query, "query"), (key, "key"), (value, "value"))
        )
        causal = self._flag(causal, "attention causal")
        if scale is not None:
            if not isinstance(scale, numbers.Real) or isinstance(scale, bool):
                raise BuilderTypeError(
                    f"attention scale must be a number (or None for 1/sqrt(head_dim)), got {scale!r}"
                )
            scale = float(scale)
        op = AttentionOp(query, key, value, causal, scale)
        return self._add(self._with_result_scale(op, result_scale)).results[0]

    def layer_norm(
        self,
        x: SSAValue,
        weight: SSAValue,
        bias: SSAValue,
        eps: float = 1e-5,
        *,
        scale: int | None = None,
    ) -> SSAValue:
        """Normalization over the last axis; `weight` and `bias` are `[D]` for that axis."""
        x, weight, bias = (
            self._value(v, f"layer_norm {what}")
            for v, what in ((x, "input"), (weight, "weight"), (bias, "bias"))
        )
        if not isinstance(eps, numbers.Real) or isinstance(eps, bool):
            raise BuilderTypeError(f"layer_norm eps must be a number, got {eps!r}")
        op = LayerNormOp(x, weight, bias, float(eps))
        return self._add(self._with_result_scale(op, scale)).results[0]

    @staticmethod
    def _ints(values: object, what: str) -> list[int]:
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values
        ):
            raise BuilderTypeError(f"{what} must be a sequence of ints, got {values!r}")
        return [int(v) for v in values]

    def reshape(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        """The same elements, row-major, under `shape` (FP8: the input's scale)."""
        x = self._value(x, "reshape input")
        shape = self._ints(shape, "reshape shape")
        return self._add(ReshapeOp(x, tensor_type(shape, f32).get_shape())).results[0]

    def transpose(self, x: SSAValue, permutation: Sequence[int]) -> SSAValue:
        """Result axis i is input axis permutation[i] (numpy.transpose)."""
        x = self._value(x, "transpose input")
        permutation = self._ints(permutation, "transpose permutation")
        return self._add(TransposeOp(x, permutation)).results[0]

    def slice(
        self,
        x: SSAValue,
        starts: Sequence[int],
        ends: Sequence[int],
        steps: Sequence[int] | None = None,
    ) -> SSAValue:
        """`x[starts[0]:ends[0]:steps[0], ...]`, one entry per axis (steps default to 1)."""
        x = self._value(x, "slice input")
        starts = self._ints(starts, "slice starts")
        ends = self._ints(ends, "slice ends")
        steps = None if steps is None else self._ints(steps, "slice steps")
        return self._add(SliceOp(x, starts, ends, steps)).results[0]

    def concat(self, values: Sequence[SSAValue], axis: int) -> SSAValue:
        """`values` joined along `axis` (FP8: the result takes the first input's scale)."""
        if not isinstance(values, list | tuple):
            raise BuilderTypeError(f"concat values must be a list or tuple of values, got {values!r}")
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise BuilderTypeError(f"concat axis must be an int, got {axis!r}")
        values = [self._value(v, f"concat input #{i}") for i, v in enumerate(values)]
        return self._add(ConcatOp(values, axis)).results[0]

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
        if not callable(body):
            raise BuilderTypeError(
                f"repeat body must be a function (carried, invariants, slices) -> next carried, "
                f"got {body!r}"
            )
        for what, values in (("carried", carried), ("invariant", invariant), ("sequence", sequence)):
            if not isinstance(values, list | tuple):  # one value would be iterated (or fail) oddly
                raise BuilderTypeError(
                    f"repeat {what} must be a list or tuple of values, got {values!r}"
                )
        carried = [self._value(v, f"repeat carried #{i}") for i, v in enumerate(carried)]
        invariant = [self._value(v, f"repeat invariant #{i}") for i, v in enumerate(invariant)]
        sequence = [self._value(v, f"repeat sequence #{i}") for i, v in enumerate(sequence)]
        arg_types = RepeatOp.body_arg_types(
            [v.type for v in carried], [v.type for v in invariant], [v.type for v in sequence]
        )
        block = Block(arg_types=arg_types)
        _BUILDER_OF_BLOCK[block] = weakref.ref(self)
        for arg in block.args:
            with_operators(arg)
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
