"""Hand-written syntax pieces the tile ops' custom `parse`/`print` share (no IR definitions):
views `%buffer[MAP]`, bare affine maps, `iv(...)` operand lists, i64 and enum values with
diagnostics at the text at fault. The syntax itself is described in docs/internals.md
("The tile dialect").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from xdsl.dialects.builtin import IndexType, IntegerAttr, i64
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ipu_dialects.shared_attrs import EnumAttr, enum_attr

I64_MAX = (1 << 63) - 1
AttrT = TypeVar("AttrT", bound=ParametrizedAttribute)


def print_map(printer: Printer, affine_map: AffineMap) -> None:
    printer.print_string(str(affine_map))


def print_view(printer: Printer, buffer: SSAValue, offset: AffineMap) -> None:
    """`%buffer[(d0) -> (...)]`"""
    printer.print_ssa_value(buffer)
    printer.print_string("[")
    print_map(printer, offset)
    printer.print_string("]")


def parse_int(parser: AttrParser, bits: int, allow_negative: bool = True) -> int:
    """An integer of the text that must fit in the signed `bits`-bit integer its attribute
    stores: a larger one is a parse error at the number, not an OverflowError when the
    attribute is built."""
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False, allow_negative=allow_negative)
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        parser.raise_error(f"integer {value} does not fit in {bits} bits (i{bits})", start,
                           parser.pos)
    return value


def parse_i64(parser: AttrParser, allow_negative: bool = True) -> int:
    return parse_int(parser, 64, allow_negative)


def parse_attribute_of(parser: AttrParser, attr_class: type[AttrT], what: str = "") -> AttrT:
    """An attribute of the text that must be an `attr_class` (`#tile.provenance<...>` after
    `provenance`): another one is a parse error naming what was expected."""
    start = parser.pos
    attr = parser.parse_attribute()
    if not isinstance(attr, attr_class):
        expected = what or f"#{attr_class.name}<...>"
        parser.raise_error(f"expected {expected}, got {attr}", start, parser.pos)
    return attr


def parse_enum(parser: AttrParser, attr_class: type[EnumAttr], what: str, hint: str) -> EnumAttr:
    """An enum value of the op's text; a misspelt one is a parse error at the word."""
    start = parser.pos
    text = parser.parse_identifier(hint)
    try:
        return enum_attr(attr_class, text, what)
    except VerifyException as error:
        parser.raise_error(str(error), start, start + len(text))


def parse_view(parser: Parser) -> tuple[UnresolvedOperand, AffineMap]:
    """`%buffer[(d0) -> (...)]`"""
    operand = parser.parse_unresolved_operand()
    parser.parse_punctuation("[")
    affine_map = parser.parse_affine_map()
    parser.parse_punctuation("]")
    return operand, affine_map


def parse_ivs(parser: Parser) -> list[SSAValue]:
    """`iv(%i, %j)` -> the index operands."""
    parser.parse_keyword("iv")
    unresolved = parser.parse_comma_separated_list(
        Parser.Delimiter.PAREN, parser.parse_unresolved_operand
    )
    return [parser.resolve_operand(u, IndexType()) for u in unresolved]


def print_ivs(printer: Printer, ivs: Sequence[SSAValue]) -> None:
    printer.print_string(" iv(")
    printer.print_list(ivs, printer.print_ssa_value)
    printer.print_string(")")


def print_provenance_and_attrs(printer: Printer, op: Operation, provenance: Attribute) -> None:
    printer.print_string(" provenance ")
    printer.print_attribute(provenance)
    printer.print_op_attributes(op.attributes)


def int_prop(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)
