"""What a kernel's ABI is: `KernelAbi`, its footprint rules, and the ABI comments of the
`.S` sources. Which kernels exist is the kernel table's business (`device/kernels.py`, one
`Kernel` record per symbol); this module knows no kernel.

One ABI says how the supervisor code calls a symbol: the pointer arguments (absolute byte
addresses, in `KernelStep.pointers` order), the scalar arguments (`KernelStep.scalars`
order), what it returns, how it is specialized on the number of rows, and whether an
implementation exists in `device/sources/` and in the executable model (``Implemented``)
or only the intended ABI is fixed (``Required``).

Calling convention [M]: arguments are passed to the worker in a vertex-state record whose
32-bit fields are the pointers then the scalars, in ABI order (`KernelAbi.fields`); the
supervisor passes the record's address in ``$m0`` when it ``run``s the worker. Kernels
return nothing (``returns = "void"``); results are the bytes they write through ``out``.

Variadic scalars. A scalar list ending in a name with ``...`` (``descriptor...``) takes any
number of trailing words after the named ones. The non-GEMM kernels use it for their
operands' format descriptors (`device.shard_geometry`, `ShardGeometry.encode`): ONE
DESCRIPTOR PER POINTER OPERAND, IN POINTER ORDER, after the named scalars. Such a kernel is
specialized on its operands' formats, as a Poplar codelet is templated on types, and finds
its own shard from the tile it runs on (`ShardGeometry.shard_box`). Its footprints are the
shard bytes of the decoded descriptors.

Each entry point in ``device/sources/*.S`` carries ABI comments of the form::

    // ABI: amp_gemm_f16_init(out, left, right; rows) -> void
    // status: Implemented
    // row_specialization: ...

and loads each named field of its record with ``ld32 $mN, $m0, $m15, <index>  // <name>``;
test/pytest/test_kernels.py compares both with every record, so the sources and the table
cannot drift.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from device.index_views import IndexView
from device.shard_geometry import ShardGeometry, decode_descriptor, decode_descriptors
from device.target import WORD_BYTES

IMPLEMENTED = "Implemented"
REQUIRED = "Required"
STATUSES = (IMPLEMENTED, REQUIRED)

SOURCES_DIR = Path(__file__).parent / "sources"
VARIADIC_SUFFIX = "..."

# footprint(named scalars, variadic words) -> bytes per pointer name; raises ValueError for
# scalars that give no valid footprint (a negative count, a malformed descriptor).
Footprint = Callable[[Mapping[str, int], tuple[int, ...]], dict[str, int]]


@dataclass(frozen=True)
class KernelAbi:
    symbol: str
    pointers: tuple[str, ...]
    scalars: tuple[str, ...]
    returns: str
    row_specialization: str
    status: str
    doc: str
    # Bytes each pointer operand covers, from the scalars (Implemented kernels): what the
    # verifier holds against the operand views, so a call cannot run past its buffers.
    footprint: Footprint | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"kernel {self.symbol}: status '{self.status}' not in {STATUSES}")

    @property
    def implemented(self) -> bool:
        return self.status == IMPLEMENTED

    @property
    def variadic(self) -> bool:
        """The last scalar name ends with ``...``: any number of trailing words."""
        return bool(self.scalars) and self.scalars[-1].endswith(VARIADIC_SUFFIX)

    @property
    def named_scalars(self) -> tuple[str, ...]:
        return self.scalars[:-1] if self.variadic else self.scalars

    @property
    def fields(self) -> tuple[str, ...]:
        """The named fields of the vertex-state record, in order: pointers, named scalars."""
        return (*self.pointers, *self.named_scalars)

    def accepts_scalars(self, count: int) -> bool:
        fixed = len(self.named_scalars)
        return count >= fixed if self.variadic else count == fixed

    def split_scalars(self, values: Sequence[int]) -> tuple[dict[str, int], tuple[int, ...]]:
        """(named scalars by name, variadic words) of a call whose count `accepts_scalars`."""
        values = [int(v) for v in values]
        fixed = len(self.named_scalars)
        return dict(zip(self.named_scalars, values[:fixed], strict=True)), tuple(values[fixed:])

    def footprint_of(self, values: Sequence[int]) -> dict[str, int] | None:
        """Bytes per pointer of a call with these scalars (None without a footprint rule);
        ValueError for scalars that give none."""
        if self.footprint is None:
            return None
        return self.footprint(*self.split_scalars(values))

    def accepts_scalar_count(self, count: int) -> bool:
        """Whether a call may pass `count` scalars (the package schema asks this)."""
        return self.accepts_scalars(count)

    def signature(self) -> str:
        """The ABI comment line body: ``symbol(p0, p1; s0) -> returns``."""
        pointers, scalars = ", ".join(self.pointers), ", ".join(self.scalars)
        return f"{self.symbol}({pointers}; {scalars}) -> {self.returns}"


# A descriptor kernel has one entry for every format: it is specialized at run time.
BY_DESCRIPTOR = "none: one entry for all formats (one descriptor per pointer, in order)"
# View kernels: the variadic words are out's and the source's descriptors, then the index view.
BY_VIEW = "none: one entry for all formats and views (two descriptors, then the index view)"
DESCRIPTORS = "descriptor" + VARIADIC_SUFFIX


def non_negative(scalars: Mapping[str, int], *names: str) -> None:
    """ValueError for a named scalar below zero (a footprint rule's first check)."""
    for name in names:
        if scalars[name] < 0:
            raise ValueError(f"scalar '{name}' = {scalars[name]} must be >= 0")


def words_abi(symbol: str, pointers: tuple[str, ...], doc: str) -> KernelAbi:
    """A kernel of `words` 32-bit words at each pointer (no row specialization)."""
    def footprint(scalars: Mapping[str, int], _: tuple[int, ...]) -> dict[str, int]:
        non_negative(scalars, "words")
        return dict.fromkeys(pointers, scalars["words"] * WORD_BYTES)

    return KernelAbi(symbol, pointers, ("words",), "void", "none", IMPLEMENTED, doc, footprint)


def described(symbol: str, pointers: tuple[str, ...], named: tuple[str, ...], doc: str,
              checked: tuple[str, ...] = ()) -> KernelAbi:
    """A descriptor kernel: the named scalars, then one descriptor per pointer; each
    pointer covers its descriptor's shard bytes (`checked` scalars must be >= 0)."""
    def footprint(scalars: Mapping[str, int], words: tuple[int, ...]) -> dict[str, int]:
        non_negative(scalars, *checked)
        geometries = decode_descriptors(words, len(pointers))
        return {name: g.shard_bytes() for name, g in zip(pointers, geometries, strict=True)}

    return KernelAbi(symbol, pointers, (*named, DESCRIPTORS), "void", BY_DESCRIPTOR,
                     IMPLEMENTED, doc, footprint)


def split_view_words(words: tuple[int, ...]) -> tuple[ShardGeometry, ShardGeometry, IndexView]:
    """(out, source, view) of a view kernel's variadic words: the two descriptors, then the
    index view (`device.index_views`); DescriptorError for malformed words."""
    out, position = decode_descriptor(words, 0)
    src, position = decode_descriptor(words, position)
    return out, src, IndexView.decode(tuple(words[position:]), out, src)


def viewed(symbol: str, pointers: tuple[str, ...], named: tuple[str, ...], doc: str,
           checked: tuple[str, ...] = ()) -> KernelAbi:
    """A view kernel: the named scalars, out's and the source's descriptors, the index view."""
    def footprint(scalars: Mapping[str, int], words: tuple[int, ...]) -> dict[str, int]:
        non_negative(scalars, *checked)
        out, src, _ = split_view_words(words)
        return {pointers[0]: out.shard_bytes(), pointers[1]: src.shard_bytes()}

    return KernelAbi(symbol, pointers, (*named, DESCRIPTORS), "void", BY_VIEW, IMPLEMENTED,
                     doc, footprint)


# ---- the ABI comments of device/sources/*.S ---------------------------------------------

_ABI_LINE = re.compile(r"^\s*//\s*ABI:\s*(\w+)\(([^;)]*);([^)]*)\)\s*->\s*(\w+)\s*$")
_FIELD_LINE = re.compile(r"^\s*//\s*(status|row_specialization):\s*(.*?)\s*$")


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def parse_source_abis(text: str, origin: str = "<source>") -> list[KernelAbi]:
    """The ABI comments of one assembly source, as `KernelAbi`s (doc = origin)."""
    found: list[KernelAbi] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = _ABI_LINE.match(line)
        if not match:
            continue
        fields: dict[str, str] = {}
        for follow in lines[index + 1:]:
            field = _FIELD_LINE.match(follow)
            if not field:
                break
            fields[field.group(1)] = field.group(2)
        symbol = match.group(1)
        if "status" not in fields:
            raise ValueError(f"{origin}: ABI comment of '{symbol}' has no 'status:' line")
        found.append(KernelAbi(
            symbol, _names(match.group(2)), _names(match.group(3)), match.group(4),
            fields.get("row_specialization", ""), fields["status"], origin,
        ))
    return found


def source_abis(directory: Path = SOURCES_DIR) -> dict[str, KernelAbi]:
    """Every ABI comment under `directory`, by symbol; a symbol declared twice is an error."""
    result: dict[str, KernelAbi] = {}
    for path in sorted(directory.glob("*.S")):
        for abi in parse_source_abis(path.read_text(), path.name):
            if abi.symbol in result:
                raise ValueError(
                    f"kernel '{abi.symbol}' declared in both {result[abi.symbol].doc} and "
                    f"{path.name}"
                )
            result[abi.symbol] = abi
    return result


_FIELD_LOAD = re.compile(r"^\s*ld32\s+\$\w+,\s*\$m0,\s*\$m15,\s*(\d+)\s*//\s*(\w+)")
_BRANCH = re.compile(r"^\s*bri\s+(\.L\w+)\s*$")


def _entry_loads(lines: list[str], symbol: str, origin: str) -> tuple[str, ...]:
    """The vertex-state fields entry point `symbol` loads, by index: from its label to its
    `.size`, following an unconditional `bri` into a body it shares with another entry."""
    labels = {line.split(":")[0]: index for index, line in enumerate(lines)
              if re.match(r"^\.?\w+:", line)}
    if symbol not in labels:
        raise ValueError(f"{origin}: no label '{symbol}:'")
    loads: dict[int, str] = {}
    index = labels[symbol] + 1
    while index < len(lines) and not lines[index].lstrip().startswith((".size", "exitz")):
        if load := _FIELD_LOAD.match(lines[index]):
            loads.setdefault(int(load.group(1)), load.group(2))
        if (branch := _BRANCH.match(lines[index])) and branch.group(1) in labels:
            index = labels[branch.group(1)]
        index += 1
    if sorted(loads) != list(range(len(loads))):
        raise ValueError(f"{origin}: '{symbol}' loads record fields {sorted(loads)}, not "
                         f"0..{len(loads) - 1}")
    return tuple(loads[i] for i in range(len(loads)))


def source_fields(directory: Path = SOURCES_DIR) -> dict[str, tuple[str, ...]]:
    """Per exported entry point of `directory`'s sources, the names of the vertex-state
    fields it loads from ``$m0`` (``ld32 $mN, $m0, $m15, <index>  // <name>``), by index."""
    result: dict[str, tuple[str, ...]] = {}
    for path in sorted(directory.glob("*.S")):
        lines = path.read_text().splitlines()
        for symbol in re.findall(r"^\s*\.globl\s+(\w+)", "\n".join(lines), re.M):
            result[symbol] = _entry_loads(lines, symbol, path.name)
    return result
