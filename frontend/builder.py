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

Values. Every method returns a `GraphValue`: the xDSL SSA value it made (`.value`) with its
`type`, `shape` and `name_hint`, and the operators `x @ w` (`gemm(x, w)`) and `x + y`
(`add(x, y)`), built by the builder that made `x`. The methods take `GraphValue`s or plain
`SSAValue`s; xDSL's own objects are never altered. Element types may be given as NumPy dtypes
or strings as well as xDSL types:

    x = g.input([128, 768], np.float16, name="x")    # or "f16", "float16", f16
    w = g.input([768, 768], "f16", name="w")
    y = g.gelu(x @ w + x)
    y.value                                          # the xDSL OpResult of graph.gelu

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
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import Float8E4M3FNUZType, ModuleOp, TensorType, f16, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ipu_dialects.graph import (
    INDEX_ELEMENT_TYPE,
    AddOp,
    AttentionOp,
    ConcatOp,
    Fp8ScaleAttr,
    GatherOp,
    GeluOp,
    GemmOp,
    LayerNormOp,
    RepeatOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
    YieldOp,
    checked_index_tensor,
    checked_tensor,
)

f8 = Float8E4M3FNUZType()

__all__ = [
    "BuilderTypeError", "BuilderValueError", "GraphBuilder", "GraphValue", "as_element_type", "f8",
    "f16", "f32", "tensor_type",
]


class BuilderTypeError(TypeError):
    """A builder call got a Python object of the wrong kind (named in the message)."""


class BuilderValueError(ValueError):
    """A builder call got an object of the right kind with an invalid value (named)."""

