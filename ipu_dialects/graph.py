"""The `graph` dialect: the semantic compute graph (ComputeGraph) of ipu-stack.

Values are builtin ranked tensors `tensor<AxBx...xT>` of any rank with static extents >= 1 and
element type `f32`, `f16` or FP8 `f8E4M3FNUZ`. Graphs live in `func.func`; the arguments and
results of a graph function are such tensors too (`check_graph_signature`).

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
    %g = graph.gelu %x [approximate tanh] : T -> T
    %o = graph.attention %q, %k, %v [key_mask %m] [causal] [scale 0.125]
           : (T_q, T_k, T_v[, tensor<B..xSkxi32>]) -> T_o
    %n = graph.layer_norm %x, %w, %b eps 1.0e-05 : (T, W, B) -> T
    %r = graph.reshape %x : T -> U
    %t = graph.transpose %x permutation [0, 2, 1] : T -> U
    %s = graph.slice %x starts [0, 64] ends [8, 128] steps [1, 1] : T -> U
    %c = graph.concat %a, %b axis 1 : (T_a, T_b) -> T_c
    %e = graph.gather %table, %ids : (tensor<VxDxT>, tensor<...xi32>) -> tensor<...xDxT>
    %r:2 = graph.repeat 4 carried(%x = %x0 : T, %y = %y0 : U)
                          invariant(%w = %w0 : W) sequence(%s = %seq : tensor<4x...>) {
      ...
      graph.yield %x1, %y1 : T, U
    } -> T, U

`graph.gemm` contracts the last two axes (after the optional transposes) and broadcasts the
leading batch axes NumPy-style: `[2,1,M,K] x [3,K,N] -> [2,3,M,N]`. `graph.add` broadcasts any
ranks NumPy-style. `graph.gelu` is the exact function `x * (1 + erf(x / sqrt 2)) / 2`; with
`approximate tanh` it is the tanh form `x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2`
(ONNX's `approximate="tanh"`, Hugging Face's `gelu_new`). Exact is the default and is written
without `approximate`.
`graph.attention` takes query `[..., heads, Sq, D]`, key and value `[..., heads, Sk, D]`
(Sk == Sq when `causal`), computes `softmax(scale * q @ k^T) @ v` over the key axis; `scale`
defaults to `1/sqrt(D)` and is then not printed. It must be finite and positive; like MLIR's float
attributes it is written as an MLIR float literal (digits before and after the point, such as
`0.125` or `1.0e-05`; `1e-05` is not one) or as the hexadecimal bits of an f64
(`scale 0x3FC0000000000000` is 0.125). `key_mask` (optional) is a key padding mask: an i32
function argument of shape `[..., Sk]` (the query's batch axes, then the keys) whose entries
are 0 (the key is masked for every head and query row of that batch index) or 1; a row with
every key masked is zeros (docs/internals.md, "Embeddings and padding masks").

`graph.layer_norm` normalizes over the last axis, `(x - mean) / sqrt(var + eps) * weight + bias`
with the biased variance; `weight` and `bias` are `[D]` for a last axis of extent D, `eps` is
finite and positive (written like attention's scale). The layout ops move elements without
computing: `graph.reshape` keeps the row-major order under the result type's shape (equal element
counts); `graph.transpose` makes result axis `i` the input axis `permutation[i]`;
`graph.slice` takes, per axis, `start:end:step` with `0 <= start < end <= extent` and
`step >= 1` (no empty results, no reversal); `graph.concat` joins its operands along `axis`
(0 <= axis < rank), every other extent equal.

`graph.gather` is an embedding lookup: it takes rows (entries of the leading axis) of `table` by
integer `indices`; the result's shape is the indices' shape followed by the table's trailing
axes (`table[indices]` in NumPy, torch's `embedding`, ONNX `Gather` on axis 0). Indices are
the dialect's only integer tensors: element type `i32` (signless, read as signed), and every
index must be in `0 <= i < rows` when the graph runs (a value check, not a type check: the
reference interpreter refuses an index outside it). Why i32 and nothing else: a table the
device can hold has far fewer than 2**31 rows (the whole IPU21 holds 918 MiB), the tile's
words and address arithmetic are 32-bit, and the IPU has no 64-bit integer arithmetic, so
i64 ids (torch's default) are narrowed on the host, range-checked, before they are written;
narrower types (i8, i16) would cap the vocabulary below real models' (GPT-2's 50257 rows).
An index tensor may be a function argument and a gather's indices (or an attention's
key_mask), nothing else.

`graph.repeat N` runs its single-block body N times. Its block arguments are, in order: the
carried values (initialised from `carried(...)`, replaced by the `graph.yield` operands after each
iteration), the invariants (read-only), and one slice per sequence (`sequence(%s = %seq : T)`:
`%seq` has a leading axis of extent N and iteration `i` sees `%seq[i]`). In every group the type
after the colon is the type of the outer operand; a sequence's block argument has that type
without the leading axis. Its results are the final carried values. The body sees only its
block arguments (no implicit captures: the op is IsolatedFromAbove): outside values enter as invariants, which keeps the
three kinds of inputs explicit for the lowering. `-> types` after the body repeats the result
types for readability; it is required when there are carried values and must list their types.
"""

from __future__ import annotations

