"""The `mid` dialect: the layout-aware level of ipu-stack (IR definitions only).

Every mid value is a builtin ranked tensor whose *encoding* is a `#mid.format` (as MLIR's
sparse tensors carry theirs). The element type is the logical element type; the format's
precision is the storage precision:

    tensor<128x256xf16, #mid.format<f16, amp_left, [16 x 8 pad, 64 x 1 pad], replication = 1, group = 16, standard>>

Attributes (syntax)
-------------------
    #mid.format<PREC, ORDER, [BLOCK x PARTS pad|reject, ...], replication = R, group = G, MEMORY[, first_tile = F]>
        F      = the tile of the first shard (default 0, then not printed)
        PREC   = f16 | f32 | f8f143<SCALE> | i32    (SCALE in -31..31, value = q * 2**SCALE;
                                                    i32: index tensors, row_major only)
        ORDER  = row_major | amp_left | amp_right | amp_output | amp_left_t | amp_right_t
        MEMORY = standard | interleaved
    #mid.axis<BLOCK x PARTS pad|reject>               one tiling entry (also usable standalone)
    #mid.dispatch<KIND[, inner = I][, columns = C][, init = @sym][, accum = @sym]>
        KIND = gemm_blocks | pointwise | head_sharded
    #mid.operand<NAME : ROLE, #mid.format<...>, align = A, tail = T>
        ROLE = left | right | output | input
    #mid.plan<"candidate", #mid.dispatch<...>, accumulate = f16|f32, amp = "A16/B16x16/C16"|none,
              operands = [#mid.operand<...>, ...], distinct = [(out, lhs), ...], alias = none|NAME>
    #mid.config<target = "ipu21", tiles = N, indivisible = pad|reject, inputs = consumer|row_major,
                catalog = ["name", ...], scheduling = in_order, profiling = off|cycles>

Ops (syntax)
------------
    %c = mid.gemm %a, %b plan #mid.plan<...> : (T_a, T_b) -> T_c
    %c = mid.add %a, %b plan #mid.plan<...> : (T_a, T_b) -> T_c
    %y = mid.gelu %x [approximate tanh] plan #mid.plan<...> : T_x -> T_y
    %o = mid.attention %q, %k, %v [causal] scale 1.250000e-01 plan #mid.plan<...> : (T_q, T_k, T_v) -> T_o
    %e = mid.gather %table, %ids plan #mid.plan<...> : (T_table, T_ids) -> T_e
    %y = mid.cast_precision %x : T_x -> T_y
    %y = mid.rearrange %x : T_x -> T_y

The shard arithmetic of a format (chunks, padding, tiles of partitions) lives in
`planning/shard_geometry.py`; GEMM plans are built and chosen in `planning/gemm_selection.py`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
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
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from device.layouts import FP8_SCALE_RANGE, SCALED_PRECISIONS
from device.layouts import ElementOrder as ElementOrder
from device.numerics import GeluApproximation
from device.target import MemoryClass as MemoryClass
from device.target import Precision as StoragePrecision
from device.target import get_target
from ipu_dialects.graph import INDEX_ELEMENT_TYPE, GeluApproximationAttr, gather_result_shape
from ipu_dialects.shapes import (
    add_result_shape,
    check_attention_shapes,
    check_key_mask_shape,
    check_layer_norm_shapes,
    check_positive,
    check_reshape,
    check_result_shape,
    concat_result_shape,
    fmt_shape,
    gemm_result_shape,
    gemm_shape_rule,
    slice_result_shape,
    transposed_shape,
)
from ipu_dialects.shared_attrs import CONFIG_ATTR_NAME as CONFIG_ATTR_NAME
from ipu_dialects.shared_attrs import ConfiguresTileCount
from ipu_dialects.shared_attrs import ElementOrderAttr as ElementOrderAttr
from ipu_dialects.shared_attrs import EnumAttr as EnumAttr
from ipu_dialects.shared_attrs import MemoryClassAttr as MemoryClassAttr
from ipu_dialects.shared_attrs import PrecisionAttr as PrecisionAttr
from ipu_dialects.shared_attrs import enum_attr as enum_attr


class Indivisible(StrEnum):
    PAD = "pad"
    REJECT = "reject"


class DispatchKind(StrEnum):
    GEMM_BLOCKS = "gemm_blocks"
    GEMM_GRID = "gemm_grid"
    GEMM_KSPLIT = "gemm_ksplit"
    POINTWISE = "pointwise"
    HEAD_SHARDED = "head_sharded"
    ATTENTION_BLOCKS = "attention_blocks"


# The kinds of the GEMM layouts (one strategy each: `planning.gemm_selection.LAYOUTS`): their
# dispatch names the 64 x 64 blocks and both kernels.
GEMM_DISPATCH_KINDS = (DispatchKind.GEMM_BLOCKS, DispatchKind.GEMM_GRID, DispatchKind.GEMM_KSPLIT)


class OperandRole(StrEnum):
    LEFT = "left"
    RIGHT = "right"
    OUTPUT = "output"
    INPUT = "input"


class InputPolicy(StrEnum):
    """How graph inputs arrive: in the consumer's format, or row-major (then converted)."""

    CONSUMER = "consumer"
    ROW_MAJOR = "row_major"


