"""The `mid` dialect: the layout-aware level of ipu-stack (IR definitions only).

Every mid value is a builtin ranked tensor whose *encoding* is a `#mid.format` (as MLIR's
sparse tensors carry theirs). The element type is the logical element type; the format's
precision is the storage precision:

    tensor<128x256xf16, #mid.format<f16, amp_left, [16 x 8 pad, 64 x 1 pad], replication = 1, group = 16, standard>>

This module holds the ops and the dialect `Mid`. The attributes are defined beside it, each
module with the syntax of its own: the formats and operator plans (`#mid.format`, `#mid.axis`,
`#mid.dispatch`, `#mid.operand`, `#mid.plan`) in `ipu_dialects/mid_attrs.py`, the pipeline
configuration (`#mid.config`) in `ipu_dialects/mid_config.py`, the enum attributes mid and
tile share in `ipu_dialects/shared_attrs.py`. They are re-exported here, so that
`mid.TensorFormatAttr`, `mid.DispatchKind` or `mid.PipelineConfigAttr` name them.

Ops (syntax)
------------
    %c = mid.gemm %a, %b [transpose_lhs] [transpose_rhs] plan #mid.plan<...> : (T_a, T_b) -> T_c
    %c = mid.add %a, %b plan #mid.plan<...> : (T_a, T_b) -> T_c
    %y = mid.gelu %x [approximate tanh] plan #mid.plan<...> : T_x -> T_y
    %o = mid.attention %q, %k, %v [key_mask %m] [causal] scale 1.250000e-01 plan #mid.plan<...>
             : (T_q, T_k, T_v[, T_m]) -> T_o
    %y = mid.layer_norm %x, %w, %b eps 1.0e-05 plan #mid.plan<...> : (T_x, T_w, T_b) -> T_y
    %e = mid.gather %table, %ids plan #mid.plan<...> : (T_table, T_ids) -> T_e
    %y = mid.reshape %x plan #mid.plan<...> : T_x -> T_y
    %y = mid.transpose %x permutation [1, 0] plan #mid.plan<...> : T_x -> T_y
    %y = mid.slice %x starts [0, 4] ends [4, 8] steps [1, 1] plan #mid.plan<...> : T_x -> T_y
    %c = mid.concat %a, %b axis 1 plan #mid.plan<...> : (T_a, T_b) -> T_c
    %y = mid.cast_precision %x : T_x -> T_y
    %y = mid.rearrange %x : T_x -> T_y
    %r = "mid.repeat"(carried..., invariants..., sequences...) <{count = N : i64, ...}> ({
      ^bb0(...): ... mid.yield %v : T_v }) : (...) -> (T_r...)      (generic syntax only)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import HasParent, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from device.layouts import ElementOrder as ElementOrder
from device.numerics import GeluApproximation
from device.target import MemoryClass as MemoryClass
from device.target import Precision as StoragePrecision
from ipu_dialects import shapes as rules
from ipu_dialects.graph import INDEX_ELEMENT_TYPE, GeluApproximationAttr, RepeatOpBase
from ipu_dialects.mid_attrs import GEMM_DISPATCH_KINDS as GEMM_DISPATCH_KINDS
from ipu_dialects.mid_attrs import (
    AxisTilingAttr,
    DispatchKindAttr,
    IndivisibleAttr,
    OperandPlanAttr,
    OperandRoleAttr,
    OperatorDispatchAttr,
    OperatorPlanAttr,
    TensorFormatAttr,
    format_of,
)
from ipu_dialects.mid_attrs import DispatchKind as DispatchKind
from ipu_dialects.mid_attrs import Indivisible as Indivisible
from ipu_dialects.mid_attrs import OperandRole as OperandRole
from ipu_dialects.mid_config import InputPolicy as InputPolicy
from ipu_dialects.mid_config import (
    InputPolicyAttr,
    PipelineConfigAttr,
    ProfilingPolicyAttr,
    SchedulingPolicyAttr,
)
from ipu_dialects.mid_config import ProfilingPolicy as ProfilingPolicy
from ipu_dialects.mid_config import SchedulingPolicy as SchedulingPolicy
from ipu_dialects.shared_attrs import CONFIG_ATTR_NAME as CONFIG_ATTR_NAME
from ipu_dialects.shared_attrs import ElementOrderAttr, MemoryClassAttr, PrecisionAttr

# The enum attributes the dialect registers: those the formats and plans hold, then the
# config's policies.
ENUM_ATTRS = (
    PrecisionAttr, ElementOrderAttr, IndivisibleAttr, MemoryClassAttr, DispatchKindAttr,
    OperandRoleAttr, InputPolicyAttr, SchedulingPolicyAttr, ProfilingPolicyAttr,
)

# On a conversion op (and graph-to-mid's bridge before it): the graph op that consumes the
# converted value, e.g. "graph.gemm %y"; its tile work names it as its provenance.
CONSUMER_ATTR_NAME = "ipu.for"
# On a mid op graph-to-mid selected a plan for: the cycles the selector estimated it costs
# (its plan's work and its operands' conversions into the plan's formats), an i64; the sum
# over a function is the program estimate (`planning/program_estimate.py`).
ESTIMATE_ATTR_NAME = "ipu.estimate"


# ----------------------------------------------------------------------------------------------
# Ops
# ----------------------------------------------------------------------------------------------


def check_plan_formats(
    op: Operation, plan: OperatorPlanAttr, formats: dict[str, TensorFormatAttr]
) -> None:
    """Every operand and the result of `op` have exactly the format its plan chose."""
    for operand, fmt in formats.items():
        try:
            wanted = plan.operand_plan(operand).format
        except KeyError:
            raise VerifyException(
                f"{op.name}: plan {plan.candidate.data} has no entry for operand '{operand}'"
            ) from None
        if wanted != fmt:
            raise VerifyException(
                f"{op.name}: {operand} format {fmt} differs from the plan's {wanted}"
            )


@irdl_op_definition
class GemmOp(IRDLOperation):
    """`C = A x B` per broadcast batch, carried out by the selected operator plan."""

    name = "mid.gemm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    plan = prop_def(OperatorPlanAttr)
    transpose_lhs = opt_prop_def(UnitAttr)
    transpose_rhs = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)? "
        "`plan` qualified($plan) attr-dict "
        "`:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        result_type: TensorType,
        plan: OperatorPlanAttr,
        transpose_lhs: bool = False,
        transpose_rhs: bool = False,
    ):
        properties: dict[str, Attribute] = {"plan": plan}
        for name, flag in (("transpose_lhs", transpose_lhs), ("transpose_rhs", transpose_rhs)):
            if flag:
                properties[name] = UnitAttr()
        super().__init__(operands=[lhs, rhs], result_types=[result_type], properties=properties)

    def verify_(self) -> None:
        lhs, lhs_fmt = format_of(self.name, "lhs", self.lhs.type)
        rhs, rhs_fmt = format_of(self.name, "rhs", self.rhs.type)
        out, out_fmt = format_of(self.name, "result", self.result.type)
        rules.check_gemm_shapes(self.name, lhs.get_shape(), rhs.get_shape(), out.get_shape(),
                          self.transpose_lhs is not None, self.transpose_rhs is not None)
        check_plan_formats(self, self.plan, {"lhs": lhs_fmt, "rhs": rhs_fmt, "out": out_fmt})


class BinaryElementwiseOp(IRDLOperation, ABC):
    """The base of mid's elementwise ops of two tensors (graph's `BinaryElementwiseOp` with a
    plan): operands broadcast NumPy-style, each operand in its plan's format."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    plan = prop_def(OperatorPlanAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$lhs `,` $rhs `plan` qualified($plan) attr-dict "
        "`:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"
    )

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation,
                 result_type: TensorType, plan: OperatorPlanAttr):
        super().__init__(operands=[lhs, rhs], result_types=[result_type], properties={"plan": plan})

    def verify_(self) -> None:
        lhs, lhs_fmt = format_of(self.name, "lhs", self.lhs.type)
        rhs, rhs_fmt = format_of(self.name, "rhs", self.rhs.type)
        out, out_fmt = format_of(self.name, "result", self.result.type)
        rules.check_add_shapes(self.name, lhs.get_shape(), rhs.get_shape(), out.get_shape())
        check_plan_formats(self, self.plan, {"lhs": lhs_fmt, "rhs": rhs_fmt, "out": out_fmt})