import math
import struct
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
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
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    OpTrait,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from device.layouts import FP8_SCALE_RANGE
from device.numerics import GeluApproximation
from ipu_dialects import shapes as rules

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
            start = parser.pos
            exponent = parser.parse_integer(allow_boolean=False)
            if exponent not in FP8_SCALE_RANGE:  # here, so the error points at the text
                parser.raise_error(fp8_scale_range_error(exponent), start, parser.pos)
            return (IntAttr(exponent),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.exponent.data}>")

    def verify(self) -> None:
        if self.exponent.data not in FP8_SCALE_RANGE:
            raise VerifyException(fp8_scale_range_error(self.exponent.data))


def fp8_scale_range_error(exponent: int) -> str:
    return (
        f"#graph.fp8_scale: exponent {exponent} is outside "
        f"{FP8_SCALE_RANGE.start}..{FP8_SCALE_RANGE.stop - 1}"
    )


# ----------------------------------------------------------------------------------------------
# Shape helpers shared by the verifiers and the builders (they speak in the user's terms)
# ----------------------------------------------------------------------------------------------

SUPPORTED_ELEMENT_TYPES = (Float32Type, Float16Type, Float8E4M3FNUZType)
INDEX_ELEMENT_TYPE = i32  # the element type of graph.gather's indices (module docstring)


def checked_tensor(op_name: str, what: str, value_type: Attribute) -> TensorType:
    """The tensor type of an operand/result, or a diagnostic saying why it is not a graph tensor."""
    if not isinstance(value_type, TensorType):
        raise VerifyException(f"{op_name}: {what} must be a ranked tensor, got {value_type}")
    shape = value_type.get_shape()
    if any(d < 0 for d in shape):
        raise VerifyException(f"{op_name}: {what} must have static extents, got {value_type}")
    if 0 in shape:
        # An empty tensor has nothing to compute or place on tiles, and some ops have no
        # meaning on it (attention's softmax over zero keys, its 1/sqrt(head_dim) default).
        axis = list(shape).index(0)
        raise VerifyException(
            f"{op_name}: {what} has shape {rules.fmt_shape(shape)} with extent 0 at axis {axis}; "
            "graph tensors need every extent >= 1"
        )
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


def checked_index_tensor(op_name: str, what: str, value_type: Attribute) -> TensorType:
    """The type of an index tensor (static extents >= 1, element type i32), or a diagnostic."""
    if not isinstance(value_type, TensorType):
        raise VerifyException(f"{op_name}: {what} must be a ranked tensor, got {value_type}")
    if value_type.get_element_type() != INDEX_ELEMENT_TYPE or value_type.encoding != NoneAttr():
        raise VerifyException(
            f"{op_name}: {what} has type {value_type}; indices are i32 tensors without encoding"
        )
    shape = value_type.get_shape()
    if any(d < 1 for d in shape):
        raise VerifyException(
            f"{op_name}: {what} must have static extents >= 1, got {value_type}"
        )
    return value_type


def is_index_type(value_type: Attribute) -> bool:
    return isinstance(value_type, TensorType) and value_type.get_element_type() == INDEX_ELEMENT_TYPE


def check_host_written(op_name: str, what: str, value: SSAValue, why: str) -> None:
    """An i32 operand is an argument of the graph function (or of the entry block a builder is
    filling), never a repeat body's: no graph op computes index tensors."""
    if not isinstance(value, BlockArgument) or isinstance(
        value.owner.parent_op(), RepeatOp
    ):
        raise VerifyException(f"{op_name}: {what} must be an argument of the graph function "
                              f"({why})")


def check_graph_signature(func: FuncOp) -> None:
    """The arguments and results of a graph function are graph tensors (`checked_tensor`);
    an argument may also be an index tensor (`checked_index_tensor`, graph.gather's indices).

    The op verifiers see only the values the ops use; an unused argument, or an FP8 scale on an
    f32 argument that flows straight to `func.return`, passes them. The drivers that run or lower
    a graph function call this on it.
    """
    owner = f"func.func @{func.sym_name.data}"
    args = func.body.block.args if func.body.blocks else ()
    for i, arg_type in enumerate(func.function_type.inputs.data):
        hint = args[i].name_hint if i < len(args) else None
        what = f"argument %{hint}" if hint else f"argument #{i}"
        if is_index_type(arg_type):
            checked_index_tensor(owner, what, arg_type)
        else:
            checked_tensor(owner, what, arg_type)
    for i, result_type in enumerate(func.function_type.outputs.data):
        checked_tensor(owner, f"result #{i}", result_type)


def fp8_scale(tensor_type: TensorType) -> int:
    """The power-of-two exponent of a tensor's values (0 unless an FP8 scale is attached)."""
    encoding = tensor_type.encoding
    return encoding.exponent.data if isinstance(encoding, Fp8ScaleAttr) else 0


def check_same_element_type(op_name: str, named: Sequence[tuple[str, TensorType]]) -> None:
    first_name, first = named[0]
    for name, t in named[1:]:
        if t.get_element_type() != first.get_element_type():
            raise VerifyException(
                f"{op_name}: {name} element type {t.get_element_type()} differs from "
                f"{first_name} element type {first.get_element_type()}"
            )


