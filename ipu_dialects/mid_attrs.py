"""The attributes of the `mid` dialect: formats and operator plans (IR definitions only; the
dialect `Mid` in `ipu_dialects/mid.py` registers them, and its module re-exports them).

A `#mid.format` is the *encoding* of a mid value's builtin tensor type; a `#mid.plan` is the
operator plan a mid op carries: its dispatch and the format of every operand. The pipeline
configuration `#mid.config` is defined in `ipu_dialects/mid_config.py`; the enum attributes
mid and tile share (precision, element order, memory class), in `ipu_dialects/shared_attrs.py`.

Syntax
------
    #mid.format<PREC, ORDER, [BLOCK x PARTS pad|reject, ...], replication = R, group = G, MEMORY[, first_tile = F]>
        F      = the tile of the first shard (default 0, then not printed)
        PREC   = f16 | f32 | f8f143<SCALE> | i32    (SCALE in -31..31, value = q * 2**SCALE;
                                                    i32: index tensors, row_major only;
                                                    f16<SCALE>: the FP8 GEMM's scaled partials)
        ORDER  = row_major | amp_left | amp_right | amp_output | amp_left_t | amp_right_t
        MEMORY = standard | interleaved
    #mid.axis<BLOCK x PARTS pad|reject>               one tiling entry (also usable standalone)
    #mid.dispatch<KIND[, inner = I][, columns = C][, init = @sym][, accum = @sym]>
        KIND = gemm_blocks | gemm_grid | gemm_ksplit | gemm_grid3d | pointwise | head_sharded | attention_blocks
    #mid.operand<NAME : ROLE, #mid.format<...>, align = A, tail = T>
        ROLE = left | right | output | input
    #mid.plan<"candidate", #mid.dispatch<...>, accumulate = f16|f32, amp = "A16/B16x16/C16"|none,
              operands = [#mid.operand<...>, ...], distinct = [(out, lhs), ...], alias = none|NAME>

The shard arithmetic of a format (chunks, padding, tiles of partitions) lives in
`device/shard_geometry.py` (with the `#mid.format` adapter in `planning/shard_geometry.py`);
GEMM plans are built and chosen in `planning/gemm_selection.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Literal, TypeVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    IntAttr,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from device.layouts import FP8_SCALE_RANGE, SCALED_PRECISIONS, ElementOrder
from device.target import MemoryClass
from device.target import Precision as StoragePrecision
from ipu_dialects.shared_attrs import ElementOrderAttr, MemoryClassAttr, PrecisionAttr, enum_attr


class Indivisible(StrEnum):
    PAD = "pad"
    REJECT = "reject"


# Its values as the type of an option (`graph-to-mid{indivisible}`, `ipu-run --indivisible`):
# xDSL's pass options and typer take a `Literal`, not a StrEnum (test_mid.py holds the two
# equal).
IndivisibleOption = Literal["pad", "reject"]


class DispatchKind(StrEnum):
    GEMM_BLOCKS = "gemm_blocks"
    GEMM_GRID = "gemm_grid"
    GEMM_KSPLIT = "gemm_ksplit"
    GEMM_GRID3D = "gemm_grid3d"
    POINTWISE = "pointwise"
    HEAD_SHARDED = "head_sharded"
    ATTENTION_BLOCKS = "attention_blocks"


# The kinds of the GEMM layouts (one strategy each: `planning.gemm_selection.LAYOUTS`): their
# dispatch names the 64 x 64 blocks and both kernels.
GEMM_DISPATCH_KINDS = (DispatchKind.GEMM_BLOCKS, DispatchKind.GEMM_GRID, DispatchKind.GEMM_KSPLIT,
                       DispatchKind.GEMM_GRID3D)


class OperandRole(StrEnum):
    LEFT = "left"
    RIGHT = "right"
    OUTPUT = "output"
    INPUT = "input"


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


I64_MAX = 2**63 - 1  # tensor extents are i64


def parse_key(parser: AttrParser, keyword: str) -> None:
    """Parse `keyword =` (the mid attributes' `key = value` fields)."""
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")


FieldValue = TypeVar("FieldValue")


def parse_field(parser: AttrParser, key: str, parse_value: Callable[[], FieldValue]) -> FieldValue:
    """Parse `, key = value`, a later field of a mid attribute; `parse_value` reads the value."""
    parser.parse_punctuation(",")
    parse_key(parser, key)
    return parse_value()


def integer_parser(parser: AttrParser) -> Callable[[], int]:
    """What reads an integer field's value (no `true`/`false`)."""
    return partial(parser.parse_integer, allow_boolean=False)


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
            replication = parse_field(parser, "replication", integer_parser(parser))
            group = parse_field(parser, "group", integer_parser(parser))
            parser.parse_punctuation(",")
            memory = parser.parse_str_enum(MemoryClass)
            first_tile = 0
            if parser.parse_optional_punctuation(","):
                parse_key(parser, "first_tile")
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
            alignment = parse_field(parser, "align", integer_parser(parser))
            tail = parse_field(parser, "tail", integer_parser(parser))
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
            accumulate = parse_field(parser, "accumulate", lambda: parser.parse_str_enum(StoragePrecision))
            amp = parse_field(
                parser, "amp",
                lambda: "" if parser.parse_optional_keyword("none") else parser.parse_str_literal(),
            )
            operands = parse_field(parser, "operands", lambda: parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: _parse_nested(parser, OperandPlanAttr, "a #mid.operand"),
            ))
            distinct = parse_field(parser, "distinct", lambda: parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parse_pair
            ))
            alias = parse_field(parser, "alias", parser.parse_identifier)
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
