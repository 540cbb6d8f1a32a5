"""The `graph` dialect: the semantic compute graph (ComputeGraph) of ipu-stack.

Values are builtin ranked tensors `tensor<AxBx...xT>` of any rank with static extents and element
type `f32`, `f16` or FP8 `f8E4M3FNUZ`. Graphs live in `func.func`.

FP8 scale
---------
An FP8 tensor stores `q` (an `f8E4M3FNUZ` number) and represents `q * 2**scale`, with one
power-of-two `scale` for the whole tensor (the hardware's `f8f143` storage). At graph level the
scale is part of the value's *type*, as an encoding on the tensor type (the way MLIR's sparse
tensors carry their format):

    tensor<64x64xf8E4M3FNUZ, #graph.fp8_scale<-3>>     // value = q * 2**-3

An FP8 tensor without encoding has scale 0. The scale is a signed integer in -31..31 and only FP8
tensors may carry it. Ops require equal *element types* of their operands; scales may differ
(they are storage detail, the interpreter and the lowering apply them).

Ops (syntax)
------------
    %c = graph.gemm %a, %b [transpose_lhs] [transpose_rhs] : (T_a, T_b) -> T_c
    %s = graph.add %a, %b : (T_a, T_b) -> T_s
    %g = graph.gelu %x : T -> T
    %o = graph.attention %q, %k, %v [causal] [scale 0.125] : (T_q, T_k, T_v) -> T_o
    %r:2 = graph.repeat 4 carried(%x = %x0 : T, %y = %y0 : U)
                          invariant(%w = %w0 : W) sequence(%s = %seq : 4xS) {
      ...
      graph.yield %x1, %y1 : T, U
    } -> T, U

`graph.gemm` contracts the last two axes (after the optional transposes) and broadcasts the
leading batch axes NumPy-style: `[2,1,M,K] x [3,K,N] -> [2,3,M,N]`. `graph.add` broadcasts any
ranks NumPy-style. `graph.gelu` is the exact function `x * (1 + erf(x / sqrt 2)) / 2`.
`graph.attention` takes query `[..., heads, Sq, D]`, key and value `[..., heads, Sk, D]`
(Sk == Sq when `causal`), computes `softmax(scale * q @ k^T) @ v` over the key axis; `scale`
defaults to `1/sqrt(D)` and is then not printed.

`graph.repeat N` runs its single-block body N times. Its block arguments are, in order: the
carried values (initialised from `carried(...)`, replaced by the `graph.yield` operands after each
iteration), the invariants (read-only), and one slice per sequence (`sequence(%s = %seq : T)`:
`%seq` has a leading axis of extent N, iteration `i` sees `%seq[i]` whose type is printed after the
colon). Its results are the final carried values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    Float8E4M3FNUZType,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    NoneAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

FP8_SCALE_RANGE = range(-31, 32)


# ----------------------------------------------------------------------------------------------
# Attributes
# ----------------------------------------------------------------------------------------------


@irdl_attr_definition
class Fp8ScaleAttr(ParametrizedAttribute):
    """The tensor-wide power-of-two scale of an FP8 tensor: `#graph.fp8_scale<-3>`."""

    name = "graph.fp8_scale"
    exponent: IntAttr

    def __init__(self, exponent: int):
        super().__init__(IntAttr(exponent))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (IntAttr(parser.parse_integer(allow_boolean=False)),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.exponent.data}>")

    def verify(self) -> None:
        if self.exponent.data not in FP8_SCALE_RANGE:
            raise VerifyException(
                f"FP8 scale exponent {self.exponent.data} is outside "
                f"{FP8_SCALE_RANGE.start}..{FP8_SCALE_RANGE.stop - 1}"
            )


# ----------------------------------------------------------------------------------------------
# Shape helpers shared by the verifiers and the builders (they speak in the user's terms)
# ----------------------------------------------------------------------------------------------

SUPPORTED_ELEMENT_TYPES = (Float32Type, Float16Type, Float8E4M3FNUZType)


def fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def checked_tensor(op_name: str, what: str, value_type: Attribute) -> TensorType:
    """The tensor type of an operand/result, or a diagnostic saying why it is not a graph tensor."""
    if not isinstance(value_type, TensorType):
        raise VerifyException(f"{op_name}: {what} must be a ranked tensor, got {value_type}")
    shape = value_type.get_shape()
    if any(d < 0 for d in shape):
        raise VerifyException(f"{op_name}: {what} must have static extents, got {value_type}")
    element = value_type.get_element_type()
    if not isinstance(element, SUPPORTED_ELEMENT_TYPES):
        raise VerifyException(
            f"{op_name}: {what} has element type {element}; graph tensors are f32, f16 or f8E4M3FNUZ"
        )
    encoding = value_type.encoding
    if encoding != NoneAttr():
        if not isinstance(encoding, Fp8ScaleAttr):
            raise VerifyException(
                f"{op_name}: {what} has encoding {encoding}; the only graph encoding is "
                "#graph.fp8_scale<n>"
            )
        if not isinstance(element, Float8E4M3FNUZType):
            raise VerifyException(
                f"{op_name}: {what} has an FP8 scale but element type {element}; "
                "only f8E4M3FNUZ tensors are scaled"
            )
    return value_type


def fp8_scale(tensor_type: TensorType) -> int:
    """The power-of-two exponent of a tensor's values (0 unless an FP8 scale is attached)."""
    encoding = tensor_type.encoding
    return encoding.exponent.data if isinstance(encoding, Fp8ScaleAttr) else 0


