"""The `exchange` dialect: IPU21 supervisor exchange instructions grouped into rows.

One op per instruction of the specification's exchange-isa.md, generated from its `device.isa` dataclass
(the one definition of the fields): properties are the assembler operands there (counts are
`events - 1` / `words - 1`, addresses are word addresses), range-checked as there. The
custom syntax is the spec's text form; integers may be written in hex or decimal:

```mlir
exchange.row @rhs_0 address 0x4c000 provenance "graph.gemm %c, block (0, 1)" {
  exchange.send 32, 0x14000, 1
  exchange.delay 0
  exchange.sendpicp 42, 0x14021, 1, 0, xpic = 0x640, pic = 0x15000
}
```

`exchange.row`: a symbol, an optional `address` (byte address of the row's first word) and
an optional `provenance`; its single block holds instruction ops only. With an address the
verifier also checks that the row encodes there (`sendpicp` 8-byte alignment). The shared
rows that `schedule-exchange` adds to the module carry no address: the `tile.exchange` that
uses them holds the slot (`row_address`) and the per-iteration `#tile.patch`es.
All ops are `AssemblyPrintable`: xDSL's `AssemblyPrinter` prints a row as its label and one
spec text line per instruction, with the encoded words as a comment. (`-t ipu-asm` prints
from the package instead, `tools/emit_asm.py`.)
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from dataclasses import astuple
from functools import lru_cache
from typing import ClassVar

from xdsl.backend.assembly_printer import AssemblyPrintable, AssemblyPrinter, OneLineAssemblyPrintable
from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, i64
from xdsl.ir import Block, Dialect, Operation, Region
from xdsl.irdl import IRDLOperation, irdl_op_definition, opt_prop_def, prop_def, region_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from device import isa
from device.target import WORD_BYTES


@lru_cache(maxsize=4096)
def _i64(value: int) -> IntegerAttr:
    """Interned field attributes: rows repeat the same small integers a lot."""
    return IntegerAttr(value, i64)


class InstructionOp(IRDLOperation, OneLineAssemblyPrintable, ABC):
    """Shared behaviour of the seven instruction ops (not itself an op)."""

    ISA_CLASS: ClassVar[type[isa.Instruction]]

    def __init__(self, *args: int, **kwargs: int):
        names = self.field_names()
        values = dict(zip(names, args)) | kwargs
        super().__init__(properties={n: _i64(values[n]) for n in names})

    @classmethod
    def field_names(cls) -> list[str]:
        return list(isa.FIELD_BITS[cls.ISA_CLASS])

    def field_value(self, name: str) -> int:
        attr = self.properties[name]
        assert isinstance(attr, IntegerAttr)
        return attr.value.data

    def to_isa(self) -> isa.Instruction:
        return self.ISA_CLASS(*(self.field_value(n) for n in self.field_names()))

    def verify_(self) -> None:
        instr = self.to_isa()
        for name, value, lo, hi in isa.field_errors(instr):
            raise VerifyException(
                f"{self.name}: field '{name}' = {value} is out of range [{lo}, {hi}]"
                + isa.xpic_immediate_note(instr, name)
            )

    @classmethod
    def parse(cls, parser: Parser) -> InstructionOp:
        values = {}
        for position, name in enumerate(cls.field_names()):
            if position:
                parser.parse_punctuation(",")
            if name in ("xpic", "pic"):
                parser.parse_keyword(name)
                parser.parse_punctuation("=")
            values[name] = parser.parse_integer(allow_boolean=False, context_msg=f" for '{name}'")
        op = cls(**values)
        extra = parser.parse_optional_attr_dict()
        op.attributes |= extra
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" " + isa.format_operands(self.to_isa()))
        printer.print_op_attributes(self.attributes)

    def assembly_line(self) -> str | None:
        instr = self.to_isa()
        words = " ".join(f"{w:08x}" for w in isa.encode_one(instr))
        return AssemblyPrinter.assembly_line(instr.mnemonic, isa.format_operands(instr),
                                             StringAttr(words))


def _instruction_op(isa_class: type[isa.Instruction]) -> type[InstructionOp]:
    """The op of one instruction: an i64 property per field of `isa_class`, named as there."""
    body: dict = {
        "__module__": __name__,
        "__annotations__": {"ISA_CLASS": "ClassVar[type[isa.Instruction]]"},
        "__doc__": f"`{isa_class.mnemonic}`: the op form of `device.isa.{isa_class.__name__}`.",
        "name": f"exchange.{isa_class.mnemonic}",
        "ISA_CLASS": isa_class,
    }
    body |= {field_name: prop_def(IntegerAttr[I64]) for field_name in isa.FIELD_BITS[isa_class]}
    return irdl_op_definition(type(f"{isa_class.__name__}Op", (InstructionOp,), body))


INSTRUCTION_OPS: tuple[type[InstructionOp], ...] = tuple(
    _instruction_op(isa_class) for isa_class in isa.INSTRUCTION_CLASSES
)
DelayOp, DelayPicOp, DelayXpicOp, SendOp, SendOffOp, SendPicOp, SendPicPOp = INSTRUCTION_OPS
OP_BY_ISA: dict[type, type[InstructionOp]] = {op.ISA_CLASS: op for op in INSTRUCTION_OPS}


def op_from_isa(instr: isa.Instruction) -> InstructionOp:
    """The instruction op carrying exactly the fields of `instr`."""
    return OP_BY_ISA[type(instr)](*astuple(instr))


@irdl_op_definition
class RowOp(IRDLOperation, AssemblyPrintable):
    """A row of exchange instructions, placed (optionally) at a byte address."""

    name = "exchange.row"
    sym_name = prop_def(StringAttr)
    address = opt_prop_def(IntegerAttr[I64])
    provenance = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), IsolatedFromAbove(), SymbolOpInterface())

    def __init__(
        self,
        sym_name: str,
        instructions: Sequence[isa.Instruction | Operation] = (),
        address: int | None = None,
        provenance: str | None = None,
    ):
        ops = [i if isinstance(i, Operation) else op_from_isa(i) for i in instructions]
        properties: dict = {"sym_name": StringAttr(sym_name)}
        if address is not None:
            properties["address"] = IntegerAttr(address, i64)
        if provenance is not None:
            properties["provenance"] = StringAttr(provenance)
        super().__init__(properties=properties, regions=[Region(Block(ops))])

    def instructions(self) -> list[isa.Instruction]:
        return [op.to_isa() for op in self.body.block.ops]

    def encode(self, base_address: int | None = None) -> list[int]:
        if base_address is None:
            base_address = self.address.value.data if self.address is not None else 0
        return isa.encode(self.instructions(), base_address)

    def verify_(self) -> None:
        if self.body.block.first_op is None:
            raise VerifyException(
                f"exchange.row @{self.sym_name.data}: a row needs at least one instruction"
            )
        for op in self.body.block.ops:
            if not isinstance(op, InstructionOp):
                raise VerifyException(
                    f"exchange.row @{self.sym_name.data}: '{op.name}' is not an exchange "
                    f"instruction; a row holds only exchange.delay/delaypic/delayxpic/send/"
                    f"sendoff/sendpic/sendpicp"
                )
        if self.address is None:
            return
        address = self.address.value.data
        if address < 0 or address % WORD_BYTES:
            raise VerifyException(
                f"exchange.row @{self.sym_name.data}: address {address:#x} is not a "
                f"{WORD_BYTES}-byte-aligned byte address"
            )
        if any(isa.field_errors(instr) for instr in self.instructions()):
            return  # the instruction's own verifier names the field
        try:
            self.encode(address)
        except isa.EncodeError as error:
            raise VerifyException(f"exchange.row @{self.sym_name.data}: {error}") from error

    @classmethod
    def parse(cls, parser: Parser) -> RowOp:
        sym_name = parser.parse_symbol_name().data
        address = None
        provenance = None
        if parser.parse_optional_keyword("address") is not None:
            address = parser.parse_integer(allow_boolean=False, context_msg=" for the row address")
        if parser.parse_optional_keyword("provenance") is not None:
            provenance = parser.parse_str_literal(" for the row provenance")
        extra = parser.parse_optional_attr_dict_with_keyword()
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        ops = list(region.block.ops)
        for nested in ops:
            nested.detach()
        op = cls(sym_name, ops, address=address, provenance=provenance)
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        if self.address is not None:
            printer.print_string(f" address {self.address.value.data:#x}")
        if self.provenance is not None:
            printer.print_string(" provenance ")
            printer.print_string_literal(self.provenance.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_empty_block=False)

    def print_assembly(self, printer: AssemblyPrinter) -> None:
        # The printer walks nested ops itself: the row prints only its label.
        notes = []
        if self.address is not None:
            notes.append(f"address {self.address.value.data:#x}")
        if self.provenance is not None:
            notes.append(self.provenance.data)
        label = f"{self.sym_name.data}:"
        printer.print_string(
            AssemblyPrinter.append_comment(label, StringAttr("; ".join(notes)) if notes else None)
            + "\n",
            indent=0,
        )


Exchange = Dialect("exchange", [*INSTRUCTION_OPS, RowOp], [])