class SchedulingPolicy(StrEnum):
    IN_ORDER = "in_order"


class ProfilingPolicy(StrEnum):
    OFF = "off"
    CYCLES = "cycles"


# The enum-valued parameters of mid attributes (those tile.buffer shares with them, precision,
# element order and memory class, are defined in `ipu_dialects/shared_attrs.py`). Inside the
# attributes that hold them they print as the bare value (`f16`, `amp_left`); standalone, e.g.
# as an op property in generic form, as `#mid<order amp_left>`.


@irdl_attr_definition
class IndivisibleAttr(EnumAttribute[Indivisible], SpacedOpaqueSyntaxAttribute):
    name = "mid.indivisible"


@irdl_attr_definition
class DispatchKindAttr(EnumAttribute[DispatchKind], SpacedOpaqueSyntaxAttribute):
    name = "mid.dispatch_kind"


@irdl_attr_definition
class OperandRoleAttr(EnumAttribute[OperandRole], SpacedOpaqueSyntaxAttribute):
    name = "mid.role"


@irdl_attr_definition
class InputPolicyAttr(EnumAttribute[InputPolicy], SpacedOpaqueSyntaxAttribute):
    name = "mid.inputs"


@irdl_attr_definition
class SchedulingPolicyAttr(EnumAttribute[SchedulingPolicy], SpacedOpaqueSyntaxAttribute):
    name = "mid.scheduling"


@irdl_attr_definition
class ProfilingPolicyAttr(EnumAttribute[ProfilingPolicy], SpacedOpaqueSyntaxAttribute):
    name = "mid.profiling"


ENUM_ATTRS = (
    PrecisionAttr, ElementOrderAttr, IndivisibleAttr, MemoryClassAttr, DispatchKindAttr,
    OperandRoleAttr, InputPolicyAttr, SchedulingPolicyAttr, ProfilingPolicyAttr,
)

I64_MAX = 2**63 - 1  # tensor extents are i64


def _key(parser: AttrParser, keyword: str) -> None:
    """Parse `keyword =`."""
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")


def _parse_nested(parser: AttrParser, kind: type[Attribute], what: str) -> Attribute:
    pos = parser.pos
    attr = parser.parse_attribute()
    if not isinstance(attr, kind):
        parser.raise_error(f"expected {what}, got {attr}", pos, parser.pos)
    return attr


# ----------------------------------------------------------------------------------------------
# TensorFormat
# ----------------------------------------------------------------------------------------------


@irdl_attr_definition
class AxisTilingAttr(ParametrizedAttribute):
    """Tiling of one axis: `block x partitions` plus what to do with an indivisible extent."""

    name = "mid.axis"
    block: IntAttr
    partitions: IntAttr
    indivisible: IndivisibleAttr

    def __init__(self, block: int, partitions: int, indivisible: str = Indivisible.PAD):
        super().__init__(
            IntAttr(block),
            IntAttr(partitions),
            enum_attr(IndivisibleAttr, indivisible, "axis tiling: indivisible mode"),
        )

    @property
    def pad(self) -> bool:
        return self.indivisible.data == Indivisible.PAD

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return cls.parse_body(parser)

    @staticmethod
    def parse_body(parser: AttrParser) -> tuple[Attribute, ...]:
        block = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("x")
        partitions = parser.parse_integer(allow_boolean=False)
        mode = IndivisibleAttr(parser.parse_str_enum(Indivisible))
        return (IntAttr(block), IntAttr(partitions), mode)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            self.print_body(printer)

    def print_body(self, printer: Printer) -> None:
        printer.print_string(
            f"{self.block.data} x {self.partitions.data} {self.indivisible.data}"
        )

    def verify(self) -> None:
        for what, value in (("block size", self.block.data), ("partition count", self.partitions.data)):
            if value < 1:
                raise VerifyException(f"axis tiling: {what} must be >= 1, got {value}")
            if value > I64_MAX:
                raise VerifyException(f"axis tiling: {what} {value} does not fit a tensor extent (i64)")


