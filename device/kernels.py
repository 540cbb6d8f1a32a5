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

which a test compares with this registry, so the sources and the registry cannot drift.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from device.index_views import IndexView
from device.layouts import block_bytes, panel_bytes
from device.shard_geometry import ShardGeometry, decode_descriptor, decode_descriptors
from device.target import WORD_BYTES, Precision

IMPLEMENTED = "Implemented"
REQUIRED = "Required"
STATUSES = (IMPLEMENTED, REQUIRED)

SOURCES_DIR = Path(__file__).parent / "sources"
VARIADIC_SUFFIX = "..."

# footprint(named scalars, variadic words) -> bytes per pointer name; raises ValueError for
# scalars that give no valid footprint (a negative count, a malformed descriptor).
Footprint = Callable[[Mapping[str, int], tuple[int, ...]], dict[str, int]]


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


# One entry point serves every row count: the 16-row AMP blocks are loop trips inside it.
_GEMM_ROWS = "rows >= 1, one entry for all row counts (16-row AMP blocks looped inside)"
# A descriptor kernel has one entry for every format: it is specialized at run time.
_BY_DESCRIPTOR = "none: one entry for all formats (one descriptor per pointer, in order)"
DESCRIPTORS = "descriptor" + VARIADIC_SUFFIX


def _non_negative(scalars: Mapping[str, int], *names: str) -> None:
    for name in names:
        if scalars[name] < 0:
            raise ValueError(f"scalar '{name}' = {scalars[name]} must be >= 0")


def _gemm_footprint(precision: str, out_precision: str | None = None) -> Footprint:
    # FP8 inputs give FP16 partials: the output panel is f16.
    if out_precision is None:
        out_precision = Precision.F16 if precision == Precision.F8F143 else precision

    def footprint(scalars: Mapping[str, int], _: tuple[int, ...]) -> dict[str, int]:
        _non_negative(scalars, "rows")
        rows = scalars["rows"]
        return {"out": panel_bytes(rows, out_precision), "left": panel_bytes(rows, precision),
                "right": block_bytes(precision)}

    return footprint


def _words_footprint(*pointers: str) -> Footprint:
    def footprint(scalars: Mapping[str, int], _: tuple[int, ...]) -> dict[str, int]:
        _non_negative(scalars, "words")
        return dict.fromkeys(pointers, scalars["words"] * WORD_BYTES)

    return footprint


def _descriptor_footprint(pointers: tuple[str, ...], *checked: str) -> Footprint:
    """Shard bytes of each pointer's descriptor (one per pointer, in pointer order)."""
    def footprint(scalars: Mapping[str, int], words: tuple[int, ...]) -> dict[str, int]:
        _non_negative(scalars, *checked)
        geometries = decode_descriptors(words, len(pointers))
        return {name: g.shard_bytes() for name, g in zip(pointers, geometries, strict=True)}

    return footprint


def split_view_words(words: tuple[int, ...]) -> tuple[ShardGeometry, ShardGeometry, IndexView]:
    """(out, source, view) of a view kernel's variadic words: the two descriptors, then the
    index view (`device.index_views`); DescriptorError for malformed words."""
    out, position = decode_descriptor(words, 0)
    src, position = decode_descriptor(words, position)
    return out, src, IndexView.decode(tuple(words[position:]), out, src)


def _view_footprint(pointers: tuple[str, ...], *checked: str) -> Footprint:
    def footprint(scalars: Mapping[str, int], words: tuple[int, ...]) -> dict[str, int]:
        _non_negative(scalars, *checked)
        out, src, _ = split_view_words(words)
        return {pointers[0]: out.shard_bytes(), pointers[1]: src.shard_bytes()}

    return footprint