class UnaryElementwiseOp(IRDLOperation, ABC):
    """The base of mid's elementwise ops of one tensor: the result has the input's shape, each
    in its plan's format."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    plan = prop_def(OperatorPlanAttr)
    traits = traits_def(Pure())
    assembly_format = "$input `plan` qualified($plan) attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, result_type: TensorType,
                 plan: OperatorPlanAttr):
        super().__init__(operands=[input], result_types=[result_type], properties={"plan": plan})

    def verify_(self) -> None:
        src, src_fmt = format_of(self.name, "input", self.input.type)
        out, out_fmt = format_of(self.name, "result", self.result.type)
        rules.check_result_shape(self.name, out.get_shape(), src.get_shape(), "the input shape")
        check_plan_formats(self, self.plan, {"src": src_fmt, "out": out_fmt})


@irdl_op_definition
class AddOp(BinaryElementwiseOp):
    """`lhs + rhs` with NumPy broadcasting, carried out by the selected operator plan."""

    name = "mid.add"


@irdl_op_definition
class GeluOp(UnaryElementwiseOp):
    """GeLU, pointwise, carried out by the selected operator plan: exact (erf), or the tanh
    form with `approximate tanh` (the graph op's property, `#graph<gelu_approximation tanh>`
    in generic form)."""

    name = "mid.gelu"
    approximate = opt_prop_def(GeluApproximationAttr)
    assembly_format = (
        "$input (`approximate` $approximate^)? `plan` qualified($plan) attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue | Operation, result_type: TensorType,
                 plan: OperatorPlanAttr, approximate: GeluApproximationAttr | None = None):
        properties: dict[str, Attribute] = {"plan": plan}
        if approximate is not None:
            properties["approximate"] = approximate
        IRDLOperation.__init__(self, operands=[input], result_types=[result_type],
                               properties=properties)

    @property
    def approximation(self) -> GeluApproximation | None:
        return None if self.approximate is None else self.approximate.data


@irdl_op_definition
class AttentionOp(IRDLOperation):
    """softmax(scale * query @ key^T [causal] [key_mask]) @ value, carried out by the selected
    plan.

    Unlike `graph.attention`, the scale is always explicit (graph-to-mid resolves the
    default 1/sqrt(head_dim)). `key_mask`: graph.attention's key padding mask, i32 stored as
    i32 (written by the host)."""

    name = "mid.attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    key_mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    plan = prop_def(OperatorPlanAttr)
    scale = prop_def(FloatAttr[Float64Type])
    causal = opt_prop_def(UnitAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$query `,` $key `,` $value (`key_mask` $key_mask^)? (`causal` $causal^)? `scale` $scale "
        "`plan` qualified($plan) attr-dict `:` `(` type($query) `,` type($key) `,` type($value) "
        "(`,` type($key_mask)^)? `)` `->` type($result)"
    )

    def __init__(self, query: SSAValue | Operation, key: SSAValue | Operation,
                 value: SSAValue | Operation, result_type: TensorType, plan: OperatorPlanAttr,
                 scale: float, causal: bool, key_mask: SSAValue | Operation | None = None):
        properties: dict[str, Attribute] = {"plan": plan, "scale": FloatAttr(scale, f64)}
        if causal:
            properties["causal"] = UnitAttr()
        super().__init__(operands=[query, key, value, [] if key_mask is None else [key_mask]],
                         result_types=[result_type], properties=properties)

    def verify_(self) -> None:
        formats = {}
        shapes = {}
        for what, value in (("query", self.query), ("key", self.key), ("value", self.value),
                            ("out", self.result)):
            value_type, formats[what] = format_of(self.name, what, value.type)
            shapes[what] = tuple(value_type.get_shape())
        rules.check_attention_shapes(self.name, shapes["query"], shapes["key"], shapes["value"],
                               shapes["out"], self.causal is not None)
        rules.check_positive(self.name, "scale", self.scale.value.data)
        if self.key_mask is not None:
            mask, formats["key_mask"] = format_of(self.name, "key_mask", self.key_mask.type)
            check_index_storage(self.name, "key_mask", mask, formats["key_mask"])
            rules.check_key_mask_shape(self.name, mask.get_shape(), shapes["query"], shapes["key"])
        check_plan_formats(self, self.plan, formats)


@irdl_op_definition
class LayerNormOp(IRDLOperation):
    """Layer normalization over the last axis, `(x - mean) / sqrt(var + eps) * weight +
    bias`, carried out by the selected operator plan."""

    name = "mid.layer_norm"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    plan = prop_def(OperatorPlanAttr)
    eps = prop_def(FloatAttr[Float64Type])
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $weight `,` $bias `eps` $eps `plan` qualified($plan) attr-dict "
        "`:` `(` type($input) `,` type($weight) `,` type($bias) `)` `->` type($result)"
    )

    def __init__(self, input: SSAValue | Operation, weight: SSAValue | Operation,
                 bias: SSAValue | Operation, result_type: TensorType, plan: OperatorPlanAttr,
                 eps: float):
        super().__init__(operands=[input, weight, bias], result_types=[result_type],
                         properties={"plan": plan, "eps": FloatAttr(eps, f64)})

    def verify_(self) -> None:
        formats, shapes = {}, {}
        for what, value in (("src", self.input), ("weight", self.weight), ("bias", self.bias),
                            ("out", self.result)):
            value_type, formats[what] = format_of(self.name, what, value.type)
            shapes[what] = tuple(value_type.get_shape())
        rules.check_layer_norm_shapes(self.name, shapes["src"], shapes["weight"], shapes["bias"],
                                shapes["out"])
        rules.check_positive(self.name, "eps", self.eps.value.data)
        check_plan_formats(self, self.plan, formats)


def check_index_storage(op_name: str, what: str, value_type: TensorType,
                        fmt: TensorFormatAttr) -> None:
    """An index operand (gather's indices, attention's key mask) is i32 stored as i32."""
    if value_type.get_element_type() != INDEX_ELEMENT_TYPE or \
            fmt.precision.data != StoragePrecision.I32:
        raise VerifyException(f"{op_name}: {what} must be i32 stored as i32, got "
                              f"{value_type.get_element_type()} stored as "
                              f"{fmt.precision_text()}")


@irdl_op_definition
class GatherOp(IRDLOperation):
    """Rows of `table` (its leading axis) by i32 `indices` (`graph.gather`), carried out by
    the selected operator plan (`passes/operators/embedding.py`)."""

    name = "mid.gather"
    table = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    plan = prop_def(OperatorPlanAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$table `,` $indices `plan` qualified($plan) attr-dict "
        "`:` `(` type($table) `,` type($indices) `)` `->` type($result)"
    )

    def __init__(self, table: SSAValue | Operation, indices: SSAValue | Operation,
                 result_type: TensorType, plan: OperatorPlanAttr):
        super().__init__(operands=[table, indices], result_types=[result_type],
                         properties={"plan": plan})

    def verify_(self) -> None:
        table, table_fmt = format_of(self.name, "table", self.table.type)
        indices, index_fmt = format_of(self.name, "indices", self.indices.type)
        out, out_fmt = format_of(self.name, "result", self.result.type)
        check_index_storage(self.name, "indices", indices, index_fmt)
        if table.get_element_type() != out.get_element_type():
            raise VerifyException(f"{self.name}: the result's element type "
                                  f"{out.get_element_type()} is not the table's "
                                  f"{table.get_element_type()}")
        rules.check_gather_shapes(self.name, table.get_shape(), indices.get_shape(), out.get_shape())
        check_plan_formats(self, self.plan,
                           {"table": table_fmt, "indices": index_fmt, "out": out_fmt})


# Layout ops: the graph's reshape, transpose, slice and concat with a plan. They move elements
# without computing; the result keeps the source's storage precision and scale (a differing
# declared FP8 scale is a `mid.cast_precision` after them).


def layout_shapes(op: UnaryLayoutOp | ConcatOp,
                  names: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Shape of each operand and the result (`out`); checks the plan's formats and that the
    precision and scale are kept."""
    formats, shapes = {}, {}
    for what, value in zip((*names, "out"), (*op.operands, *op.results), strict=True):
        value_type, formats[what] = format_of(op.name, what, value.type)
        shapes[what] = tuple(value_type.get_shape())
        storage = (formats[what].precision, formats[what].scale)
        first = formats[names[0]]
        if storage != (first.precision, first.scale):
            raise VerifyException(
                f"{op.name}: {what} is stored as {formats[what].precision_text()}, "
                f"{names[0]} as {first.precision_text()}: layout ops keep the storage precision"
            )
    check_plan_formats(op, op.plan, formats)
    return shapes