@irdl_attr_definition
class TensorFormatAttr(ParametrizedAttribute):
    """`TensorFormat`: storage precision, element order, per-axis tiling, replication and
    tile-group size, memory class. Used as the encoding of mid tensors."""

    name = "mid.format"
    precision: PrecisionAttr
    scale: IntAttr
    order: ElementOrderAttr
    tiling: ArrayAttr[AxisTilingAttr]
    replication: IntAttr
    group: IntAttr
    memory: MemoryClassAttr
    first_tile: IntAttr  # shards sit on tiles first_tile .. first_tile + tiles used - 1

    def __init__(
        self,
        precision: str,
        order: str,
        tiling: Sequence[AxisTilingAttr],
        replication: int = 1,
        group: int = 1,
        memory: str = MemoryClass.STANDARD,
        scale: int = 0,
        first_tile: int = 0,
    ):
        super().__init__(
            enum_attr(PrecisionAttr, precision, "format: precision"),
            IntAttr(scale),
            enum_attr(ElementOrderAttr, order, "format: element order"),
            ArrayAttr(tiling),
            IntAttr(replication),
            IntAttr(group),
            enum_attr(MemoryClassAttr, memory, "format: memory class"),
            IntAttr(first_tile),
        )

    # -- Python accessors (plain values) -------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.tiling.data)

    @property
    def blocks(self) -> tuple[int, ...]:
        return tuple(a.block.data for a in self.tiling.data)

    @property
    def partitions(self) -> tuple[int, ...]:
        return tuple(a.partitions.data for a in self.tiling.data)

    @property
    def pads(self) -> tuple[bool, ...]:
        return tuple(a.pad for a in self.tiling.data)

    @property
    def partition_count(self) -> int:
        return math.prod(self.partitions)

    def with_changes(self, **changes: object) -> TensorFormatAttr:
        """A copy with some parts replaced (keys: the `__init__` argument names)."""
        parts: dict[str, object] = {
            "precision": self.precision.data,
            "order": self.order.data,
            "tiling": list(self.tiling.data),
            "replication": self.replication.data,
            "group": self.group.data,
            "memory": self.memory.data,
            "scale": self.scale.data,
            "first_tile": self.first_tile.data,
        }
        parts.update(changes)
        return TensorFormatAttr(**parts)  # type: ignore[arg-type]

    # -- syntax --------------------------------------------------------------------------------
    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            precision = parser.parse_str_enum(StoragePrecision)
            scale = 0
            if precision == StoragePrecision.F8F143:
                with parser.in_angle_brackets():
                    scale = parser.parse_integer(allow_boolean=False)
            elif precision == StoragePrecision.F16 and parser.parse_optional_punctuation("<"):
                scale = parser.parse_integer(allow_boolean=False)  # scaled FP8 GEMM partials
                parser.parse_punctuation(">")
            parser.parse_punctuation(",")
            order = parser.parse_str_enum(ElementOrder)
            parser.parse_punctuation(",")
            tiling = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: AxisTilingAttr.new(AxisTilingAttr.parse_body(parser)),
            )
            parser.parse_punctuation(",")
            _key(parser, "replication")
            replication = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(",")
            _key(parser, "group")
            group = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(",")
            memory = parser.parse_str_enum(MemoryClass)
            first_tile = 0
            if parser.parse_optional_punctuation(","):
                _key(parser, "first_tile")
                first_tile = parser.parse_integer(allow_boolean=False)
        return (
            PrecisionAttr(precision),
            IntAttr(scale),
            ElementOrderAttr(order),
            ArrayAttr(tiling),
            IntAttr(replication),
            IntAttr(group),
            MemoryClassAttr(memory),
            IntAttr(first_tile),
        )

    def precision_text(self) -> str:
        if self.precision.data == StoragePrecision.F8F143 or self.scale.data:
            return f"{self.precision.data}<{self.scale.data}>"
        return str(self.precision.data)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(f"{self.precision_text()}, {self.order.data}, ")
            with printer.in_square_brackets():
                printer.print_list(self.tiling.data, lambda a: a.print_body(printer))
            printer.print_string(
                f", replication = {self.replication.data}, group = {self.group.data}, "
                f"{self.memory.data}"
            )
            if self.first_tile.data:  # tile 0 is the default: formats print as they always did
                printer.print_string(f", first_tile = {self.first_tile.data}")

    def verify(self) -> None:
        precision = self.precision.data
        scale = self.scale.data
        if precision in SCALED_PRECISIONS:
            if scale not in FP8_SCALE_RANGE:
                raise VerifyException(
                    f"format: {precision} scale {scale} is outside "
                    f"{FP8_SCALE_RANGE.start}..{FP8_SCALE_RANGE.stop - 1}"
                )
        elif scale != 0:
            raise VerifyException(f"format: only f8f143 and f16 have a scale, {precision} has "
                                  f"{scale}")
        for axis, entry in enumerate(self.tiling.data):
            if not isinstance(entry, AxisTilingAttr):
                raise VerifyException(f"format: tiling entry {axis} is not a #mid.axis")
        if precision == StoragePrecision.I32 and self.order.data != ElementOrder.ROW_MAJOR:
            raise VerifyException(f"format: i32 (index) tensors are stored row_major, not "
                                  f"{self.order.data}")
        if self.order.data != ElementOrder.ROW_MAJOR and len(self.tiling.data) < 2:
            raise VerifyException(
                f"format: {self.order.data} order packs the last two axes, but the format tiles "
                f"{len(self.tiling.data)} axis/axes"
            )
        if self.replication.data < 1:
            raise VerifyException(f"format: replication must be >= 1, got {self.replication.data}")
        needed = self.replication.data * self.partition_count
        if self.group.data < needed:
            raise VerifyException(
                f"format: tile group {self.group.data} is smaller than replication "
                f"{self.replication.data} x {self.partition_count} partitions = {needed} tiles"
            )
        if self.first_tile.data < 0:
            raise VerifyException(f"format: first_tile must be >= 0, got {self.first_tile.data}")


