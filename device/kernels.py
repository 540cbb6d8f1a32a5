"""The tile-kernel ABI registry: every kernel symbol a package may call.

One entry per symbol says how the supervisor code calls it: the pointer arguments (absolute
byte addresses, in `KernelStep.pointers` order), the scalar arguments (`KernelStep.scalars`
order), what it returns, how it is specialized on the number of rows, and whether an
implementation exists in `device/sources/` and in the executable model (``Implemented``)
or only the intended ABI is fixed (``Required``).

Calling convention [M]: arguments are passed to the worker in a vertex-state record whose
32-bit fields are the pointers then the scalars, in registry order; the supervisor passes
the record's address in ``$m0`` when it ``run``s the worker. Kernels return nothing
(``returns = "void"``); results are the bytes they write through ``out``.

Each entry point in ``device/sources/*.S`` carries ABI comments of the form::

    // ABI: amp_gemm_f16_init(out, left, right; rows) -> void
    // status: Implemented
    // row_specialization: ...

which a test compares with this registry, so the sources and the registry cannot drift.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from device.layouts import block_bytes, panel_bytes
from device.target import WORD_BYTES

IMPLEMENTED = "Implemented"
REQUIRED = "Required"
STATUSES = (IMPLEMENTED, REQUIRED)

SOURCES_DIR = Path(__file__).parent / "sources"


class UnknownKernelError(KeyError):
    """A kernel symbol that the registry does not know."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


@dataclass(frozen=True)
class KernelAbi:
    symbol: str
    pointers: tuple[str, ...]
    scalars: tuple[str, ...]
    returns: str
    row_specialization: str
    status: str
    doc: str
    # Bytes each pointer operand covers, from the scalars by name (Implemented kernels): what
    # the verifier holds against the operand views, so a call cannot run past its buffers.
    footprint: Callable[[Mapping[str, int]], dict[str, int]] | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"kernel {self.symbol}: status '{self.status}' not in {STATUSES}")

    @property
    def implemented(self) -> bool:
        return self.status == IMPLEMENTED

    def accepts_scalar_count(self, count: int) -> bool:
        """Whether a call may pass `count` scalars: today exactly the named ones. Callers ask
        this rather than compare lengths, so a variadic kernel changes only this method."""
        return count == len(self.scalars)

    def signature(self) -> str:
        """The ABI comment line body: ``symbol(p0, p1; s0) -> returns``."""
        pointers, scalars = ", ".join(self.pointers), ", ".join(self.scalars)
        return f"{self.symbol}({pointers}; {scalars}) -> {self.returns}"


# One entry point serves every row count: the 16-row AMP blocks are loop trips inside it.
_GEMM_ROWS = "rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)"


def _gemm_footprint(precision: str) -> Callable[[Mapping[str, int]], dict[str, int]]:
    def footprint(scalars: Mapping[str, int]) -> dict[str, int]:
        panel = panel_bytes(scalars["rows"], precision)
        return {"out": panel, "left": panel, "right": block_bytes(precision)}

    return footprint


def _copy_footprint(scalars: Mapping[str, int]) -> dict[str, int]:
    nbytes = scalars["words"] * WORD_BYTES
    return {"out": nbytes, "src": nbytes}


def _gemm(precision: str, mode: str) -> KernelAbi:
    partials = "FP32 partials, stored FP16" if precision == "f16" else "FP32 throughout"
    effect = "out = left @ right" if mode == "init" else "out += left @ right"
    return KernelAbi(
        symbol=f"amp_gemm_{precision}_{mode}",
        pointers=("out", "left", "right"),
        scalars=("rows",),
        returns="void",
        row_specialization=_GEMM_ROWS,
        status=IMPLEMENTED,
        doc=(
            f"{effect} on the AMP ({precision}, {partials}). left: a 64-column amp_left panel "
            f"of `rows` rows; right: one 64x64 amp_right block; out: a 64-column amp_output "
            f"panel of `rows` rows. Every pointer PACE-aligned (Target.pace_alignment)."
        ),
        footprint=_gemm_footprint(precision),
    )


