"""The IPU21 supervisor exchange instructions: fields, encoder, decoder, text form.

The contract is the specification's exchange-isa.md ("Recovered encodings"). Every dataclass
field is an *assembler operand* of the spec, stored exactly as encoded: counts are
`events - 1` / `words - 1`, addresses are tile-memory *word* addresses.

Field ranges are the widths of the spec's bit masks. The `bits` of each dataclass field below
is their one definition; this table restates them for readers (test_isa checks it):

| instruction | fields (bits) |
|---|---|
| `delay`     | events_m1 (19) |
| `delaypic`  | events_m1 (7), selector (1), value (18) |
| `delayxpic` | events_m1 (12), selector (1), value (13) |
| `send`      | words_m1 (6), address (18), sctl (3) |
| `sendoff`   | words_m1 (12: low 6 at 21..26, high 6 at 14..19), delta (11), sctl (3) |
| `sendpic`   | words_m1 (6), selector (2), value (18; 13 for the XPIC selectors 0 and 1) |
| `sendpicp`  | words_m1 (6), address (18), sctl (3), pic_selector (1); inline xpic (14), pic (18) |

The spec says an XPIC immediate carried by `sendpic` is only 13 bits although the field is
18 bits wide; we therefore treat bits 13..17 of a `sendpic` with selector 0 or 1 as reserved:
the encoder rejects such values and the decoder reports the word.

Opcode space and ambiguity. The fixed bits of the formulas are
`delay` = `0x40a00000` under mask `0xfff80000`, `delaypic` = `0x60000000` and
`delayxpic` = `0x64000000` under `0xfc000000`, `send` = `0x78000000` under `0xf8000000`,
`sendoff`/`sendpic` = `0x70000000` under `0xf8000000`, `sendpicp` = `0xf0000000` under
`0xf0000000`. The only overlapping pair is `sendoff`/`sendpic`: `0x70100000` (a `sendpic`
with all fields zero) also matches the `sendoff` prefix. No `sendoff` field reaches bit 20
(words high bits stop at 19, delta at 13), so bit 20 is the discriminator: set means
`sendpic`, clear means `sendoff`. With that rule and the reserved-bit checks every word has
at most one meaning, every field bit is significant, and `decode` is the exact inverse of
`encode` on every valid instruction (and `encode(decode(w)) == w` for every decodable `w`).

Field values and words must be integers (Python or NumPy, never `bool` or `float`): anything
else is an `EncodeError` naming the instruction and field, or a `DecodeError` naming the word
index. `sendpicp`'s 14-bit XPIC configuration and every selector are encoded and decoded as
the hardware holds them; which selectors have a defined meaning is the timeline's business
(`device.exchange_timeline` rejects the undefined ones).

`sendpicp` is a two-word instruction that must start at an 8-byte-aligned byte address; its
second (inline) word is `xpic << 18 | pic` and is never decoded on its own.
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np
from xdsl.utils.exceptions import DiagnosticException

from device.target import WORD_BYTES

# ---- field widths (bits), from the spec's masks -------------------------------------------
DELAY_EVENTS_BITS = 19
DELAYPIC_EVENTS_BITS = 7
DELAYXPIC_EVENTS_BITS = 12
SEND_WORDS_BITS = 6
SENDOFF_WORDS_BITS = 12
SENDOFF_DELTA_BITS = 11
ADDRESS_BITS = 18
SCTL_BITS = 3
PIC_VALUE_BITS = 18
XPIC_VALUE_BITS = 13
# A sendpicp is an aligned two-word instruction: it starts at an 8-byte boundary.
SENDPICP_ALIGNMENT = 8
XPIC_CONFIG_BITS = 14

# sctl bits: two direction enables and the 64-bit item flag.
SCTL_DIRECTION_MASK = 0b011
SCTL_64BIT = 0b100


class EncodeError(DiagnosticException, ValueError):
    """An instruction field does not fit its encoding (or a placement rule is broken)."""


class DecodeError(DiagnosticException, ValueError):
    """Word `index` of a row cannot be decoded; `reason` says why."""

    def __init__(self, index: int, word, reason: str):
        self.index = index
        self.word = word
        self.reason = reason
        shown = f"{word:#010x}" if is_integer(word) else repr(word)
        super().__init__(f"word {index} ({shown}): {reason}")


def is_integer(value) -> bool:
    """An integer field value or word: Python or NumPy integers, but not `bool`.

    A bool is an `int` subclass, but `Delay(True)` is a mistake, not an instruction.
    """
    if type(value) is int:  # the common case, without the ABC check
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


# ---- instructions ------------------------------------------------------------------------
# Each instruction is a dataclass whose fields are the spec's operands in operand order; a
# field's `bits` metadata is its encoding width. This is the one definition of the fields:
# `FIELD_BITS`, the range checks and the `exchange` dialect's ops are derived from it.
def _bits(width: int) -> Any:
    """A dataclass field `width` bits wide in the encoding."""
    return field(metadata={"bits": width})


class _Instruction:
    """What every instruction shares: its first operand is its count (events or words) - 1."""

    __slots__ = ()
    __match_args__: ClassVar[tuple[str, ...]]  # the operands, in order (from @dataclass)
    mnemonic: ClassVar[str]
    words: ClassVar[int] = 1  # encoded words

    @property
    def events(self) -> int:
        return getattr(self, self.__match_args__[0]) + 1


@dataclass(frozen=True, slots=True)
class Delay(_Instruction):
    events_m1: int = _bits(DELAY_EVENTS_BITS)
    mnemonic = "delay"


@dataclass(frozen=True, slots=True)
class DelayPic(_Instruction):
    events_m1: int = _bits(DELAYPIC_EVENTS_BITS)
    selector: int = _bits(1)
    value: int = _bits(PIC_VALUE_BITS)
    mnemonic = "delaypic"


@dataclass(frozen=True, slots=True)
class DelayXpic(_Instruction):
    events_m1: int = _bits(DELAYXPIC_EVENTS_BITS)
    selector: int = _bits(1)
    value: int = _bits(XPIC_VALUE_BITS)
    mnemonic = "delayxpic"


@dataclass(frozen=True, slots=True)
class Send(_Instruction):
    words_m1: int = _bits(SEND_WORDS_BITS)
    address: int = _bits(ADDRESS_BITS)
    sctl: int = _bits(SCTL_BITS)
    mnemonic = "send"


@dataclass(frozen=True, slots=True)
class SendOff(_Instruction):
    words_m1: int = _bits(SENDOFF_WORDS_BITS)
    delta: int = _bits(SENDOFF_DELTA_BITS)
    sctl: int = _bits(SCTL_BITS)
    mnemonic = "sendoff"


@dataclass(frozen=True, slots=True)
class SendPic(_Instruction):
    words_m1: int = _bits(SEND_WORDS_BITS)
    selector: int = _bits(2)
    value: int = _bits(PIC_VALUE_BITS)
    mnemonic = "sendpic"


@dataclass(frozen=True, slots=True)
class SendPicP(_Instruction):
    words_m1: int = _bits(SEND_WORDS_BITS)
    address: int = _bits(ADDRESS_BITS)
    sctl: int = _bits(SCTL_BITS)
    pic_selector: int = _bits(1)
    xpic: int = _bits(XPIC_CONFIG_BITS)
    pic: int = _bits(PIC_VALUE_BITS)
    mnemonic = "sendpicp"
    words = 2


Instruction = Delay | DelayPic | DelayXpic | Send | SendOff | SendPic | SendPicP
INSTRUCTION_CLASSES: tuple[type[Instruction], ...] = (
    Delay, DelayPic, DelayXpic, Send, SendOff, SendPic, SendPicP,
)
BY_MNEMONIC: dict[str, type[Instruction]] = {cls.mnemonic: cls for cls in INSTRUCTION_CLASSES}

# Width in bits of every field, per instruction class, in operand order.
FIELD_BITS: dict[type, dict[str, int]] = {
    cls: {f.name: f.metadata["bits"] for f in fields(cls)} for cls in INSTRUCTION_CLASSES
}


def max_count(cls: type[Instruction]) -> int:
    """The largest count (events or words) an instruction encodes: its first field + 1."""
    return 1 << next(iter(FIELD_BITS[cls].values()))


def is_xpic_immediate(instr: Instruction | None, field_name: str) -> bool:
    """`sendpic`'s value with an XPIC selector (0 or 1): 13 bits in an 18-bit field."""
    return (isinstance(instr, SendPic) and field_name == "value"
            and is_integer(instr.selector) and instr.selector in (0, 1))