def format_of(op_name: str, what: str, value_type: Attribute) -> tuple[TensorType, TensorFormatAttr]:
    """The tensor type of a mid value and its format, or a diagnostic naming op and value."""
    if not isinstance(value_type, TensorType):
        raise VerifyException(f"{op_name}: {what} must be a ranked tensor, got {value_type}")
    fmt = value_type.encoding
    if not isinstance(fmt, TensorFormatAttr):
        raise VerifyException(
            f"{op_name}: {what} of type {value_type} has no #mid.format encoding"
        )
    shape = value_type.get_shape()
    if any(d < 0 for d in shape):
        raise VerifyException(f"{op_name}: {what} must have static extents, got {value_type}")
    if fmt.rank != len(shape):
        raise VerifyException(
            f"{op_name}: {what} has rank {len(shape)} but its format tiles {fmt.rank} axes"
        )
    return value_type, fmt


# ----------------------------------------------------------------------------------------------
# OperatorDispatch, OperatorPlan
# ----------------------------------------------------------------------------------------------


def _print_optional_fields(printer: Printer, fields: Sequence[tuple[str, str | None]]) -> None:
    for key, text in fields:
        if text is not None:
            printer.print_string(f", {key} = {text}")


@irdl_attr_definition
class OperatorDispatchAttr(ParametrizedAttribute):
    """Whole-device recipe: dispatch kind, inner/column block sizes, init/accum kernels."""

    name = "mid.dispatch"
    kind: DispatchKindAttr
    inner: IntAttr | NoneAttr
    columns: IntAttr | NoneAttr
    init: SymbolRefAttr | NoneAttr
    accum: SymbolRefAttr | NoneAttr

    def __init__(
        self,
        kind: str,
        inner: int | None = None,
        columns: int | None = None,
        init: str | None = None,
        accum: str | None = None,
    ):
        super().__init__(
            enum_attr(DispatchKindAttr, kind, "dispatch: kind"),
            IntAttr(inner) if inner is not None else NoneAttr(),
            IntAttr(columns) if columns is not None else NoneAttr(),
            SymbolRefAttr(init) if init is not None else NoneAttr(),
            SymbolRefAttr(accum) if accum is not None else NoneAttr(),
        )

    @property
    def init_symbol(self) -> str | None:
        return self.init.root_reference.data if isinstance(self.init, SymbolRefAttr) else None

    @property
    def accum_symbol(self) -> str | None:
        return self.accum.root_reference.data if isinstance(self.accum, SymbolRefAttr) else None

    @property
    def inner_block(self) -> int | None:
        return self.inner.data if isinstance(self.inner, IntAttr) else None

    @property
    def column_block(self) -> int | None:
        return self.columns.data if isinstance(self.columns, IntAttr) else None

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        values: dict[str, Attribute] = {}
        with parser.in_angle_brackets():
            kind = parser.parse_str_enum(DispatchKind)
            while parser.parse_optional_punctuation(","):
                pos = parser.pos
                key = parser.parse_identifier()
                if key not in ("inner", "columns", "init", "accum") or key in values:
                    parser.raise_error(
                        f"expected one of inner, columns, init, accum (each once), got '{key}'",
                        pos,
                        parser.pos,
                    )
                parser.parse_punctuation("=")
                if key in ("inner", "columns"):
                    values[key] = IntAttr(parser.parse_integer(allow_boolean=False))
                else:
                    values[key] = SymbolRefAttr(parser.parse_symbol_name())
        return (
            DispatchKindAttr(kind),
            *(values.get(k, NoneAttr()) for k in ("inner", "columns", "init", "accum")),
        )

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(str(self.kind.data))
            _print_optional_fields(
                printer,
                [
                    ("inner", str(self.inner_block) if self.inner_block is not None else None),
                    ("columns", str(self.column_block) if self.column_block is not None else None),
                    ("init", f"@{self.init_symbol}" if self.init_symbol else None),
                    ("accum", f"@{self.accum_symbol}" if self.accum_symbol else None),
                ],
            )

    def verify(self) -> None:
        kind = self.kind.data
        for key, block in (("inner", self.inner_block), ("columns", self.column_block)):
            if block is not None and block < 1:
                raise VerifyException(f"dispatch: {key} block size must be >= 1, got {block}")
        if self.init_symbol is None:
            raise VerifyException(f"dispatch: {kind} needs an init kernel symbol")
        if kind in GEMM_DISPATCH_KINDS:
            missing = [
                k
                for k, v in (
                    ("inner", self.inner_block),
                    ("columns", self.column_block),
                    ("accum", self.accum_symbol),
                )
                if v is None
            ]
            if missing:
                raise VerifyException(f"dispatch: {kind} needs {', '.join(missing)}")
        if kind == DispatchKind.ATTENTION_BLOCKS and self.accum_symbol is None:
            raise VerifyException(f"dispatch: {kind} needs accum")