def _required(symbol: str, pointers, scalars, doc: str, rows: str = "none") -> KernelAbi:
    return KernelAbi(symbol, tuple(pointers), tuple(scalars), "void", rows, REQUIRED, doc)


_ENTRIES: tuple[KernelAbi, ...] = (
    _gemm("f16", "init"),
    _gemm("f16", "accum"),
    _gemm("f32", "init"),
    _gemm("f32", "accum"),
    KernelAbi(
        symbol="copy_words",
        pointers=("out", "src"),
        scalars=("words",),
        returns="void",
        row_specialization="none",
        status=IMPLEMENTED,
        doc="Copy `words` 32-bit words from src to out (tile-local; both word-aligned).",
        footprint=_copy_footprint,
    ),
    # ---- Required: the ABI is fixed, no implementation exists yet ------------------------
    _required("gelu_f16", ("out", "src"), ("elements",),
              "out = gelu(src), exact erf form, f16 row-major elements (FP32 internally)."),
    _required("gelu_f32", ("out", "src"), ("elements",),
              "out = gelu(src), exact erf form, f32 row-major elements."),
    _required("add_broadcast_f16", ("out", "lhs", "rhs"),
              ("rows", "cols", "lhs_row_stride", "lhs_col_stride", "rhs_row_stride",
               "rhs_col_stride"),
              "out[r][c] = lhs[r*lrs + c*lcs] + rhs[r*rrs + c*rcs], f16 row-major out; a "
              "zero stride broadcasts that axis (NumPy broadcasting of a rectangle).",
              rows="rows: any >= 1, one call per output rectangle"),
    _required("add_broadcast_f32", ("out", "lhs", "rhs"),
              ("rows", "cols", "lhs_row_stride", "lhs_col_stride", "rhs_row_stride",
               "rhs_col_stride"),
              "As add_broadcast_f16 with f32 elements.",
              rows="rows: any >= 1, one call per output rectangle"),
    _required("attention_f16", ("out", "query", "key", "value"),
              ("query_rows", "key_rows", "head_dim", "causal", "scale_bits"),
              "out = softmax(scale * query @ key^T [causal mask]) @ value for one head; "
              "scale_bits is the f32 bit pattern of the scale; causal is 0 or 1.",
              rows="query_rows: multiple of 16 (AMP row blocks)"),
    _required("cast_f32_to_f16", ("out", "src"), ("elements",),
              "Round-to-nearest-even f32 -> f16 conversion of `elements` values."),
    _required("cast_f16_to_f32", ("out", "src"), ("elements",),
              "Exact f16 -> f32 conversion of `elements` values."),
    _required("cast_f16_to_f8f143", ("out", "src"), ("elements", "scale"),
              "f16 -> float8_e4m3fnuz codes with value q * 2**scale, saturating at +-240."),
    _required("cast_f8f143_to_f16", ("out", "src"), ("elements", "scale"),
              "float8_e4m3fnuz codes (value q * 2**scale) -> f16."),
    _required("rearrange_rect", ("out", "src"),
              ("rows", "cols", "element_bytes", "src_order", "dst_order"),
              "Repack one rows x cols rectangle between element orders (device.layouts "
              "ORDERS index); element_bytes is 1, 2 or 4.",
              rows="rows: multiple of 64 for amp_right, of 1 otherwise"),
)

KERNELS: dict[str, KernelAbi] = {abi.symbol: abi for abi in _ENTRIES}


def get_kernel(symbol: str) -> KernelAbi:
    try:
        return KERNELS[symbol]
    except KeyError:
        raise UnknownKernelError(
            f"unknown kernel symbol '{symbol}'; the ABI registry (device/kernels.py) knows: "
            f"{', '.join(sorted(KERNELS))}"
        ) from None


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