def xpic_immediate_note(instr: Instruction, field_name: str) -> str:
    """The diagnostic's explanation of a `sendpic` value out of its 13-bit XPIC range."""
    return " (an XPIC immediate in sendpic is 13 bits)" if is_xpic_immediate(instr, field_name) else ""


def field_range(cls: type, field_name: str, instr: Instruction | None = None) -> tuple[int, int]:
    """Inclusive [lo, hi] of a field; `sendpic`'s value narrows to 13 bits for XPIC selectors."""
    bits = FIELD_BITS[cls][field_name]
    if cls is SendPic and is_xpic_immediate(instr, field_name):
        bits = XPIC_VALUE_BITS
    return 0, (1 << bits) - 1


def field_errors(instr: Instruction) -> list[tuple[str, int, int, int]]:
    """Every out-of-range field as (field, value, lo, hi); empty when the instruction encodes."""
    errors = []
    for name in FIELD_BITS[type(instr)]:
        value = getattr(instr, name)
        lo, hi = field_range(type(instr), name, instr)
        if not is_integer(value) or not lo <= value <= hi:
            errors.append((name, value, lo, hi))
    return errors


def check_fields(instr: Instruction) -> None:
    """Raise `EncodeError` for the first field of `instr` outside its encoding range."""
    if type(instr) not in FIELD_BITS:
        raise EncodeError(f"{instr!r} is not an exchange instruction")
    errors = field_errors(instr)
    if errors:
        name, value, lo, hi = errors[0]
        if not is_integer(value):
            raise EncodeError(
                f"{format_instruction(instr)}: field '{name}' = {value!r} is not an integer "
                f"(a {type(value).__name__})"
            )
        raise EncodeError(
            f"{format_instruction(instr)}: field '{name}' = {value} is out of range "
            f"[{lo}, {hi:#x}]{xpic_immediate_note(instr, name)}"
        )


