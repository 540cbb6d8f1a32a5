"""The schedule `schedule-exchange` gives a `tile.exchange`: `#tile.schedule<...>`
(`ExchangeScheduleAttr`), one attribute with the shared rows it runs, which row every
(iteration, group) runs, the per-iteration `#tile.patch`es (`RowPatchAttr`) of those rows,
their slot and the buffer addresses they were built for.

Each attribute checks what it alone can say (`verify`: lengths agree, indices in range,
loop positions increasing, addresses word aligned); `tile.exchange` checks it against its
loops and buffers, and against the module's `exchange.row`s (`ipu_dialects/tile.py`). The
syntax: docs/internals.md, "The tile syntax, by example".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    IntAttr,
    IntegerType,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from device.target import WORD_BYTES
from ipu_dialects.exchange import InstructionOp, RowOp
from ipu_dialects.shared_attrs import dense_ints
from ipu_dialects.tile_syntax import I64_MAX, parse_attribute_of, parse_int


@irdl_attr_definition
class RowPatchAttr(ParametrizedAttribute):
    """A per-iteration immediate of a shared row:
    `#tile.patch<@row, INSTRUCTION, "FIELD", array<i64: v0, v1, ...>>`.

    Rows are shared by every iteration and tile that runs them; what differs between
    iterations (source address, source tile, pointer, delay) is carried here as one value per
    linearized iteration of the enclosing loops, replacing field FIELD of instruction number
    INSTRUCTION of row @row (docs/internals.md, "What we build": per-iteration differences as
    integer arrays).
    """

    name = "tile.patch"
    row: SymbolRefAttr
    instruction: IntAttr
    field: StringAttr
    values: DenseArrayBase[I64]

    def __init__(self, row: str, instruction: int, field: str, values: Sequence[int]):
        super().__init__(SymbolRefAttr(row), IntAttr(instruction), StringAttr(field),
                         dense_ints(i64, list(values)))

    @property
    def row_name(self) -> str:
        return self.row.root_reference.data

    def verify(self) -> None:
        if self.instruction.data < 0:
            raise VerifyException(f"#tile.patch of @{self.row_name}: instruction "
                                  f"{self.instruction.data} must be >= 0")

    def value_list(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.values.get_values())

    def check_target(self, row: RowOp) -> None:
        """The patch must name an instruction of `row` and one of that instruction's fields
        (what only the module's `exchange.row` can say)."""
        instructions = list(row.body.block.ops)
        index = self.instruction.data
        if index >= len(instructions):
            raise VerifyException(
                f"tile.exchange: the patch of @{self.row_name} names instruction {index}, but "
                f"the row has {len(instructions)} instruction(s)"
            )
        instr = instructions[index]
        assert isinstance(instr, InstructionOp)
        if self.field.data not in instr.field_names():
            raise VerifyException(
                f"tile.exchange: the patch of @{self.row_name} instruction {index} "
                f"({instr.name}) names field '{self.field.data}'; its fields are "
                f"{', '.join(instr.field_names())}"
            )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            row = parse_attribute_of(parser, SymbolRefAttr, "a row symbol (@name)")
            parser.parse_punctuation(",")
            instruction = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_punctuation(",")
            field = parser.parse_str_literal(" for the patched field")
            parser.parse_punctuation(",")
            values = parser.parse_attribute()
            if not isinstance(values, DenseArrayBase) or values.elt_type != i64:
                parser.raise_error(f"expected array<i64: ...> of patch values, got {values}")
        return (row, IntAttr(instruction), StringAttr(field), values)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.row)
        printer.print_string(f", {self.instruction.data}, ")
        printer.print_string_literal(self.field.data)
        printer.print_string(", ")
        printer.print_attribute(self.values)
        printer.print_string(">")