def _gemm_f32_partials(mode: str) -> KernelAbi:
    """FP16 inputs, FP32 partials kept in an f32 output panel across calls (the GEMM
    accumulates all of K in FP32 and rounds to FP16 once, with `convert_shard`)."""
    effect = "out = left @ right" if mode == "init" else "out += left @ right"
    return KernelAbi(
        symbol=f"amp_gemm_f16p32_{mode}",
        pointers=("out", "left", "right"),
        scalars=("rows",),
        returns="void",
        row_specialization=_GEMM_ROWS,
        status=IMPLEMENTED,
        doc=(
            f"{effect} on the AMP (f16 inputs), FP32 partials stored FP32: left: a 64-column "
            "f16 amp_left panel of `rows` rows; right: one 64x64 f16 amp_right block; out: a "
            "64-column f32 amp_output panel of `rows` rows (the partial sums, never rounded "
            "to FP16). Every pointer PACE-aligned (Target.pace_alignment)."
        ),
        footprint=_gemm_footprint(Precision.F16, Precision.F32),
    )


def _gemm(precision: Precision, mode: str) -> KernelAbi:
    partials = {Precision.F16: "FP32 partials, stored FP16", Precision.F32: "FP32 throughout",
                Precision.F8F143: "FP16 partials"}[precision]
    effect = "out = left @ right" if mode == "init" else "out += left @ right"
    scalars: tuple[str, ...] = ("rows",)
    operands = f"({precision})"
    if precision == Precision.F8F143:
        scalars = ("rows", "left_scale", "right_scale", "out_scale")
        operands = ("(float8_e4m3fnuz codes, value q * 2**scale; the output panel is f16 "
                    "partials in units of 2**out_scale; each call's 64-deep product of codes "
                    "times 2**(left_scale + right_scale - out_scale) in FP32, then previous + "
                    "product rounded to FP16)")
    name = "f8" if precision == Precision.F8F143 else precision
    return KernelAbi(
        symbol=f"amp_gemm_{name}_{mode}",
        pointers=("out", "left", "right"),
        scalars=scalars,
        returns="void",
        row_specialization=_GEMM_ROWS,
        status=IMPLEMENTED,
        doc=(
            f"{effect} on the AMP {operands}, {partials}. left: a 64-column amp_left panel "
            f"of `rows` rows; right: one 64x64 amp_right block; out: a 64-column amp_output "
            f"panel of `rows` rows. Every pointer PACE-aligned (Target.pace_alignment)."
        ),
        footprint=_gemm_footprint(precision),
    )


def _described(symbol: str, pointers: tuple[str, ...], named: tuple[str, ...], doc: str,
               checked: tuple[str, ...] = ()) -> KernelAbi:
    return KernelAbi(symbol, pointers, (*named, DESCRIPTORS), "void", _BY_DESCRIPTOR,
                     IMPLEMENTED, doc, _descriptor_footprint(pointers, *checked))


# View kernels: the variadic words are out's and the source's descriptors, then the index view.
_BY_VIEW = "none: one entry for all formats and views (two descriptors, then the index view)"


def _viewed(symbol: str, pointers: tuple[str, ...], named: tuple[str, ...], doc: str,
            checked: tuple[str, ...] = ()) -> KernelAbi:
    return KernelAbi(symbol, pointers, (*named, DESCRIPTORS), "void", _BY_VIEW, IMPLEMENTED,
                     doc, _view_footprint(pointers, *checked))