class UnaryLayoutOp(IRDLOperation, ABC):
    """The base of mid's layout ops of one input (reshape, transpose, slice): graph's with a
    plan; a leaf op checks how the result's shape follows (`check_shape`)."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    plan = prop_def(OperatorPlanAttr)
    traits = traits_def(Pure())
    assembly_format = "$input `plan` qualified($plan) attr-dict `:` type($input) `->` type($result)"

    def verify_(self) -> None:
        shapes = layout_shapes(self, ("src",))
        self.check_shape(shapes["src"], shapes["out"])

    @abstractmethod
    def check_shape(self, input: tuple[int, ...], result: tuple[int, ...]) -> None:
        """Raise a VerifyException unless `result` is the shape this op makes of `input`."""


@irdl_op_definition
class ReshapeOp(UnaryLayoutOp):
    """The same elements in row-major order under the result's shape."""

    name = "mid.reshape"

    def __init__(self, input: SSAValue | Operation, result_type: TensorType,
                 plan: OperatorPlanAttr):
        super().__init__(operands=[input], result_types=[result_type], properties={"plan": plan})

    def check_shape(self, input: tuple[int, ...], result: tuple[int, ...]) -> None:
        rules.check_reshape(self.name, input, result)


@irdl_op_definition
class TransposeOp(UnaryLayoutOp):
    """Result axis `i` is input axis `permutation[i]`."""

    name = "mid.transpose"
    permutation = prop_def(DenseArrayBase.constr(i64))
    assembly_format = (
        "$input `permutation` $permutation `plan` qualified($plan) attr-dict `:` type($input) "
        "`->` type($result)"
    )

    def __init__(self, input: SSAValue | Operation, result_type: TensorType,
                 plan: OperatorPlanAttr, permutation: Sequence[int]):
        super().__init__(operands=[input], result_types=[result_type], properties={
            "plan": plan, "permutation": DenseArrayBase.from_list(i64, list(permutation))})

    def check_shape(self, input: tuple[int, ...], result: tuple[int, ...]) -> None:
        rules.check_transpose_shapes(self.name, input, self.permutation.get_values(), result)