# ---- encoder -----------------------------------------------------------------------------
def encode_one(instr: Instruction) -> tuple[int, ...]:
    """The word(s) of one instruction (fields are checked; alignment is the row's business).
    Once per instruction and field types (a row's delays and sends recur across the rows of
    a program; `5.0` equals `5` but is refused, so the types are part of the key)."""
    key = (instr, *(type(getattr(instr, name)) for name in FIELD_BITS.get(type(instr), ())))
    words = ENCODED.get(key)
    if words is None:
        words = encoded_fields(instr)
        if len(ENCODED) >= ENCODED_INSTRUCTIONS:
            ENCODED.clear()
        ENCODED[key] = words
    return words


# Instructions encoded before (`encode_one`); bounded: emptied when full.
ENCODED: dict[tuple, tuple[int, ...]] = {}
ENCODED_INSTRUCTIONS = 1 << 16


def encoded_fields(instr: Instruction) -> tuple[int, ...]:
    """`encode_one`'s work: check the fields, then pack them."""
    check_fields(instr)
    # Plain ints from here: a NumPy field (e.g. uint8) would wrap silently when shifted.
    instr = type(instr)(*(int(getattr(instr, name)) for name in FIELD_BITS[type(instr)]))
    match instr:
        case Delay(n):
            return (0x40A00000 | n,)
        case DelayPic(n, sel, value):
            return (0x60000000 | (n << 19) | (sel << 18) | value,)
        case DelayXpic(n, sel, value):
            return (0x64000000 | (n << 14) | (sel << 13) | value,)
        case Send(n, address, sctl):
            return (0x78000000 | (n << 21) | (address << 3) | sctl,)
        case SendOff(n, delta, sctl):
            low, high = n & 0x3F, n >> 6
            return (0x70000000 | (low << 21) | (high << 14) | (delta << 3) | sctl,)
        case SendPic(n, sel, value):
            return (0x70100000 | (n << 21) | (sel << 18) | value,)
        case SendPicP(n, address, sctl, pic_sel, xpic, pic):
            prefix = 0xF0000000 | (pic_sel << 27) | (n << 21) | (address << 3) | sctl
            return (prefix, (xpic << 18) | pic)
    raise EncodeError(f"{instr!r} is not an exchange instruction")