def located_format_errors(op_class: type[IRDLOperation]) -> type[IRDLOperation]:
    """Give type-constraint failures of a declarative format a source location.

    xDSL's declarative parser checks operand types against their constraints (e.g. "f32 should
    be of base attribute tensor") with a bare VerifyException that carries no position; re-raise
    it as a ParseError pointing at the op's text.

    Why a wrapper around the generated method rather than an xDSL hook: xDSL 0.74 has none.
    `FormatProgram.parse` runs those checks (`resolve_constraint_variables`) after all format
    elements are parsed, outside any custom directive; `irdl_op_definition` rejects a class
    that defines `parse` next to `assembly_format` and then sets the generated `parse` on the
    class itself, so neither a directive, an override nor a base class can catch the error.
    """
    format_parse = op_class.parse

    def parse(cls: type[IRDLOperation], parser: Parser) -> IRDLOperation:
        start = parser.pos
        try:
            return format_parse(parser)
        except VerifyException as error:
            parser.raise_error(f"{cls.name}: {error}", start)

    # Replacing the classmethod xDSL generated: mypy types `parse` as already bound and rejects
    # assigning to a method; the descriptor below binds exactly as the generated one did.
    op_class.parse = classmethod(parse)  # type: ignore[method-assign, assignment]
    return op_class


@dataclass(frozen=True)
class GraphOpRules(OpTrait):
    """What every graph op obeys beyond its own verifier.

    - It lives in a `func.func` body or a `graph.repeat` body: a graph op at module level
      belongs to no function, and nothing would run it.
    - Its attribute dictionary holds only discardable attributes with a dialect prefix. A
      property spelled there (`{causal}`) would be a separate, ignored attribute, and would
      become the property after a generic round trip: the meaning would change silently; an
      unprefixed name is most likely a misspelt keyword (`{causual}`).
    """

    def verify(self, op: Operation) -> None:
        parent = op.parent_op()
        if parent is not None and not isinstance(parent, FuncOp | RepeatOp):
            raise VerifyException(
                f"{op.name}: graph ops live in a func.func or graph.repeat body, not in "
                f"{parent.name}"
            )
        assert isinstance(op, IRDLOperation)  # the trait is only on IRDL-defined graph ops
        properties = type(op).get_irdl_definition().properties
        for name in op.attributes:
            if name in properties:
                raise VerifyException(
                    f"{op.name}: '{name}' belongs in the op's own syntax, not in its attribute "
                    "dictionary (there it would be a separate attribute that nothing reads)"
                )
            if "." not in name:
                raise VerifyException(
                    f"{op.name}: unknown attribute '{name}': graph ops have no such keyword, "
                    f"and discardable attributes need a dialect prefix (such as 'mytool.{name}')"
                )


# ----------------------------------------------------------------------------------------------
# graph.gemm
# ----------------------------------------------------------------------------------------------