@irdl_op_definition
class SliceOp(UnaryLayoutOp):
    """`x[starts[0]:ends[0]:steps[0], ...]`."""

    name = "mid.slice"
    starts = prop_def(DenseArrayBase.constr(i64))
    ends = prop_def(DenseArrayBase.constr(i64))
    steps = prop_def(DenseArrayBase.constr(i64))
    assembly_format = (
        "$input `starts` $starts `ends` $ends `steps` $steps `plan` qualified($plan) attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue | Operation, result_type: TensorType,
                 plan: OperatorPlanAttr, starts: Sequence[int], ends: Sequence[int],
                 steps: Sequence[int]):
        properties: dict[str, Attribute] = {"plan": plan}
        for name, values in (("starts", starts), ("ends", ends), ("steps", steps)):
            properties[name] = DenseArrayBase.from_list(i64, list(values))
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

    def check_shape(self, input: tuple[int, ...], result: tuple[int, ...]) -> None:
        starts, ends, steps = (a.get_values() for a in (self.starts, self.ends, self.steps))
        rules.check_slice_shapes(self.name, input, starts, ends, steps, result)


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """Joins the inputs along `axis` in operand order."""

    name = "mid.concat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    plan = prop_def(OperatorPlanAttr)
    traits = traits_def(Pure())
    assembly_format = (
        "$inputs `axis` $axis `plan` qualified($plan) attr-dict `:` `(` type($inputs) `)` `->` "
        "type($result)"
    )

    def __init__(self, inputs: Sequence[SSAValue | Operation], result_type: TensorType,
                 plan: OperatorPlanAttr, axis: int):
        super().__init__(operands=[inputs], result_types=[result_type],
                         properties={"plan": plan, "axis": IntegerAttr(axis, i64)})

    def verify_(self) -> None:
        names = concat_operand_names(len(self.inputs))
        shapes = layout_shapes(self, names)
        rules.check_concat_shapes(self.name, [shapes[n] for n in names], self.axis.value.data,
                            shapes["out"])