@irdl_attr_definition
class OperandPlanAttr(ParametrizedAttribute):
    """One operand of an operator plan: name, role, format, byte alignment, access tail."""

    name = "mid.operand"
    operand: StringAttr
    role: OperandRoleAttr
    format: TensorFormatAttr
    alignment: IntAttr
    tail: IntAttr

    def __init__(
        self, operand: str, role: str, format: TensorFormatAttr, alignment: int, tail: int = 0
    ):
        super().__init__(
            StringAttr(operand),
            enum_attr(OperandRoleAttr, role, f"operand {operand}: role"),
            format,
            IntAttr(alignment),
            IntAttr(tail),
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            operand = parser.parse_identifier()
            parser.parse_punctuation(":")
            role = parser.parse_str_enum(OperandRole)
            parser.parse_punctuation(",")
            fmt = _parse_nested(parser, TensorFormatAttr, "a #mid.format")
            parser.parse_punctuation(",")
            _key(parser, "align")
            alignment = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(",")
            _key(parser, "tail")
            tail = parser.parse_integer(allow_boolean=False)
        return (StringAttr(operand), OperandRoleAttr(role), fmt, IntAttr(alignment), IntAttr(tail))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(f"{self.operand.data} : {self.role.data}, ")
            printer.print_attribute(self.format)
            printer.print_string(f", align = {self.alignment.data}, tail = {self.tail.data}")

    def verify(self) -> None:
        align = self.alignment.data
        if align < 1 or align & (align - 1):
            raise VerifyException(
                f"operand {self.operand.data}: alignment {align} is not a power of two"
            )
        if self.tail.data < 0:
            raise VerifyException(
                f"operand {self.operand.data}: access tail {self.tail.data} is negative"
            )


@irdl_attr_definition
class OperatorPlanAttr(ParametrizedAttribute):
    """A complete, selected operator candidate (see docs/internals.md, "mid level")."""

    name = "mid.plan"
    candidate: StringAttr
    dispatch: OperatorDispatchAttr
    accumulate: PrecisionAttr
    amp: StringAttr
    operands: ArrayAttr[OperandPlanAttr]
    distinct: ArrayAttr[ArrayAttr[StringAttr]]
    alias: StringAttr

    def __init__(
        self,
        candidate: str,
        dispatch: OperatorDispatchAttr,
        accumulate: str,
        amp: str,
        operands: Sequence[OperandPlanAttr],
        distinct: Sequence[tuple[str, str]] = (),
        alias: str = "none",
    ):
        super().__init__(
            StringAttr(candidate),
            dispatch,
            enum_attr(PrecisionAttr, accumulate, f"plan {candidate}: accumulation precision"),
            StringAttr(amp),
            ArrayAttr(operands),
            ArrayAttr(ArrayAttr((StringAttr(a), StringAttr(b))) for a, b in distinct),
            StringAttr(alias),
        )

    def operand_plan(self, operand: str) -> OperandPlanAttr:
        for entry in self.operands.data:
            if entry.operand.data == operand:
                return entry
        raise KeyError(f"plan {self.candidate.data} has no operand '{operand}'")

    @property
    def distinct_pairs(self) -> tuple[tuple[str, str], ...]:
        return tuple((p.data[0].data, p.data[1].data) for p in self.distinct.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def parse_pair() -> Attribute:
            with parser.in_parens():
                first = parser.parse_identifier()
                parser.parse_punctuation(",")
                second = parser.parse_identifier()
            return ArrayAttr((StringAttr(first), StringAttr(second)))

        with parser.in_angle_brackets():
            candidate = parser.parse_str_literal()
            parser.parse_punctuation(",")
            dispatch = _parse_nested(parser, OperatorDispatchAttr, "a #mid.dispatch")
            parser.parse_punctuation(",")
            _key(parser, "accumulate")
            accumulate = parser.parse_str_enum(StoragePrecision)
            parser.parse_punctuation(",")
            _key(parser, "amp")
            amp = "" if parser.parse_optional_keyword("none") else parser.parse_str_literal()
            parser.parse_punctuation(",")
            _key(parser, "operands")
            operands = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: _parse_nested(parser, OperandPlanAttr, "a #mid.operand"),
            )
            parser.parse_punctuation(",")
            _key(parser, "distinct")
            distinct = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_pair)
            parser.parse_punctuation(",")
            _key(parser, "alias")
            alias = parser.parse_identifier()
        return (
            StringAttr(candidate),
            dispatch,
            PrecisionAttr(accumulate),
            StringAttr(amp),
            ArrayAttr(operands),
            ArrayAttr(distinct),
            StringAttr(alias),
        )

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.candidate.data)
            printer.print_string(", ")
            printer.print_attribute(self.dispatch)
            printer.print_string(f", accumulate = {self.accumulate.data}, amp = ")
            if self.amp.data:
                printer.print_string_literal(self.amp.data)
            else:
                printer.print_string("none")
            printer.print_string(", operands = ")
            with printer.in_square_brackets():
                printer.print_list(self.operands.data, printer.print_attribute)
            printer.print_string(", distinct = ")
            with printer.in_square_brackets():
                printer.print_list(
                    self.distinct_pairs, lambda p: printer.print_string(f"({p[0]}, {p[1]})")
                )
            printer.print_string(f", alias = {self.alias.data}")

    def verify(self) -> None:
        name = self.candidate.data
        names = [entry.operand.data for entry in self.operands.data]
        if len(set(names)) != len(names):
            raise VerifyException(f"plan {name}: operand names repeat: {', '.join(names)}")
        for first, second in self.distinct_pairs:
            for n in (first, second):
                if n not in names:
                    raise VerifyException(
                        f"plan {name}: distinct-memory pair ({first}, {second}) names unknown "
                        f"operand '{n}'"
                    )
            if first == second:
                raise VerifyException(
                    f"plan {name}: distinct-memory pair ({first}, {second}) names one operand twice"
                )
        alias = self.alias.data
        if alias != "none" and alias not in names:
            raise VerifyException(f"plan {name}: output may alias unknown operand '{alias}'")