def broadcast_shapes(
    lhs: Sequence[int], rhs: Sequence[int], describe: str
) -> tuple[int, ...]:
    """NumPy broadcasting of two shapes; `describe` names them in the error message."""
    rank = max(len(lhs), len(rhs))
    a = (1,) * (rank - len(lhs)) + tuple(lhs)
    b = (1,) * (rank - len(rhs)) + tuple(rhs)
    out: list[int] = []
    for axis, (x, y) in enumerate(zip(a, b)):
        if x != y and 1 not in (x, y):
            raise VerifyException(
                f"{describe} {fmt_shape(lhs)} and {fmt_shape(rhs)} do not broadcast: "
                f"extents {x} and {y} at axis {axis - rank} (counted from the last axis)"
            )
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(out)


def check_same_element_type(op_name: str, named: Sequence[tuple[str, TensorType]]) -> None:
    first_name, first = named[0]
    for name, t in named[1:]:
        if t.get_element_type() != first.get_element_type():
            raise VerifyException(
                f"{op_name}: {name} element type {t.get_element_type()} differs from "
                f"{first_name} element type {first.get_element_type()}"
            )


def check_result_shape(op_name: str, result: TensorType, expected: Sequence[int], why: str) -> None:
    if tuple(result.get_shape()) != tuple(expected):
        raise VerifyException(
            f"{op_name}: result shape {fmt_shape(result.get_shape())} does not match "
            f"{fmt_shape(expected)} ({why})"
        )


# ----------------------------------------------------------------------------------------------
# graph.gemm
# ----------------------------------------------------------------------------------------------


def gemm_result_shape(
    lhs: Sequence[int], rhs: Sequence[int], transpose_lhs: bool, transpose_rhs: bool
) -> tuple[int, ...]:
    """Shape of `lhs @ rhs` after the transposes; raises VerifyException in the user's terms."""
    for name, shape in (("lhs", lhs), ("rhs", rhs)):
        if len(shape) < 2:
            raise VerifyException(
                f"graph.gemm: {name} has shape {fmt_shape(shape)} of rank {len(shape)}; "
                "gemm operands need rank >= 2 (the last two axes are the matrix)"
            )
    m, k_lhs = (lhs[-1], lhs[-2]) if transpose_lhs else (lhs[-2], lhs[-1])
    k_rhs, n = (rhs[-1], rhs[-2]) if transpose_rhs else (rhs[-2], rhs[-1])
    if k_lhs != k_rhs:
        lhs_axis = "-2 (transposed)" if transpose_lhs else "-1"
        rhs_axis = "-1 (transposed)" if transpose_rhs else "-2"
        raise VerifyException(
            f"graph.gemm: contraction extents differ: lhs {fmt_shape(lhs)} axis {lhs_axis} is "
            f"{k_lhs}, rhs {fmt_shape(rhs)} axis {rhs_axis} is {k_rhs}"
        )
    batch = broadcast_shapes(lhs[:-2], rhs[:-2], "graph.gemm: batch axes of lhs and rhs")
    return (*batch, m, n)


@irdl_op_definition
class GemmOp(IRDLOperation):
    """Batched matrix product over the last two axes, batch axes broadcast NumPy-style."""

    name = "graph.gemm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_lhs = opt_prop_def(UnitAttr)
    transpose_rhs = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)? "
        "attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        transpose_lhs: bool = False,
        transpose_rhs: bool = False,
    ):
        lhs_type = checked_tensor(self.name, "lhs", SSAValue.get(lhs).type)
        rhs_type = checked_tensor(self.name, "rhs", SSAValue.get(rhs).type)
        shape = gemm_result_shape(
            lhs_type.get_shape(), rhs_type.get_shape(), transpose_lhs, transpose_rhs
        )
        properties: dict[str, Attribute] = {}
        if transpose_lhs:
            properties["transpose_lhs"] = UnitAttr()
        if transpose_rhs:
            properties["transpose_rhs"] = UnitAttr()
        super().__init__(
            operands=[lhs, rhs],
            result_types=[TensorType(lhs_type.get_element_type(), shape)],
            properties=properties,
        )

    def verify_(self) -> None:
        lhs = checked_tensor(self.name, "lhs", self.lhs.type)
        rhs = checked_tensor(self.name, "rhs", self.rhs.type)
        result = checked_tensor(self.name, "result", self.result.type)
        check_same_element_type(self.name, [("lhs", lhs), ("rhs", rhs), ("result", result)])
        expected = gemm_result_shape(
            lhs.get_shape(),
            rhs.get_shape(),
            self.transpose_lhs is not None,
            self.transpose_rhs is not None,
        )
        check_result_shape(
            self.name, result, expected,
            f"batch axes broadcast, then [M, N] of {fmt_shape(lhs.get_shape())} x "
            f"{fmt_shape(rhs.get_shape())}",
        )


Graph = Dialect("graph", [GemmOp], [Fp8ScaleAttr])