def concat_operand_names(count: int) -> tuple[str, ...]:
    """Plan operand names of a concat's inputs: input0, input1, ..."""
    return tuple(f"input{i}" for i in range(count))


def _same_except(
    op_name: str,
    src: TensorFormatAttr,
    dst: TensorFormatAttr,
    ignore: Callable[[TensorFormatAttr], TensorFormatAttr],
    what: str,
) -> None:
    if ignore(src) != ignore(dst):
        raise VerifyException(
            f"{op_name}: may change only the {what}: {src} -> {dst}"
        )


def conversion_formats(
    op_name: str, input_type: Attribute, result_type: Attribute
) -> tuple[TensorType, TensorFormatAttr, TensorType, TensorFormatAttr]:
    """Input and result of a conversion op with their formats; a conversion keeps the shape."""
    src, src_fmt = format_of(op_name, "input", input_type)
    dst, dst_fmt = format_of(op_name, "result", result_type)
    if src.get_shape() != dst.get_shape():
        raise VerifyException(
            f"{op_name}: shape changes from {rules.fmt_shape(src.get_shape())} to "
            f"{rules.fmt_shape(dst.get_shape())}"
        )
    return src, src_fmt, dst, dst_fmt


class ConversionOp(IRDLOperation, ABC):
    """The base of mid's explicit conversions: one value into another format, same shape,
    no plan (insert-conversions places them; mid-to-tile lowers them)."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type])


@irdl_op_definition
class CastPrecisionOp(ConversionOp):
    """Change the storage precision of a value; every other part of the format is kept."""

    name = "mid.cast_precision"

    def verify_(self) -> None:
        _, src_fmt, _, dst_fmt = conversion_formats(self.name, self.input.type, self.result.type)
        if (src_fmt.precision, src_fmt.scale) == (dst_fmt.precision, dst_fmt.scale):
            raise VerifyException(
                f"{self.name}: storage precision {src_fmt.precision_text()} does not change"
            )
        _same_except(
            self.name,
            src_fmt,
            dst_fmt,
            lambda f: f.with_changes(precision=StoragePrecision.F32, scale=0),
            "storage precision",
        )


@irdl_op_definition
class RearrangeOp(ConversionOp):
    """Move a value into another order, tiling, replication, tile group or memory class."""

    name = "mid.rearrange"

    def verify_(self) -> None:
        src, src_fmt, dst, dst_fmt = conversion_formats(self.name, self.input.type, self.result.type)
        if src.get_element_type() != dst.get_element_type():
            raise VerifyException(
                f"{self.name}: element type changes from {src.get_element_type()} to "
                f"{dst.get_element_type()} (use mid.cast_precision)"
            )
        if (src_fmt.precision, src_fmt.scale) != (dst_fmt.precision, dst_fmt.scale):
            raise VerifyException(
                f"{self.name}: storage precision changes from {src_fmt.precision_text()} to "
                f"{dst_fmt.precision_text()} (use mid.cast_precision)"
            )
        if src_fmt == dst_fmt:
            raise VerifyException(f"{self.name}: input and result formats are identical")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a `mid.repeat` body: the next iteration's carried values, in the carried formats."""

    name = "mid.yield"
    values = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(RepeatOp), Pure()))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