def encode(instrs: list[Instruction] | tuple[Instruction, ...], base_address: int = 0) -> list[int]:
    """Encode a row placed at byte address `base_address`."""
    if base_address % WORD_BYTES:
        raise EncodeError(f"row address {base_address:#x} is not {WORD_BYTES}-byte aligned")
    words: list[int] = []
    for instr in instrs:
        byte_address = base_address + WORD_BYTES * len(words)
        if isinstance(instr, SendPicP) and byte_address % SENDPICP_ALIGNMENT:
            raise EncodeError(
                f"{format_instruction(instr)}: sendpicp would start at byte address "
                f"{byte_address:#x}, which is not {SENDPICP_ALIGNMENT}-byte aligned (insert a one-word "
                f"instruction before it or move the row)"
            )
        words.extend(encode_one(instr))
    return words


# ---- decoder -----------------------------------------------------------------------------
def _decode_delay(word: int) -> Delay | str:
    if word & 0xFFF80000 != 0x40A00000:
        return "unknown opcode"
    return Delay(word & 0x7FFFF)


def _decode_delaypic(word: int) -> DelayPic:
    return DelayPic((word >> 19) & 0x7F, (word >> 18) & 1, word & 0x3FFFF)


def _decode_delayxpic(word: int) -> DelayXpic:
    return DelayXpic((word >> 14) & 0xFFF, (word >> 13) & 1, word & 0x1FFF)


def _decode_send(word: int) -> Send:
    return Send((word >> 21) & 0x3F, (word >> 3) & 0x3FFFF, word & 7)


def _decode_sendoff_or_sendpic(word: int) -> SendOff | SendPic | str:
    if word & 0x00100000:
        selector = (word >> 18) & 3
        value = word & 0x3FFFF
        if selector < 2 and value > 0x1FFF:
            return (
                f"reserved bits set: sendpic XPIC selector {selector} carries a 13-bit "
                f"value, got {value:#x}"
            )
        return SendPic((word >> 21) & 0x3F, selector, value)
    words_m1 = ((word >> 21) & 0x3F) | (((word >> 14) & 0x3F) << 6)
    return SendOff(words_m1, (word >> 3) & 0x7FF, word & 7)


# Dispatch on the top 6 bits: each entry decodes a one-word instruction or returns a reason.
_TOP6: list = [None] * 64
_TOP6[0x40 >> 2] = _decode_delay  # 0x40..0x43: only 0x40a.. is valid
_TOP6[0x60 >> 2] = _decode_delaypic
_TOP6[0x64 >> 2] = _decode_delayxpic
_TOP6[0x70 >> 2] = _decode_sendoff_or_sendpic
_TOP6[0x74 >> 2] = _decode_sendoff_or_sendpic
_TOP6[0x78 >> 2] = _decode_send
_TOP6[0x7C >> 2] = _decode_send
_SENDPICP = object()
for _top in range(0x3C, 0x40):  # 0xf0..0xff
    _TOP6[_top] = _SENDPICP


def _word_at(words, index: int) -> int:
    """`words[index]` as a plain int; anything but a 32-bit integer is a `DecodeError`."""
    word = words[index]
    if not is_integer(word):
        raise DecodeError(index, word, f"{word!r} is not an integer word "
                                       f"(a {type(word).__name__})")
    word = int(word)
    if not 0 <= word <= 0xFFFFFFFF:
        raise DecodeError(index, word & 0xFFFFFFFF, f"{word} is not a 32-bit word")
    return word