RepeatBody = Callable[
    [Sequence["GraphValue"], Sequence["GraphValue"], Sequence["GraphValue"]],
    Sequence["GraphValue | SSAValue"],
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


class GraphValue:
    """A value a `GraphBuilder` made: the xDSL SSA value (`.value`) and the builder, so that
    `x @ w` is `builder.gemm(x, w)` and `x + y` is `builder.add(x, y)` (a raw `SSAValue` on
    the other side is accepted). Two `GraphValue`s of one SSA value are equal."""

    __slots__ = ("builder", "value")

    def __init__(self, value: SSAValue, builder: GraphBuilder):
        self.value = value
        self.builder = builder

    @property
    def type(self) -> TensorType:
        assert isinstance(self.value.type, TensorType)  # every graph value is a tensor
        return self.value.type

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.get_shape()

    @property
    def name_hint(self) -> str | None:
        return self.value.name_hint

    @name_hint.setter
    def name_hint(self, name: str | None) -> None:
        self.value.name_hint = name

    def __matmul__(self, other: GraphValue | SSAValue) -> GraphValue:
        return self.builder.gemm(self, other)

    def __rmatmul__(self, other: SSAValue) -> GraphValue:
        return self.builder.gemm(other, self)

    def __add__(self, other: GraphValue | SSAValue) -> GraphValue:
        return self.builder.add(self, other)

    def __radd__(self, other: SSAValue) -> GraphValue:
        return self.builder.add(other, self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GraphValue) and other.value is self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"<GraphValue %{self.value.name_hint or '<unnamed>'}: {self.value.type}>"


Value = GraphValue | SSAValue  # what the builder's methods take


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
    ) -> GraphValue:
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
        arg = self.entry.insert_arg(arg_type, index)
        arg.name_hint = arg_name
        return GraphValue(arg, self)

    def output(self, *values: GraphValue | SSAValue) -> None:
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
        if isinstance(value, GraphValue):
            value = value.value
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

    def _result(self, op: Operation) -> GraphValue:
        return GraphValue(self._add(op).results[0], self)

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
            if result.name_hint is None:
                self.op_count += 1
                result.name_hint = f"{op.name.split('.', 1)[1]}{self.op_count}"
        return op

    def gemm(
        self,
        lhs: Value,
        rhs: Value,
        transpose_lhs: bool = False,
        transpose_rhs: bool = False,
        *,
        scale: int | None = None,
    ) -> GraphValue:
        lhs, rhs = self._value(lhs, "gemm lhs"), self._value(rhs, "gemm rhs")
        transpose_lhs = self._flag(transpose_lhs, "gemm transpose_lhs")
        transpose_rhs = self._flag(transpose_rhs, "gemm transpose_rhs")
        op = GemmOp(lhs, rhs, transpose_lhs, transpose_rhs)
        return self._result(self._with_result_scale(op, scale))

    def add(self, lhs: Value, rhs: Value, *, scale: int | None = None) -> GraphValue:
        lhs, rhs = self._value(lhs, "add lhs"), self._value(rhs, "add rhs")
        return self._result(self._with_result_scale(AddOp(lhs, rhs), scale))

    def gelu(self, x: Value, *, scale: int | None = None,
             approximate: str | None = None) -> GraphValue:
        """The exact (erf) GeLU; `approximate="tanh"` for its tanh form."""
        op = GeluOp(self._value(x, "gelu input"), approximate)
        return self._result(self._with_result_scale(op, scale))

    def attention(
        self,
        query: Value,
        key: Value,
        value: Value,
        causal: bool = False,
        scale: float | None = None,
        *,
        result_scale: int | None = None,
        key_mask: Value | None = None,
    ) -> GraphValue:
        """`scale` is the logit scale (default 1/sqrt(head_dim)); `result_scale` is the FP8
        result's `#graph.fp8_scale` (attention's `scale` keyword was taken first); `key_mask`
        an i32 `index_input` of shape [batch..., Sk], 0 for a masked (padding) key."""
        query, key, value = (
            self._value(v, f"attention {what}")
            for v, what in ((query, "query"), (key, "key"), (value, "value"))
        )
        mask = None if key_mask is None else self._value(key_mask, "attention key_mask")
        causal = self._flag(causal, "attention causal")
        if scale is not None:
            if not isinstance(scale, numbers.Real) or isinstance(scale, bool):
                raise BuilderTypeError(
                    f"attention scale must be a number (or None for 1/sqrt(head_dim)), got {scale!r}"
                )
            scale = float(scale)
        op = AttentionOp(query, key, value, causal, scale, key_mask=mask)
        return self._result(self._with_result_scale(op, result_scale))

    def layer_norm(
        self,
        x: Value,
        weight: Value,
        bias: Value,
        eps: float = 1e-5,
        *,
        scale: int | None = None,
    ) -> GraphValue:
        """Normalization over the last axis; `weight` and `bias` are `[D]` for that axis."""
        x, weight, bias = (
            self._value(v, f"layer_norm {what}")
            for v, what in ((x, "input"), (weight, "weight"), (bias, "bias"))
        )
        if not isinstance(eps, numbers.Real) or isinstance(eps, bool):
            raise BuilderTypeError(f"layer_norm eps must be a number, got {eps!r}")
        op = LayerNormOp(x, weight, bias, float(eps))
        return self._result(self._with_result_scale(op, scale))

    @staticmethod
    def _ints(values: object, what: str) -> list[int]:
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values
        ):
            raise BuilderTypeError(f"{what} must be a sequence of ints, got {values!r}")
        return [int(v) for v in values]

    def index_input(self, shape: Sequence[int], name: str | None = None) -> GraphValue:
        """An i32 index argument (graph.gather's indices, or an attention's key mask)."""
        index = len(self.entry.args)
        arg_name = name or f"arg{index}"
        if not SSAValue.is_valid_name(arg_name):
            raise BuilderValueError(f"input name {arg_name!r} is not an SSA value name")
        arg_type = checked_index_tensor("GraphBuilder.index_input", f"input {arg_name}",
                                        TensorType(INDEX_ELEMENT_TYPE, list(shape)))
        arg = self.entry.insert_arg(arg_type, index)
        arg.name_hint = arg_name
        return GraphValue(arg, self)

    def gather(self, table: Value, indices: Value) -> GraphValue:
        """Rows of `table` by i32 `indices` (an embedding lookup)."""
        table = self._value(table, "gather table")
        indices = self._value(indices, "gather indices")
        return self._result(GatherOp(table, indices))

    def reshape(self, x: Value, shape: Sequence[int]) -> GraphValue:
        """The same elements, row-major, under `shape` (FP8: the input's scale)."""
        x = self._value(x, "reshape input")
        shape = self._ints(shape, "reshape shape")
        return self._result(ReshapeOp(x, tensor_type(shape, f32).get_shape()))

    def transpose(self, x: Value, permutation: Sequence[int]) -> GraphValue:
        """Result axis i is input axis permutation[i] (numpy.transpose)."""
        x = self._value(x, "transpose input")
        permutation = self._ints(permutation, "transpose permutation")
        return self._result(TransposeOp(x, permutation))

    def slice(
        self,
        x: Value,
        starts: Sequence[int],
        ends: Sequence[int],
        steps: Sequence[int] | None = None,
    ) -> GraphValue:
        """`x[starts[0]:ends[0]:steps[0], ...]`, one entry per axis (steps default to 1)."""
        x = self._value(x, "slice input")
        starts = self._ints(starts, "slice starts")
        ends = self._ints(ends, "slice ends")
        steps = None if steps is None else self._ints(steps, "slice steps")
        return self._result(SliceOp(x, starts, ends, steps))

    def concat(self, values: Sequence[Value], axis: int) -> GraphValue:
        """`values` joined along `axis` (FP8: the result takes the first input's scale)."""
        if not isinstance(values, list | tuple):
            raise BuilderTypeError(f"concat values must be a list or tuple of values, got {values!r}")
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise BuilderTypeError(f"concat axis must be an int, got {axis!r}")
        operands = [self._value(v, f"concat input #{i}") for i, v in enumerate(values)]
        return self._result(ConcatOp(operands, axis))

    def repeat(
        self,
        count: int,
        body: RepeatBody,
        carried: Sequence[Value] = (),
        invariant: Sequence[Value] = (),
        sequence: Sequence[Value] = (),
    ) -> list[GraphValue]:
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
        inits = [self._value(v, f"repeat carried #{i}") for i, v in enumerate(carried)]
        invariants = [self._value(v, f"repeat invariant #{i}") for i, v in enumerate(invariant)]
        sequences = [self._value(v, f"repeat sequence #{i}") for i, v in enumerate(sequence)]
        arg_types = RepeatOp.body_arg_types(
            [v.type for v in inits], [v.type for v in invariants], [v.type for v in sequences]
        )
        block = Block(arg_types=arg_types)
        for arg, outer in zip(block.args, [*inits, *invariants, *sequences]):
            arg.name_hint = outer.name_hint
        n_carried, n_invariant = len(inits), len(invariants)
        self.blocks.append(block)
        try:
            args = [GraphValue(arg, self) for arg in block.args]
            next_carried = body(
                args[:n_carried],
                args[n_carried : n_carried + n_invariant],
                args[n_carried + n_invariant :],
            )
            if isinstance(next_carried, SSAValue | GraphValue) or not isinstance(
                next_carried, Sequence
            ):
                raise BuilderTypeError(
                    "a repeat body must return a list of the next carried values, got "
                    f"{next_carried!r}"
                )
            yielded = [self._value(v, f"repeat body result #{i}")
                       for i, v in enumerate(next_carried)]
            block.add_op(YieldOp(*yielded))
        finally:
            self.blocks.pop()
        op = RepeatOp(count, inits, invariants, sequences, Region(block))
        return [GraphValue(result, self) for result in self._add(op).results]