@irdl_op_definition
class RepeatOp(RepeatOpBase):
    """`graph.repeat` at the mid level (the operands, results and body of `RepeatOpBase`):
    the body is lowered with the same operators and runs `count` times over carried values
    (one format for the operand, the body argument, the yield and the result), invariants and
    per-iteration sequence elements (the body argument has the element's format;
    `normalize-repeats` stores the sequence so that element i is block i of equal,
    consecutive per-tile blocks)."""

    name = "mid.repeat"
    traits = traits_def(RecursiveMemoryEffect())

    def verify_(self) -> None:
        args = self.block.args
        operands = [*self.carried, *self.invariants, *self.sequences]
        if len(args) != len(operands):
            raise VerifyException(
                f"{self.name}: body has {len(args)} block arguments for {len(operands)} operands"
            )
        terminator = self.block.last_op
        if not isinstance(terminator, YieldOp) or len(terminator.values) != len(self.carried):
            raise VerifyException(
                f"{self.name}: body must end with mid.yield of its {len(self.carried)} carried values"
            )
        for i, (init, arg, out, res) in enumerate(
            zip(self.carried, self.carried_args, terminator.values, self.res, strict=True)
        ):
            if not init.type == arg.type == out.type == res.type:
                raise VerifyException(
                    f"{self.name}: carried value #{i} has type {init.type}, its body argument "
                    f"{arg.type}, its yield {out.type} and its result {res.type}; the four "
                    "must be the same (one buffer carries the value through the iterations)"
                )
        for i, (seq, arg) in enumerate(zip(self.sequences, self.sequence_args, strict=True)):
            shape = tuple(seq.type.get_shape()) if isinstance(seq.type, TensorType) else ()
            element = tuple(arg.type.get_shape()) if isinstance(arg.type, TensorType) else None
            if shape[:1] != (self.iterations,) or shape[1:] != element:
                raise VerifyException(
                    f"{self.name}: sequence operand #{i} has shape {rules.fmt_shape(shape)}; it must be "
                    f"[{self.iterations}] followed by its body element's shape "
                    f"{rules.fmt_shape(element or ())}"
                )


Mid = Dialect(
    "mid",
    [GemmOp, AddOp, GeluOp, AttentionOp, LayerNormOp, GatherOp, ReshapeOp, TransposeOp, SliceOp, ConcatOp,
     CastPrecisionOp, RearrangeOp, RepeatOp, YieldOp],
    [
        AxisTilingAttr,
        TensorFormatAttr,
        OperatorDispatchAttr,
        OperandPlanAttr,
        OperatorPlanAttr,
        PipelineConfigAttr,
        *ENUM_ATTRS,
    ],
)