@irdl_attr_definition
class ExchangeScheduleAttr(ParametrizedAttribute):
    """What `schedule-exchange` built for one `tile.exchange`, as one attribute:

        #tile.schedule<rows = [@x0_send, @x0_receive], row_loops = [1],
                       sender_rows = [0, 0], receiver_rows = [1, 1],
                       patches = [#tile.patch<...>, ...], row_address = 0x4c000,
                       placed = [src 0x5c000, dst 0x60000]>

    - `rows`: the shared `exchange.row`s of the module the exchange runs.
    - `row_loops` (optional; absent: all): positions (outermost first) of the enclosing loops
      the rows vary with; only their iterations have rows of their own.
    - `sender_rows` / `receiver_rows`: one entry per (iteration of those loops, group), in
      linearized order (`tile_iteration`): the index in `rows` of the source tile's row and
      of every other destination tile's row, or -1 in both when it has no traffic.
    - `patches` (optional; absent: none): `#tile.patch`es of the rows, one value per entry.
    - `row_address`: the slot of entry 0 (iteration n runs at `row_address + n *
      slot_stride(rows)`).
    - `placed` (optional): the source and destination buffer addresses the rows were built
      for (they hold absolute addresses: a buffer moved afterwards makes them stale).

    `verify` checks what the attribute alone says (docs/internals.md, "The tile syntax, by
    example"); the op checks it against its loops and buffers, and its symbol uses against the module.
    """

    name = "tile.schedule"
    rows: ArrayAttr[SymbolRefAttr]
    row_loops: DenseArrayBase[IntegerType] | NoneAttr
    sender_rows: DenseArrayBase[IntegerType]
    receiver_rows: DenseArrayBase[IntegerType]
    patches: ArrayAttr[RowPatchAttr]
    row_address: IntAttr
    placed: DenseArrayBase[IntegerType] | NoneAttr

    LABEL: ClassVar[str] = "#tile.schedule"

    def __init__(self, rows: Sequence[str], sender_rows: Sequence[int],
                 receiver_rows: Sequence[int], row_address: int, *,
                 patches: Sequence[RowPatchAttr] = (), row_loops: Sequence[int] | None = None,
                 placed: tuple[int, int] | None = None):
        super().__init__(
            ArrayAttr(SymbolRefAttr(r) for r in rows),
            NoneAttr() if row_loops is None else dense_ints(i64, list(row_loops)),
            dense_ints(i32, list(sender_rows)), dense_ints(i32, list(receiver_rows)),
            ArrayAttr(patches), IntAttr(row_address),
            NoneAttr() if placed is None else dense_ints(i64, list(placed)))

    def changed(self, **fields: Attribute) -> ExchangeScheduleAttr:
        """This schedule with some fields (parameters by name) replaced, verified again."""
        return ExchangeScheduleAttr.new([fields.pop(name, value) for name, value in
                                         zip(self.FIELDS, self.parameters, strict=True)])

    # -- what the passes, the package writer and the emitters read --------------------------
    @property
    def row_symbols(self) -> list[str]:
        return [ref.root_reference.data for ref in self.rows.data]

    @property
    def varying_loops(self) -> list[int] | None:
        """`row_loops`: the positions of the enclosing loops the rows vary with (None: all)."""
        if isinstance(self.row_loops, NoneAttr):
            return None
        return [int(p) for p in self.row_loops.get_values()]

    def loop_positions(self, depth: int) -> list[int]:
        """Positions of the enclosing loops the rows vary with (all `depth` by default)."""
        positions = self.varying_loops
        return list(range(depth)) if positions is None else positions

    @property
    def senders(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.sender_rows.get_values())

    @property
    def receivers(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.receiver_rows.get_values())

    @property
    def entry_count(self) -> int:
        """(iteration, group)s the schedule has an entry for."""
        return len(self.sender_rows)

    def patches_by_row(self) -> dict[str, list[tuple[int, str, np.ndarray]]]:
        """Every row's patches: (instruction, field, one value per entry), in patch order."""
        patches: dict[str, list[tuple[int, str, np.ndarray]]] = {s: [] for s in self.row_symbols}
        for patch in self.patches.data:
            patches[patch.row_name].append(
                (patch.instruction.data, patch.field.data, np.asarray(patch.value_list())))
        return patches

    @property
    def address(self) -> int:
        return self.row_address.data

    @property
    def placed_addresses(self) -> tuple[int, int] | None:
        if isinstance(self.placed, NoneAttr):
            return None
        src, dst = (int(v) for v in self.placed.get_values())
        return src, dst

    # -- syntax -------------------------------------------------------------------------------
    FIELDS: ClassVar[tuple[str, ...]] = ("rows", "row_loops", "sender_rows", "receiver_rows",
                                         "patches", "row_address", "placed")
    REQUIRED: ClassVar[tuple[str, ...]] = ("rows", "sender_rows", "receiver_rows", "row_address")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def ints(bits: int, allow_negative: bool = True) -> list[int]:
            return parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_int(parser, bits, allow_negative))

        def placed() -> tuple[int, int]:
            with parser.in_square_brackets():
                parser.parse_keyword("src")
                src = parse_int(parser, 64)  # a negative one: the verifier's message
                parser.parse_punctuation(",")
                parser.parse_keyword("dst")
                return src, parse_int(parser, 64)

        values = {
            "rows": lambda: [r.data for r in parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_symbol_name)],
            "row_loops": lambda: ints(64, allow_negative=False),
            "sender_rows": lambda: ints(32),
            "receiver_rows": lambda: ints(32),
            "patches": lambda: parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_attribute_of(parser, RowPatchAttr)),
            "row_address": lambda: parse_int(parser, 64, allow_negative=False),
            "placed": placed,
        }
        start = parser.pos
        fields: dict[str, Any] = {}
        with parser.in_angle_brackets():
            while True:
                at = parser.pos
                name = parser.parse_identifier(f" (a {cls.LABEL} field: {', '.join(cls.FIELDS)})")
                if name not in values or name in fields:
                    parser.raise_error(
                        f"{cls.LABEL}: {'unknown' if name not in values else 'repeated'} field "
                        f"'{name}'; the fields are {', '.join(cls.FIELDS)}, each once",
                        at, parser.pos)
                parser.parse_punctuation("=")
                fields[name] = values[name]()
                if parser.parse_optional_punctuation(",") is None:
                    break
            if missing := [f for f in cls.REQUIRED if f not in fields]:
                parser.raise_error(f"{cls.LABEL}: needs {', '.join(missing)}", start, parser.pos)
        try:  # a bad schedule is an error at its text, not one without a location
            schedule = cls(fields["rows"], fields["sender_rows"], fields["receiver_rows"],
                           fields["row_address"], patches=fields.get("patches", ()),
                           row_loops=fields.get("row_loops"), placed=fields.get("placed"))
        except VerifyException as error:
            parser.raise_error(str(error), start, parser.pos)
        return schedule.parameters

    def print_parameters(self, printer: Printer) -> None:
        def ints(values: Iterable[int]) -> str:
            return "[" + ", ".join(str(int(v)) for v in values) + "]"

        printer.print_string("<rows = [")
        printer.print_list(self.rows.data, printer.print_attribute)
        printer.print_string("]")
        if not isinstance(self.row_loops, NoneAttr):
            printer.print_string(f", row_loops = {ints(self.row_loops.get_values())}")
        printer.print_string(f", sender_rows = {ints(self.senders)}, "
                             f"receiver_rows = {ints(self.receivers)}")
        if self.patches.data:
            printer.print_string(", patches = [")
            printer.print_list(self.patches.data, printer.print_attribute)
            printer.print_string("]")
        printer.print_string(f", row_address = {self.address:#x}")
        if (placed := self.placed_addresses) is not None:
            printer.print_string(f", placed = [src {placed[0]:#x}, dst {placed[1]:#x}]")
        printer.print_string(">")

    # -- what the attribute alone says --------------------------------------------------------
    def verify(self) -> None:
        label = self.LABEL
        names = self.row_symbols
        if not names:
            raise VerifyException(f"{label}: rows must name at least one exchange.row")
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise VerifyException(f"{label}: rows names @{twice} twice")
        if not isinstance(self.row_loops, NoneAttr):
            if self.row_loops.elt_type != i64:
                raise VerifyException(f"{label}: row_loops must be an array<i64: ...>")
            positions = self.loop_positions(0)
            if any(p < 0 for p in positions) or positions != sorted(set(positions)):
                raise VerifyException(f"{label}: row_loops {positions} must be strictly "
                                      "increasing loop positions (0: the outermost)")
        selections = {}
        for key, selection in (("sender_rows", self.sender_rows),
                               ("receiver_rows", self.receiver_rows)):
            if selection.elt_type != i32:
                raise VerifyException(f"{label}: {key} must be an array<i32: ...>")
            values = selections[key] = [int(v) for v in selection.get_values()]
            if any(not -1 <= v < len(names) for v in values):
                bad = next(v for v in values if not -1 <= v < len(names))
                raise VerifyException(
                    f"{label}: {key} selects row {bad}, outside the {len(names)} rows "
                    "(-1 means no row: the iteration has no traffic)")
        senders, receivers = selections["sender_rows"], selections["receiver_rows"]
        if len(senders) != len(receivers):
            raise VerifyException(
                f"{label}: sender_rows has {len(senders)} entries and receiver_rows "
                f"{len(receivers)}; both have one per (iteration, group)")
        for n, (sender, receiver) in enumerate(zip(senders, receivers)):
            if (sender < 0) != (receiver < 0):
                raise VerifyException(
                    f"{label}: entry {n} has sender row {sender} and receiver row {receiver}; "
                    "an (iteration, group) without traffic has -1 in both")
        for patch in self.patches.data:
            if patch.row_name not in names:
                raise VerifyException(
                    f"{label}: patches name @{patch.row_name}, which is not one of its rows")
            if len(patch.values) != len(senders):
                raise VerifyException(
                    f"{label}: the patch of @{patch.row_name} instruction "
                    f"{patch.instruction.data} field '{patch.field.data}' has "
                    f"{len(patch.values)} values, but sender_rows has {len(senders)} entries "
                    "(one per (iteration, group))")
        address = self.address
        if not 0 <= address <= I64_MAX or address % WORD_BYTES:
            raise VerifyException(
                f"{label}: row_address {address:#x} must be a word-aligned byte address")
        if not isinstance(self.placed, NoneAttr):
            placed = [int(v) for v in self.placed.get_values()]
            if self.placed.elt_type != i64 or len(placed) != 2 or min(placed) < 0:
                raise VerifyException(
                    f"{label}: placed must hold the source and the destination address "
                    f"(array<i64: src, dst>, each >= 0), got {self.placed}")