@located_format_errors
@irdl_op_definition
class GemmOp(IRDLOperation):
    """Batched matrix product over the last two axes, batch axes broadcast NumPy-style."""

    name = "graph.gemm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_lhs = opt_prop_def(UnitAttr)
    transpose_rhs = opt_prop_def(UnitAttr)
    traits = traits_def(Pure(), GraphOpRules())
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
        shape = rules.gemm_result_shape(
            self.name, lhs_type.get_shape(), rhs_type.get_shape(), transpose_lhs, transpose_rhs
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
        rules.check_gemm_shapes(
            self.name, lhs.get_shape(), rhs.get_shape(), result.get_shape(),
            self.transpose_lhs is not None, self.transpose_rhs is not None,
        )


# ----------------------------------------------------------------------------------------------
# graph.add, graph.gelu
# ----------------------------------------------------------------------------------------------


class BinaryElementwiseOp(IRDLOperation, ABC):
    """The base of graph's elementwise ops of two tensors (as xDSL's `arith` builds its binary
    ops): operands broadcast NumPy-style, one element type throughout. A leaf op names itself
    and says what it computes."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), GraphOpRules())
    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        lhs_type = checked_tensor(self.name, "lhs", SSAValue.get(lhs).type)
        rhs_type = checked_tensor(self.name, "rhs", SSAValue.get(rhs).type)
        shape = rules.add_result_shape(self.name, lhs_type.get_shape(), rhs_type.get_shape())
        super().__init__(
            operands=[lhs, rhs], result_types=[TensorType(lhs_type.get_element_type(), shape)]
        )

    def verify_(self) -> None:
        lhs = checked_tensor(self.name, "lhs", self.lhs.type)
        rhs = checked_tensor(self.name, "rhs", self.rhs.type)
        result = checked_tensor(self.name, "result", self.result.type)
        check_same_element_type(self.name, [("lhs", lhs), ("rhs", rhs), ("result", result)])
        rules.check_add_shapes(self.name, lhs.get_shape(), rhs.get_shape(), result.get_shape())


class UnaryElementwiseOp(IRDLOperation, ABC):
    """The base of graph's elementwise ops of one tensor: the result has the input's shape and
    element type."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), GraphOpRules())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation):
        input_type = checked_tensor(self.name, "input", SSAValue.get(input).type)
        super().__init__(
            operands=[input],
            result_types=[TensorType(input_type.get_element_type(), input_type.get_shape())],
        )

    def verify_(self) -> None:
        input = checked_tensor(self.name, "input", self.input.type)
        result = checked_tensor(self.name, "result", self.result.type)
        check_same_element_type(self.name, [("input", input), ("result", result)])
        rules.check_result_shape(self.name, result.get_shape(), input.get_shape(), "the input shape")


@located_format_errors
@irdl_op_definition
class AddOp(BinaryElementwiseOp):
    """Elementwise sum with full NumPy broadcasting of any ranks."""

    name = "graph.add"


@irdl_attr_definition
class GeluApproximationAttr(EnumAttribute[GeluApproximation], SpacedOpaqueSyntaxAttribute):
    """Which approximation of the GeLU a `graph.gelu` (or `mid.gelu`) computes; absent for the
    exact one. Generic form: `#graph<gelu_approximation tanh>`."""

    name = "graph.gelu_approximation"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> GeluApproximation:
        # xDSL's enum parser says only "Expected `tanh`."; name the field and the default.
        start = parser.pos
        word = parser.parse_optional_identifier_or_str_literal()
        if word not in GeluApproximation.__members__.values():
            allowed = ", ".join(f"'{a}'" for a in GeluApproximation)
            parser.raise_error(
                f"gelu approximate must be {allowed}, not "
                f"{repr(word) if word is not None else 'missing'}; the exact (erf) GeLU is the "
                "default and is written without 'approximate'", start, start + max(len(word or ""), 1),
            )
        return GeluApproximation(word)


def gelu_approximation(approximate: str | GeluApproximation | None) -> GeluApproximationAttr | None:
    """The property value of a GeLU `approximate` given from Python (None or "none": exact)."""
    if approximate is None or approximate == "none":
        return None
    try:
        return GeluApproximationAttr(GeluApproximation(approximate))
    except ValueError:
        allowed = ", ".join(f"'{a}'" for a in GeluApproximation)
        raise VerifyException(
            f"graph.gelu: approximate must be {allowed} or None (the exact erf GeLU), "
            f"not {approximate!r}"
        ) from None


@located_format_errors
@irdl_op_definition
class GeluOp(UnaryElementwiseOp):
    """The GeLU, elementwise: exact, `x * (1 + erf(x / sqrt(2))) / 2`, or with `approximate
    tanh` the tanh form `x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2`."""

    name = "graph.gelu"
    approximate = opt_prop_def(GeluApproximationAttr)
    assembly_format = (
        "$input (`approximate` $approximate^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue | Operation,
                 approximate: str | GeluApproximation | None = None):
        input_type = checked_tensor(self.name, "input", SSAValue.get(input).type)
        attr = gelu_approximation(approximate)
        IRDLOperation.__init__(
            self,
            operands=[input],
            result_types=[TensorType(input_type.get_element_type(), input_type.get_shape())],
            properties={} if attr is None else {"approximate": attr},
        )

    @property
    def approximation(self) -> GeluApproximation | None:
        return None if self.approximate is None else self.approximate.data


# ----------------------------------------------------------------------------------------------
# graph.attention
# ----------------------------------------------------------------------------------------------


def float_literal(value: float) -> str:
    """`repr` of a float, with the `.` MLIR's lexer needs before an exponent (1e-05 -> 1.0e-05)."""
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    return text if "." in mantissa or not e else f"{mantissa}.0e{exponent}"


def parse_f64_literal(parser: Parser, op_name: str, keyword: str) -> float:
    """An MLIR float literal, or (as in MLIR's float attributes) the hex bits of an f64.

    `F64Literal` prints the ops' float properties with `float_literal` and parses them here:
    xDSL 0.74's declarative float is exact but prints `1.250000e-01`, and cannot read back
    the hexadecimal form it prints a NaN in."""
    start = parser.pos
    number = parser.parse_number()
    text = parser.lexer.input.content[start : parser.pos].strip()
    if not text.lstrip("-").lower().startswith("0x"):
        return float(number)
    if text.startswith("-") or not 0 <= number < 2**64:
        parser.raise_error(
            f"{op_name}: a hexadecimal {keyword} is the 64 bits of an f64", start, parser.pos
        )
    return struct.unpack("<d", int(number).to_bytes(8, "little"))[0]


@irdl_custom_directive
class F64Literal(CustomDirective):
    """`custom<F64Literal>($prop)`: an f64 property printed exactly by `float_literal` (`0.125`,
    `1.0e-05`, never xDSL's `1.250000e-01`) and parsed by `parse_f64_literal`, which also takes
    MLIR's hexadecimal bits of an f64 (the only way to spell a NaN)."""

    value: AttributeVariable

    def is_anchorable(self) -> bool:
        return True

    def is_present(self, op: IRDLOperation) -> bool:
        return self.value.is_present(op)

    def parse(self, parser: Parser, state: ParsingState) -> None:
        number = parse_f64_literal(parser, state.op_type.name, self.value.name)
        self.value.set(state, FloatAttr(number, f64))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        attr = self.value.get(op)
        assert isinstance(attr, FloatAttr)
        state.print_whitespace(printer)
        printer.print_string(float_literal(attr.value.data))


@located_format_errors
@irdl_op_definition
class AttentionOp(IRDLOperation):
    """softmax(scale * query @ key^T [causally masked] [key-masked]) @ value, softmax over the
    key axis."""

    name = "graph.attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    # a key padding mask: [..., Sk] i32 of 0/1, 0 = the key is masked for every query and head
    key_mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    causal = opt_prop_def(UnitAttr)
    # Absent means the default 1/sqrt(head_dim); kept absent so that it follows the shape.
    scale = opt_prop_def(FloatAttr[Float64Type])
    traits = traits_def(Pure(), GraphOpRules())
    custom_directives = (F64Literal,)
    assembly_format = (
        "$query `,` $key `,` $value (`key_mask` $key_mask^)? (`causal` $causal^)? "
        "(`scale` custom<F64Literal>($scale)^)? "
        "attr-dict `:` `(` type($query) `,` type($key) `,` type($value) "
        "(`,` type($key_mask)^)? `)` `->` type($result)"
    )

    def __init__(
        self,
        query: SSAValue | Operation,
        key: SSAValue | Operation,
        value: SSAValue | Operation,
        causal: bool = False,
        scale: float | None = None,
        key_mask: SSAValue | Operation | None = None,
    ):
        query_type = checked_tensor(self.name, "query", SSAValue.get(query).type)
        properties: dict[str, Attribute] = {}
        if causal:
            properties["causal"] = UnitAttr()
        if scale is not None:
            properties["scale"] = FloatAttr(scale, f64)
        super().__init__(
            operands=[query, key, value, [] if key_mask is None else [key_mask]],
            result_types=[TensorType(query_type.get_element_type(), query_type.get_shape())],
            properties=properties,
        )

    def effective_scale(self) -> float:
        """The scale applied to the logits: the explicit one or 1/sqrt(head_dim)."""
        if self.scale is not None:
            return self.scale.value.data
        query = self.query.type
        assert isinstance(query, TensorType)
        return 1.0 / math.sqrt(query.get_shape()[-1])

    def verify_(self) -> None:
        query = checked_tensor(self.name, "query", self.query.type)
        key = checked_tensor(self.name, "key", self.key.type)
        value = checked_tensor(self.name, "value", self.value.type)
        result = checked_tensor(self.name, "result", self.result.type)
        check_same_element_type(
            self.name, [("query", query), ("key", key), ("value", value), ("result", result)]
        )
        rules.check_attention_shapes(
            self.name, query.get_shape(), key.get_shape(), value.get_shape(), result.get_shape(),
            self.causal is not None,
        )
        if self.scale is not None:
            rules.check_positive(self.name, "scale", self.scale.value.data)
        if self.key_mask is not None:
            mask = checked_index_tensor(self.name, "key_mask", self.key_mask.type)
            rules.check_key_mask_shape(self.name, mask.get_shape(), query.get_shape(), key.get_shape())
            check_host_written(self.name, "key_mask", self.key_mask,
                               "a key mask is an input the host writes; no graph op computes i32 tensors")


# ----------------------------------------------------------------------------------------------
# graph.layer_norm
# ----------------------------------------------------------------------------------------------


@located_format_errors
@irdl_op_definition
class LayerNormOp(IRDLOperation):
    """Normalizes over the last axis: `(x - mean) / sqrt(var + eps) * weight + bias`."""

    name = "graph.layer_norm"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    eps = prop_def(FloatAttr[Float64Type])
    traits = traits_def(Pure(), GraphOpRules())
    custom_directives = (F64Literal,)
    assembly_format = (
        "$input `,` $weight `,` $bias `eps` custom<F64Literal>($eps) attr-dict "
        "`:` `(` type($input) `,` type($weight) `,` type($bias) `)` `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        weight: SSAValue | Operation,
        bias: SSAValue | Operation,
        eps: float = 1e-5,
    ):
        input_type = checked_tensor(self.name, "input", SSAValue.get(input).type)
        super().__init__(
            operands=[input, weight, bias],
            result_types=[TensorType(input_type.get_element_type(), input_type.get_shape())],
            properties={"eps": FloatAttr(eps, f64)},
        )

    def verify_(self) -> None:
        input = checked_tensor(self.name, "input", self.input.type)
        weight = checked_tensor(self.name, "weight", self.weight.type)
        bias = checked_tensor(self.name, "bias", self.bias.type)
        result = checked_tensor(self.name, "result", self.result.type)
        check_same_element_type(
            self.name, [("input", input), ("weight", weight), ("bias", bias), ("result", result)]
        )
        rules.check_layer_norm_shapes(self.name, input.get_shape(), weight.get_shape(),
                                bias.get_shape(), result.get_shape())
        rules.check_positive(self.name, "eps", self.eps.value.data)


# ----------------------------------------------------------------------------------------------
# Layout ops: graph.reshape, graph.transpose, graph.slice, graph.concat
# ----------------------------------------------------------------------------------------------
# They move elements without computing: operand and result element types are equal (FP8 scales
# may differ, as everywhere in the dialect: the result is then re-scaled).


def check_layout_types(op_name: str, input: TensorType, result: TensorType) -> None:
    check_same_element_type(op_name, [("input", input), ("result", result)])


def layout_result_type(input_type: TensorType, shape: Sequence[int]) -> TensorType:
    """A layout op's result: the input's elements (and FP8 scale) under `shape`."""
    return TensorType(input_type.get_element_type(), shape, input_type.encoding)


class UnaryLayoutOp(IRDLOperation, ABC):
    """The base of graph's layout ops of one input (reshape, transpose, slice): the elements
    move, their type stays; a leaf op checks how the result's shape follows (`check_shape`)."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), GraphOpRules())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        input = checked_tensor(self.name, "input", self.input.type)
        result = checked_tensor(self.name, "result", self.result.type)
        check_layout_types(self.name, input, result)
        self.check_shape(input.get_shape(), result.get_shape())

    @abstractmethod
    def check_shape(self, input: Sequence[int], result: Sequence[int]) -> None:
        """Raise a VerifyException unless `result` is the shape this op makes of `input`."""


@located_format_errors
@irdl_op_definition
class ReshapeOp(UnaryLayoutOp):
    """The same elements in row-major order under another shape (the result type's)."""

    name = "graph.reshape"

    def __init__(self, input: SSAValue | Operation, shape: Sequence[int]):
        input_type = checked_tensor(self.name, "input", SSAValue.get(input).type)
        rules.check_reshape(self.name, input_type.get_shape(), shape)
        super().__init__(operands=[input], result_types=[layout_result_type(input_type, shape)])

    def check_shape(self, input: Sequence[int], result: Sequence[int]) -> None:
        rules.check_reshape(self.name, input, result)


@located_format_errors
@irdl_op_definition
class TransposeOp(UnaryLayoutOp):
    """Permutes the axes: result axis `i` is input axis `permutation[i]` (as numpy.transpose)."""

    name = "graph.transpose"
    permutation = prop_def(DenseArrayBase.constr(i64))
    assembly_format = (
        "$input `permutation` $permutation attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue | Operation, permutation: Sequence[int]):
        input_type = checked_tensor(self.name, "input", SSAValue.get(input).type)
        shape = rules.transposed_shape(self.name, input_type.get_shape(), permutation)
        super().__init__(
            operands=[input],
            result_types=[layout_result_type(input_type, shape)],
            properties={"permutation": DenseArrayBase.from_list(i64, list(permutation))},
        )

    def check_shape(self, input: Sequence[int], result: Sequence[int]) -> None:
        rules.check_transpose_shapes(self.name, input, self.permutation.get_values(), result)


@located_format_errors
@irdl_op_definition
class SliceOp(UnaryLayoutOp):
    """`x[starts[0]:ends[0]:steps[0], ...]`: per axis, a non-empty in-bounds strided range."""

    name = "graph.slice"
    starts = prop_def(DenseArrayBase.constr(i64))
    ends = prop_def(DenseArrayBase.constr(i64))
    steps = prop_def(DenseArrayBase.constr(i64))
    assembly_format = (
        "$input `starts` $starts `ends` $ends `steps` $steps attr-dict `:` type($input) `->` "
        "type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        starts: Sequence[int],
        ends: Sequence[int],
        steps: Sequence[int] | None = None,
    ):
        input_type = checked_tensor(self.name, "input", SSAValue.get(input).type)
        steps = [1] * len(starts) if steps is None else steps
        shape = rules.slice_result_shape(self.name, input_type.get_shape(), starts, ends, steps)
        super().__init__(
            operands=[input],
            result_types=[layout_result_type(input_type, shape)],
            properties={
                name: DenseArrayBase.from_list(i64, list(values))
                for name, values in (("starts", starts), ("ends", ends), ("steps", steps))
            },
        )

    def check_shape(self, input: Sequence[int], result: Sequence[int]) -> None:
        starts, ends, steps = (a.get_values() for a in (self.starts, self.ends, self.steps))
        rules.check_slice_shapes(self.name, input, starts, ends, steps, result)


@located_format_errors
@irdl_op_definition
class ConcatOp(IRDLOperation):
    """Joins its inputs along `axis` in operand order (as numpy.concatenate)."""

    name = "graph.concat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), GraphOpRules())
    assembly_format = (
        "$inputs `axis` $axis attr-dict `:` `(` type($inputs) `)` `->` type($result)"
    )

    def __init__(self, inputs: Sequence[SSAValue | Operation], axis: int):
        types = [
            checked_tensor(self.name, f"input #{i}", SSAValue.get(v).type)
            for i, v in enumerate(inputs)
        ]
        shape = rules.concat_result_shape(self.name, [t.get_shape() for t in types], axis)
        super().__init__(
            operands=[inputs],
            result_types=[layout_result_type(types[0], shape)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    def verify_(self) -> None:
        types = [
            checked_tensor(self.name, f"input #{i}", v.type) for i, v in enumerate(self.inputs)
        ]
        result = checked_tensor(self.name, "result", self.result.type)
        named = [(f"input #{i}", t) for i, t in enumerate(types)]
        check_same_element_type(self.name, [*named, ("result", result)])
        rules.check_concat_shapes(self.name, [t.get_shape() for t in types], self.axis.value.data,
                            result.get_shape())


@located_format_errors
@irdl_op_definition
class GatherOp(IRDLOperation):
    """Rows of `table` (its leading axis) by i32 `indices`: `table[indices]`."""

    name = "graph.gather"
    table = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), GraphOpRules())
    assembly_format = (
        "$table `,` $indices attr-dict `:` `(` type($table) `,` type($indices) `)` `->` "
        "type($result)"
    )

    def __init__(self, table: SSAValue | Operation, indices: SSAValue | Operation):
        table_type = checked_tensor(self.name, "table", SSAValue.get(table).type)
        index_type = checked_index_tensor(self.name, "indices", SSAValue.get(indices).type)
        shape = rules.gather_result_shape(self.name, table_type.get_shape(), index_type.get_shape())
        super().__init__(operands=[table, indices],
                         result_types=[layout_result_type(table_type, shape)])

    def verify_(self) -> None:
        table = checked_tensor(self.name, "table", self.table.type)
        indices = checked_index_tensor(self.name, "indices", self.indices.type)
        result = checked_tensor(self.name, "result", self.result.type)
        check_same_element_type(self.name, [("table", table), ("result", result)])
        check_host_written(self.name, "indices", self.indices,
                           "index tensors are inputs the host writes; no graph op computes them")
        rules.check_gather_shapes(self.name, table.get_shape(), indices.get_shape(), result.get_shape())


# ----------------------------------------------------------------------------------------------
# graph.repeat, graph.yield
# ----------------------------------------------------------------------------------------------


def sequence_slice_type(sequence_type: TensorType) -> TensorType:
    """The type iteration `i` sees for a sequence operand: the leading axis dropped."""
    return TensorType(
        sequence_type.get_element_type(), sequence_type.get_shape()[1:], sequence_type.encoding
    )


@located_format_errors
@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a `graph.repeat` body; its operands are the next iteration's carried values."""

    name = "graph.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(RepeatOp), Pure(), GraphOpRules()))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


@dataclass(frozen=True)
class IsolatedRepeatBody(IsolatedFromAbove):
    """xDSL's IsolatedFromAbove, with a violation reported in the repeat's terms.

    xDSL's message ("Operation using value defined out of its IsolatedFromAbove parent: <the
    op's text>") names neither the repeat nor the remedy; this names both, and the op.
    """

    def verify(self, op: Operation) -> None:
        try:
            super().verify(op)
        except VerifyException:
            user = next(
                inner
                for region in op.regions
                for inner in region.walk()
                if any(v.owner is op or not op.is_ancestor(v.owner) for v in inner.operands)
            )
            raise VerifyException(
                f"{op.name}: {user.name} in the body uses a value defined outside the repeat; "
                "pass it in as an invariant"
            ) from None


class RepeatOpBase(IRDLOperation, ABC):
    """What `graph.repeat` and `mid.repeat` (graph.repeat at the mid level) share: `count`
    runs of the body over carried values, invariants and per-iteration sequence elements; the
    results are the final carried values; the body's block arguments are the carried values,
    then the invariants, then one element per sequence. The operands, results, body and
    block-argument groups are declared once here (as xDSL's `arith` declares its binary ops'
    operands on one base class); each leaf op adds its name, traits, syntax and verifier."""

    count = prop_def(IntegerAttr[I64])
    carried = var_operand_def(TensorType)
    invariants = var_operand_def(TensorType)
    sequences = var_operand_def(TensorType)
    res = var_result_def(TensorType)
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        count: int,
        carried: Sequence[SSAValue | Operation],
        invariants: Sequence[SSAValue | Operation],
        sequences: Sequence[SSAValue | Operation],
        body: Region,
    ):
        super().__init__(
            operands=[carried, invariants, sequences],
            result_types=[[SSAValue.get(v).type for v in carried]],
            properties={"count": IntegerAttr(count, i64)},
            regions=[body],
        )

    @property
    def iterations(self) -> int:
        return self.count.value.data

    @property
    def block(self) -> Block:
        return self.body.block

    # The block arguments of each group (BlockArguments). Unannotated, as mid.repeat's were:
    # a pass that narrows an argument's type and then reads the group again relies on it.
    @property
    def carried_args(self):
        return self.block.args[: len(self.carried)]

    @property
    def invariant_args(self):
        start = len(self.carried)
        return self.block.args[start : start + len(self.invariants)]

    @property
    def sequence_args(self):
        return self.block.args[len(self.carried) + len(self.invariants) :]


@irdl_op_definition
class RepeatOp(RepeatOpBase):
    """Runs its body `count` times over carried values, invariants and per-iteration slices
    (the operands, results and body of `RepeatOpBase`)."""

    name = "graph.repeat"
    # NoTerminator only switches off xDSL's generic terminator check, which names the body's
    # last op ("graph.gelu terminates block ... but is not a terminator") and runs before
    # verify_; verify_yield requires the graph.yield itself, in the repeat's terms.
    # IsolatedRepeatBody: the body sees only its block arguments, so outside values must be
    # passed in as invariants.
    traits = traits_def(
        RecursiveMemoryEffect(), NoTerminator(), GraphOpRules(), IsolatedRepeatBody()
    )

    @staticmethod
    def body_arg_types(
        carried: Sequence[Attribute], invariants: Sequence[Attribute], sequences: Sequence[Attribute]
    ) -> list[Attribute]:
        """Block argument types for the given operand types (sequence slices drop axis 0)."""
        slices = [sequence_slice_type(t) if isinstance(t, TensorType) else t for t in sequences]
        return [*carried, *invariants, *slices]

    def verify_(self) -> None:
        count = self.count.value.data
        if count < 1:
            raise VerifyException(f"{self.name}: iteration count must be at least 1, got {count}")
        self.verify_operands(count)
        self.verify_block_arguments()
        self.verify_yield()

    def verify_operands(self, count: int) -> None:
        for kind, values in (("carried", self.carried), ("invariant", self.invariants)):
            for i, v in enumerate(values):
                checked_tensor(self.name, f"{kind} operand #{i}", v.type)
        for i, v in enumerate(self.sequences):
            t = checked_tensor(self.name, f"sequence operand #{i}", v.type)
            if t.get_num_dims() < 1 or t.get_shape()[0] != count:
                raise VerifyException(
                    f"{self.name}: sequence operand #{i} has shape {rules.fmt_shape(t.get_shape())}; "
                    f"its leading axis must be the iteration count {count}"
                )
        for i, (v, r) in enumerate(zip(self.carried, self.res)):
            if v.type != r.type:
                raise VerifyException(
                    f"{self.name}: result #{i} has type {r.type} but carried value #{i} has type {v.type}"
                )
        if len(self.res) != len(self.carried):
            raise VerifyException(
                f"{self.name}: {len(self.res)} results for {len(self.carried)} carried values"
            )

    def verify_block_arguments(self) -> None:
        expected = self.body_arg_types(
            [v.type for v in self.carried],
            [v.type for v in self.invariants],
            [v.type for v in self.sequences],
        )
        actual = [a.type for a in self.body.block.args]
        if len(actual) != len(expected):
            raise VerifyException(
                f"{self.name}: body has {len(actual)} block arguments, expected {len(expected)} "
                f"({len(self.carried)} carried, {len(self.invariants)} invariant, "
                f"{len(self.sequences)} sequence)"
            )
        kinds = (
            ["carried"] * len(self.carried)
            + ["invariant"] * len(self.invariants)
            + ["sequence slice"] * len(self.sequences)
        )
        for i, (kind, a, e) in enumerate(zip(kinds, actual, expected)):
            if a != e:
                raise VerifyException(
                    f"{self.name}: block argument #{i} ({kind}) has type {a}, expected {e}"
                )

    def verify_yield(self) -> None:
        terminator = self.body.block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException(f"{self.name}: body must end with graph.yield")
        yielded = [v.type for v in terminator.values]
        carried = [v.type for v in self.carried]
        if len(yielded) != len(carried):
            raise VerifyException(
                f"{self.name}: graph.yield has {len(yielded)} values for {len(carried)} carried values"
            )
        for i, (y, c) in enumerate(zip(yielded, carried)):
            if y != c:
                raise VerifyException(
                    f"{self.name}: graph.yield value #{i} has type {y}, but carried value #{i} has type {c}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.count.value.data}")
        groups = (
            ("carried", self.carried_args, self.carried),
            ("invariant", self.invariant_args, self.invariants),
            ("sequence", self.sequence_args, self.sequences),
        )
        for keyword, args, operands in groups:
            if not operands:
                continue
            printer.print_string(f" {keyword}(")
            printer.print_list(
                zip(args, operands), lambda pair: self.print_binding(printer, *pair)
            )
            printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)
        if self.res:
            printer.print_string(" -> ")
            printer.print_list([r.type for r in self.res], printer.print_attribute)

    @staticmethod
    def print_binding(printer: Printer, arg: BlockArgument, operand: SSAValue) -> None:
        printer.print_ssa_value(arg)
        printer.print_string(" = ")
        printer.print_ssa_value(operand)
        printer.print_string(" : ")
        printer.print_attribute(operand.type)

    @classmethod
    def parse(cls, parser: Parser) -> RepeatOp:
        start = parser.pos
        count = parser.parse_integer(allow_boolean=False, allow_negative=False)
        if count >= 2**63:
            parser.raise_error(
                f"graph.repeat: iteration count {count} does not fit in a signed 64-bit integer",
                start, parser.pos,
            )
        groups: dict[str, tuple[list[Parser.UnresolvedArgument], list[SSAValue]]] = {}
        for keyword in ("carried", "invariant", "sequence"):
            args: list[Parser.UnresolvedArgument] = []
            operands: list[SSAValue] = []
            if parser.parse_optional_keyword(keyword) is not None:
                for arg, operand in parser.parse_comma_separated_list(
                    parser.Delimiter.PAREN, lambda: cls.parse_binding(parser)
                ):
                    args.append(arg)
                    operands.append(operand)
            groups[keyword] = (args, operands)
        attributes = parser.parse_optional_attr_dict_with_keyword()
        operand_types = [[v.type for v in groups[k][1]] for k in ("carried", "invariant", "sequence")]
        arg_types = cls.body_arg_types(*operand_types)
        unresolved_args = [a for k in ("carried", "invariant", "sequence") for a in groups[k][0]]
        body = parser.parse_region([a.resolve(t) for a, t in zip(unresolved_args, arg_types)])
        cls.parse_result_types(parser, operand_types[0])
        op = cls(count, groups["carried"][1], groups["invariant"][1], groups["sequence"][1], body)
        if attributes is not None:
            op.attributes |= attributes.data
        return op

    @staticmethod
    def parse_result_types(parser: Parser, carried: Sequence[Attribute]) -> None:
        """`-> types`: the results are the carried values, so the types must repeat theirs."""
        start = parser.pos
        if parser.parse_optional_punctuation("->") is None:
            if carried:
                parser.raise_error(
                    "graph.repeat: expected '->' and the result types after the body "
                    f"(the carried types {', '.join(map(str, carried))})"
                )
            return
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != len(carried):
            parser.raise_error(
                f"graph.repeat: {len(types)} result types for {len(carried)} carried values",
                start, parser.pos,
            )
        for i, (result, value) in enumerate(zip(types, carried)):
            if result != value:
                parser.raise_error(
                    f"graph.repeat: result type #{i} is {result} but carried value #{i} has "
                    f"type {value}", start, parser.pos,
                )

    @staticmethod
    def parse_binding(parser: Parser) -> tuple[Parser.UnresolvedArgument, SSAValue]:
        arg = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        unresolved = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        return arg, parser.resolve_operand(unresolved, parser.parse_type())


Graph = Dialect(
    "graph",
    [
        GemmOp, AddOp, GeluOp, AttentionOp, LayerNormOp, ReshapeOp, TransposeOp, SliceOp,
        ConcatOp, GatherOp, RepeatOp, YieldOp,
    ],
    [Fp8ScaleAttr, GeluApproximationAttr],
)