_ENTRIES: tuple[KernelAbi, ...] = (
    _gemm(Precision.F16, "init"),
    _gemm(Precision.F16, "accum"),
    _gemm(Precision.F32, "init"),
    _gemm(Precision.F32, "accum"),
    _gemm(Precision.F8F143, "init"),
    _gemm(Precision.F8F143, "accum"),
    _gemm_f32_partials("init"),
    _gemm_f32_partials("accum"),
    KernelAbi(
        symbol="copy_words",
        pointers=("out", "src"),
        scalars=("words",),
        returns="void",
        row_specialization="none",
        status=IMPLEMENTED,
        doc="Copy `words` 32-bit words from src to out (tile-local; both word-aligned).",
        footprint=_words_footprint("out", "src"),
    ),
    KernelAbi(
        symbol="fill_zero",
        pointers=("out",),
        scalars=("words",),
        returns="void",
        row_specialization="none",
        status=IMPLEMENTED,
        doc="Zero `words` 32-bit words at out (word-aligned).",
        footprint=_words_footprint("out"),
    ),
    _described(
        "convert_shard", ("out", "src"), (),
        "out's shard = src's shard in out's order, precision and scale (descriptors: out, "
        "src; the same shard box on every tile). f32 -> f16 rounds to nearest even "
        "(overflow -> inf); to FP8 saturates at +-240 * 2**scale; widening is exact. "
        "mid.cast_precision and a tile-local mid.rearrange.",
    ),
    _described(
        "gather_shard", ("out", "staged"), ("source_tile",),
        "staged holds the whole shard that tile `source_tile` stores in the staged format; "
        "write the elements of (staged box of source_tile) & (out box of this tile) & (the "
        "logical extent) into out's shard, in out's order (same precision and scale). "
        "Other elements of out are left as they are.",
        checked=("source_tile",),
    ),
    _described(
        "gelu", ("out", "src"), (),
        "out = gelu(src), exact erf form computed in float64, one rounding to out's precision "
        "(descriptors: out, src; the same shard box). Padding of out is written as zeros.",
    ),
    _described(
        "add", ("out", "lhs", "rhs"), (),
        "out = lhs + rhs with NumPy broadcasting (descriptors: out, lhs, rhs); each operand's "
        "view of this tile's out box must be in its shard on this tile. float64 sum, one "
        "rounding to out's precision; padding of out is written as zeros.",
    ),
    _described(
        "attention", ("out", "query", "key", "value"), ("causal", "scale_bits"),
        "out = softmax(scale * query @ key^T [causal mask]) @ value over [..., heads, seq, "
        "head_dim] (descriptors: out, query, key, value; out and query share a shard box, "
        "key/value shards hold the box's heads with every key row and all of head_dim). "
        "causal: 0 or 1; scale_bits: the f32 bit pattern of the scale. FP32 scores and "
        "stable softmax, FP32 accumulation, one rounding to out's precision.",
        checked=("causal", "scale_bits"),
    ),
    _described(
        "layer_norm", ("out", "src", "weight", "bias"), ("eps_bits",),
        "out = (src - mean) / sqrt(var + eps) * weight + bias over the last axis (descriptors: "
        "out, src, weight, bias; out and src share a shard box holding whole rows of the last "
        "axis, weight and bias [C] shards hold all C entries on this tile). eps_bits: the f32 "
        "bit pattern of eps. FP32 mean and biased variance, FP32 normalization, one rounding "
        "to out's precision; padding of out is written as zeros.",
        checked=("eps_bits",),
    ),
    _viewed(
        "view_shard", ("out", "src"), (),
        "For every element r of out's box on this tile within the view's window and out's "
        "logical extent: out[r] = src[unravel(offset + sum((r - starts) * strides))], which "
        "must be in src's shard on this tile (variadic: out's and src's descriptors, then "
        "the view, device/index_views.py). Moves storage codes bit-exactly (same precision "
        "and scale); other elements of out are left as they are. Layout ops, tile-local.",
    ),
    _viewed(
        "gather_view", ("out", "staged"), ("source_tile",),
        "staged holds the whole shard that tile `source_tile` stores in the staged format; "
        "as view_shard, but only the elements whose source is in that shard are written "
        "(others of out are left as they are). Layout ops, one call per source shard.",
        checked=("source_tile",),
    ),
)

KERNELS: dict[str, KernelAbi] = {abi.symbol: abi for abi in _ENTRIES}


def f32_bits(value: float) -> int:
    """The f32 bit pattern of `value` rounded to f32 (past the f32 range: inf), as an
    unsigned 32-bit word (attention's `scale_bits`)."""
    with np.errstate(over="ignore"):
        return int(np.array([value], np.float64).astype("<f4").view("<u4")[0])


def descriptor_words(*formats: ShardGeometry) -> tuple[int, ...]:
    """The variadic words of a descriptor kernel: each pointer's format, in pointer order."""
    return tuple(word for fmt in formats for word in fmt.encode())


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