# ----------------------------------------------------------------------------------------------
# PipelineConfig
# ----------------------------------------------------------------------------------------------


@irdl_attr_definition
class PipelineConfigAttr(ParametrizedAttribute, ConfiguresTileCount):
    """`PipelineConfig`, stored on the module as `ipu.config`: target, tile count, graph-input
    format policy, operator catalog, scheduling and profiling policy."""

    name = "mid.config"
    target: StringAttr
    tiles: IntAttr
    indivisible: IndivisibleAttr
    inputs: InputPolicyAttr
    catalog: ArrayAttr[StringAttr]
    scheduling: SchedulingPolicyAttr
    profiling: ProfilingPolicyAttr

    def __init__(
        self,
        target: str,
        tiles: int,
        indivisible: str = Indivisible.PAD,
        inputs: str = InputPolicy.CONSUMER,
        catalog: Sequence[str] = (),
        scheduling: str = SchedulingPolicy.IN_ORDER,
        profiling: str = ProfilingPolicy.OFF,
    ):
        super().__init__(
            StringAttr(target),
            IntAttr(tiles),
            enum_attr(IndivisibleAttr, indivisible, "config: indivisible policy"),
            enum_attr(InputPolicyAttr, inputs, "config: graph-input format policy"),
            ArrayAttr(StringAttr(c) for c in catalog),
            enum_attr(SchedulingPolicyAttr, scheduling, "config: scheduling policy"),
            enum_attr(ProfilingPolicyAttr, profiling, "config: profiling policy"),
        )

    def configured_tiles(self) -> int:
        return self.tiles.data

    @property
    def catalog_names(self) -> tuple[str, ...]:
        return tuple(c.data for c in self.catalog.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            _key(parser, "target")
            target = parser.parse_str_literal()
            parser.parse_punctuation(",")
            _key(parser, "tiles")
            tiles = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(",")
            _key(parser, "indivisible")
            indivisible = parser.parse_str_enum(Indivisible)
            parser.parse_punctuation(",")
            _key(parser, "inputs")
            inputs = parser.parse_str_enum(InputPolicy)
            parser.parse_punctuation(",")
            _key(parser, "catalog")
            catalog = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: StringAttr(parser.parse_str_literal())
            )
            parser.parse_punctuation(",")
            _key(parser, "scheduling")
            scheduling = parser.parse_str_enum(SchedulingPolicy)
            parser.parse_punctuation(",")
            _key(parser, "profiling")
            profiling = parser.parse_str_enum(ProfilingPolicy)
        return (
            StringAttr(target),
            IntAttr(tiles),
            IndivisibleAttr(indivisible),
            InputPolicyAttr(inputs),
            ArrayAttr(catalog),
            SchedulingPolicyAttr(scheduling),
            ProfilingPolicyAttr(profiling),
        )

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string("target = ")
            printer.print_string_literal(self.target.data)
            printer.print_string(
                f", tiles = {self.tiles.data}, indivisible = {self.indivisible.data}, "
                f"inputs = {self.inputs.data}, catalog = "
            )
            with printer.in_square_brackets():
                printer.print_list(self.catalog_names, printer.print_string_literal)
            printer.print_string(
                f", scheduling = {self.scheduling.data}, profiling = {self.profiling.data}"
            )

    def verify(self) -> None:
        try:
            target = get_target(self.target.data)
        except ValueError as err:
            raise VerifyException(f"config: {err}") from None
        tiles = self.tiles.data
        if not 1 <= tiles <= target.tiles:
            raise VerifyException(
                f"config: tile count {tiles} is outside 1..{target.tiles} for target {target.name}"
            )
        names = self.catalog_names
        if len(set(names)) != len(names):
            raise VerifyException(f"config: operator catalog repeats a name: {list(names)}")