def decode_at(words, index: int, byte_address: int) -> Instruction:
    """Decode the instruction starting at `words[index]`, placed at `byte_address`."""
    word = _word_at(words, index)
    handler = _TOP6[word >> 26]
    if handler is None:
        raise DecodeError(index, word, "unknown opcode")
    if handler is _SENDPICP:
        if byte_address % SENDPICP_ALIGNMENT:
            raise DecodeError(
                index, word,
                f"sendpicp at byte address {byte_address:#x} is not {SENDPICP_ALIGNMENT}-byte aligned",
            )
        if index + 1 >= len(words):
            raise DecodeError(index, word, "sendpicp is missing its inline word")
        inline = _word_at(words, index + 1)
        return SendPicP(
            (word >> 21) & 0x3F,
            (word >> 3) & 0x3FFFF,
            word & 7,
            (word >> 27) & 1,
            inline >> 18,
            inline & 0x3FFFF,
        )
    result = handler(word)
    if isinstance(result, str):
        raise DecodeError(index, word, result)
    return result


def decode(words, base_address: int = 0) -> list[Instruction]:
    """Decode a whole row placed at byte address `base_address`."""
    if base_address % WORD_BYTES:
        raise DecodeError(0, words[0] if len(words) else 0,
                          f"row address {base_address:#x} is not {WORD_BYTES}-byte aligned")
    instrs: list[Instruction] = []
    index = 0
    count = len(words)
    while index < count:
        instr = decode_at(words, index, base_address + WORD_BYTES * index)
        instrs.append(instr)
        index += instr.words
    return instrs


# ---- text form ---------------------------------------------------------------------------
# Fields printed in hex (addresses and control values); counts and selectors in decimal.
HEX_FIELDS = frozenset({"address", "value", "delta", "xpic", "pic"})


def format_field(name: str, value: int) -> str:
    if not is_integer(value):  # only in diagnostics about the bad field itself
        return repr(value)
    return f"{int(value):#x}" if name in HEX_FIELDS else str(int(value))


def format_operands(instr: Instruction) -> str:
    """The spec's operand text: `42, 0x14021, 1, 0, xpic = 0x640, pic = 0x15000`."""
    parts = []
    for f in fields(instr):
        text = format_field(f.name, getattr(instr, f.name))
        parts.append(f"{f.name} = {text}" if f.name in ("xpic", "pic") else text)
    return ", ".join(parts)


def format_instruction(instr: Instruction) -> str:
    return f"{instr.mnemonic} {format_operands(instr)}"


class AsmSyntaxError(DiagnosticException, ValueError):
    """A line of exchange assembly text cannot be read."""


_INT = r"[+-]?(?:0[xX][0-9a-fA-F]+|[0-9]+)"


def parse_instruction(text: str) -> Instruction:
    """Inverse of `format_instruction` (any integer may be hex or decimal)."""
    text = text.strip()
    mnemonic, _, rest = text.partition(" ")
    cls = BY_MNEMONIC.get(mnemonic)
    if cls is None:
        raise AsmSyntaxError(f"unknown mnemonic '{mnemonic}' in '{text}'")
    names = [f.name for f in fields(cls)]
    operands = [part.strip() for part in rest.split(",")] if rest.strip() else []
    if len(operands) != len(names):
        raise AsmSyntaxError(
            f"'{text}': {mnemonic} takes {len(names)} operands ({', '.join(names)}), "
            f"got {len(operands)}"
        )
    values = {}
    for name, operand in zip(names, operands):
        if name in ("xpic", "pic"):
            match = re.fullmatch(rf"{name}\s*=\s*({_INT})", operand)
            if match is None:
                raise AsmSyntaxError(f"'{text}': expected '{name} = <integer>', got '{operand}'")
            operand = match.group(1)
        elif re.fullmatch(_INT, operand) is None:
            raise AsmSyntaxError(f"'{text}': operand '{name}' is not an integer: '{operand}'")
        values[name] = _parse_int(text, name, operand)
    return cls(**values)


def _parse_int(text: str, name: str, operand: str) -> int:
    try:
        return int(operand, 0)
    except ValueError:
        # e.g. `042`: Python (and we) give leading-zero decimals no meaning
        raise AsmSyntaxError(
            f"'{text}': operand '{name}' is not an integer: '{operand}' (a decimal "
            f"integer has no leading zeros; write hex as 0x...)"
        ) from None