# On a conversion op (and graph-to-mid's bridge before it): the graph op that consumes the
# converted value, e.g. "graph.gemm %y"; its tile work names it as its provenance.
CONSUMER_ATTR_NAME = "ipu.for"


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
        a, b = lhs.get_shape(), rhs.get_shape()
        expected = gemm_result_shape(self.name, a, b, self.transpose_lhs is not None,
                                     self.transpose_rhs is not None)
        check_result_shape(self.name, out.get_shape(), expected, gemm_shape_rule(a, b))
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
        expected = add_result_shape(self.name, lhs.get_shape(), rhs.get_shape())
        check_result_shape(self.name, out.get_shape(), expected,
                           "the broadcast shape of lhs and rhs")
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
        check_result_shape(self.name, out.get_shape(), src.get_shape(), "the input shape")
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
        check_attention_shapes(self.name, shapes["query"], shapes["key"], shapes["value"],
                               self.causal is not None)
        check_result_shape(self.name, shapes["out"], shapes["query"], "the query shape")
        check_positive(self.name, "scale", self.scale.value.data)
        if self.key_mask is not None:
            mask, formats["key_mask"] = format_of(self.name, "key_mask", self.key_mask.type)
            check_index_storage(self.name, "key_mask", mask, formats["key_mask"])
            check_key_mask_shape(self.name, mask.get_shape(), shapes["query"], shapes["key"])
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
        check_layer_norm_shapes(self.name, shapes["src"], shapes["weight"], shapes["bias"])
        check_result_shape(self.name, shapes["out"], shapes["src"], "the input shape")
        check_positive(self.name, "eps", self.eps.value.data)
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
        expected = gather_result_shape(self.name, table.get_shape(), indices.get_shape())
        check_result_shape(self.name, out.get_shape(), expected,
                           "the indices' shape followed by the table's trailing axes")
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
        check_reshape(self.name, input, result)


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
        permutation = tuple(self.permutation.get_values())
        check_result_shape(self.name, result, transposed_shape(self.name, input, permutation),
                           f"the input {fmt_shape(input)} permuted by {fmt_shape(permutation)}")


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
        starts, ends, steps = (tuple(a.get_values()) for a in (self.starts, self.ends, self.steps))
        check_result_shape(self.name, result, slice_result_shape(self.name, input, starts, ends, steps),
                           f"starts {fmt_shape(starts)}, ends {fmt_shape(ends)}, steps "
                           f"{fmt_shape(steps)} of {fmt_shape(input)}")


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
        axis = self.axis.value.data
        expected = concat_result_shape(self.name, [shapes[n] for n in names], axis)
        check_result_shape(self.name, shapes["out"], expected,
                           f"the inputs joined along axis {axis}")


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
            f"{op_name}: shape changes from {fmt_shape(src.get_shape())} to "
            f"{fmt_shape(dst.get_shape())}"
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
class RepeatOp(IRDLOperation):
    """`graph.repeat` at the mid level: the body is lowered with the same operators and runs
    `count` times over carried values (one format for the operand, the body argument, the
    yield and the result), invariants and per-iteration sequence elements (the body argument
    has the element's format; `normalize-repeats` stores the sequence so that element i is
    block i of equal, consecutive per-tile blocks)."""

    name = "mid.repeat"
    count = prop_def(IntegerAttr[I64])
    carried = var_operand_def(TensorType)
    invariants = var_operand_def(TensorType)
    sequences = var_operand_def(TensorType)
    res = var_result_def(TensorType)
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(RecursiveMemoryEffect())

    def __init__(self, count: int, carried: Sequence[SSAValue], invariants: Sequence[SSAValue],
                 sequences: Sequence[SSAValue], body: Region):
        super().__init__(
            operands=[carried, invariants, sequences],
            result_types=[[v.type for v in carried]],
            properties={"count": IntegerAttr(count, i64)},
            regions=[body],
        )

    @property
    def iterations(self) -> int:
        return self.count.value.data

    @property
    def block(self) -> Block:
        return self.body.block

    @property
    def carried_args(self):
        return self.block.args[: len(self.carried)]

    @property
    def invariant_args(self):
        return self.block.args[len(self.carried): len(self.carried) + len(self.invariants)]

    @property
    def sequence_args(self):
        return self.block.args[len(self.carried) + len(self.invariants):]

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
                    f"{self.name}: sequence operand #{i} has shape {fmt_shape(shape)}; it must be "
                    f"[{self.iterations}] followed by its body element's shape "
                    f"{fmt_shape(element or ())}"
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
