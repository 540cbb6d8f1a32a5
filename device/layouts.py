"""Byte layouts of tensor shards in tile memory: the element orders of `TensorFormat`.

One definition used by host loading, the kernels of the executable model and the
lowering's address arithmetic, so that a layout can only be right or wrong in one place.

A shard is the padded rectangle of a tensor that one tile stores. Its leading axes
(batch) are stacked outermost in row-major order; the orders differ in how the last two
axes (rows R, columns C) are laid out:

- ``row_major``  : [R][C].
- ``amp_left``   : [C/64][R][64] -- one contiguous left-stream panel per 64-column inner block.
- ``amp_output`` : [C/64][R][64] -- one contiguous output panel per 64-column block.
- ``amp_right``  : [R/64][C/64][64/sr][4][sr][16] -- 64x64 blocks, each held as sr x 16
  sub-blocks (``sr`` = 16 for f16/f8 "B16x16", 8 for f32 "B8x16").
- ``amp_left_t``, ``amp_right_t``: the bytes of ``amp_left``/``amp_right`` of the shard with
  its last two axes swapped: a transposed GEMM operand ([K, M] or [N, K]) stored so that the
  AMP reads it as it reads an untransposed one.

Precision: ``f16`` and ``f32`` store IEEE values; ``f8f143`` stores
``float8_e4m3fnuz`` codes q with value q * 2**scale. Values beyond the FP8 range saturate to
+-240 * 2**scale (our chosen overflow mode; ml_dtypes alone would give NaN).
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
from xdsl.utils.str_enum import StrEnum

from device.target import BYTES_PER_ELEMENT, Precision


class ElementOrder(StrEnum):
    """The element orders of a shard (the module docstring describes each layout).

    Their position is the order code of a kernel descriptor (`device.shard_geometry`).
    """

    ROW_MAJOR = "row_major"
    AMP_LEFT = "amp_left"
    AMP_RIGHT = "amp_right"
    AMP_OUTPUT = "amp_output"
    AMP_LEFT_T = "amp_left_t"  # a transposed GEMM operand, stored as amp_left of its transpose
    AMP_RIGHT_T = "amp_right_t"


AMP_BLOCK = 64
# the AMP computes 16 output rows at a time: GEMM row chunks are multiples of it
AMP_ROWS = 16
ORDERS: tuple[str, ...] = tuple(order.value for order in ElementOrder)
# The orders the AMP reads and writes (PACE operands), which need `Target.pace_alignment`.
AMP_ORDERS: tuple[str, ...] = tuple(order for order in ORDERS if order != ElementOrder.ROW_MAJOR)
TRANSPOSED_SUFFIX = "_t"
FP8_MAX = 240.0
# [C] Poplar QUARTER metadata: a signed power-of-two scale s in -31..31, value = q * 2**s.
FP8_SCALE_RANGE = range(-31, 32)
# The precisions a shard may store with a power-of-two scale (value = stored * 2**scale): FP8,
# and FP16 for the FP8 AMP's partial sums, which hold value / 2**(the result's FP8 scale) so
# that every FP8 result of that scale is inside FP16's range (docs/internals.md, "FP8").
SCALED_PRECISIONS = (Precision.F8F143, Precision.F16)

_NUMPY_STORAGE: dict[str, np.dtype[Any]] = {
    Precision.F16: np.dtype("<f2"),
    Precision.F32: np.dtype("<f4"),
    Precision.F8F143: np.dtype(ml_dtypes.float8_e4m3fnuz),
    Precision.I32: np.dtype("<i4"),  # index tensors: integers, exact through float64
}


def element_bytes(precision: str) -> int:
    return BYTES_PER_ELEMENT[precision]


def right_subblock_rows(precision: str) -> int:
    return 8 if precision == Precision.F32 else 16


def shard_bytes(padded_shape: tuple[int, ...], precision: str) -> int:
    return math.prod(padded_shape) * element_bytes(precision)


def panel_bytes(rows: int, precision: str) -> int:
    """Bytes of one 64-column panel of an amp_left/amp_output shard with `rows` rows."""
    return rows * AMP_BLOCK * element_bytes(precision)


def block_bytes(precision: str) -> int:
    """Bytes of one 64x64 amp_right block."""
    return AMP_BLOCK * AMP_BLOCK * element_bytes(precision)


# float8_e4m3fnuz: 3 mantissa bits; normal exponents from -7 (bias 8), subnormal step 2**-10.
_FP8_MANTISSA_BITS = 3
_FP8_MIN_NORMAL_EXPONENT = -7


def round_to_fp8(q: np.ndarray) -> np.ndarray:
    """float64 values -> the nearest float8_e4m3fnuz codes (ties to even), saturating at
    +-FP8_MAX. Rounded here in float64: ml_dtypes converts through float32, which rounds
    values within 2**-24 of a tie twice and can land one FP8 step off."""
    q = np.clip(np.asarray(q, np.float64), -FP8_MAX, FP8_MAX)
    with np.errstate(divide="ignore"):  # log2(0) = -inf: zeros take the subnormal step
        exponent = np.floor(np.log2(np.abs(q)))
    exponent = np.maximum(np.nan_to_num(exponent, neginf=_FP8_MIN_NORMAL_EXPONENT),
                          _FP8_MIN_NORMAL_EXPONENT)
    step = np.exp2(exponent - _FP8_MANTISSA_BITS)
    # q / step and the product are exact (powers of two); np.round ties to even
    return (np.round(q / step) * step).astype(_NUMPY_STORAGE[Precision.F8F143])


def encode_elements(values: np.ndarray, precision: str, scale: int = 0) -> np.ndarray:
    """Logical values -> storage bytes (uint8, flattened in the given element order)."""
    if precision == Precision.F8F143:
        stored = round_to_fp8(np.asarray(values, np.float64) * 2.0**-scale)
    else:
        unscaled = np.asarray(values, np.float64) * 2.0**-scale if scale else np.asarray(values)
        with np.errstate(over="ignore"):  # IEEE rounding: past the largest finite value is inf
            stored = unscaled.astype(_NUMPY_STORAGE[precision])
    return np.ascontiguousarray(stored).reshape(-1).view(np.uint8)


def decode_elements(raw: np.ndarray, precision: str, scale: int = 0) -> np.ndarray:
    """Storage bytes -> logical values as float64 (flat)."""
    stored = np.ascontiguousarray(raw, dtype=np.uint8).view(_NUMPY_STORAGE[precision])
    values = stored.astype(np.float64)
    return values * 2.0**scale if scale else values


def check_order(order: str, shape: tuple[int, ...], precision: str) -> None:
    if order not in ORDERS:
        raise ValueError(f"unknown element order '{order}'; expected one of {ORDERS}")
    if order == "row_major":
        return
    if len(shape) < 2:
        raise ValueError(f"{order} needs at least two axes, got shape {shape}")
    rows, cols = shape[-2:]
    if cols % AMP_BLOCK or (order == "amp_right" and rows % AMP_BLOCK):
        raise ValueError(f"{order} shard shape {shape} is not padded to {AMP_BLOCK}-blocks")


def swap_last_axes(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (*shape[:-2], shape[-1], shape[-2])


def to_order(shard: np.ndarray, order: str, precision: str) -> np.ndarray:
    """Permute a logical (padded) shard into `order`; returns a flat array of values."""
    if order.endswith(TRANSPOSED_SUFFIX) and order in ORDERS:
        if shard.ndim < 2:
            raise ValueError(f"{order} needs at least two axes, got shape {shard.shape}")
        return to_order(np.swapaxes(shard, -1, -2), order.removesuffix(TRANSPOSED_SUFFIX),
                        precision)
    check_order(order, shard.shape, precision)
    if order == "row_major":
        return shard.reshape(-1)
    *batch, rows, cols = shard.shape
    nb = len(batch)
    if order in ("amp_left", "amp_output"):
        panels = shard.reshape(*batch, rows, cols // AMP_BLOCK, AMP_BLOCK)
        perm = (*range(nb), nb + 1, nb, nb + 2)
        return panels.transpose(perm).reshape(-1)
    sr = right_subblock_rows(precision)
    blocks = shard.reshape(
        *batch, rows // AMP_BLOCK, AMP_BLOCK // sr, sr, cols // AMP_BLOCK, AMP_BLOCK // 16, 16
    )
    # -> [batch][R/64][C/64][64/sr][4][sr][16]
    perm = (*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2, nb + 5)
    return blocks.transpose(perm).reshape(-1)


def from_order(flat: np.ndarray, shape: tuple[int, ...], order: str, precision: str) -> np.ndarray:
    """Inverse of `to_order`: a flat array in `order` back to the logical shard shape."""
    if order.endswith(TRANSPOSED_SUFFIX) and order in ORDERS:
        if len(shape) < 2:
            raise ValueError(f"{order} needs at least two axes, got shape {shape}")
        base = from_order(flat, swap_last_axes(tuple(shape)),
                          order.removesuffix(TRANSPOSED_SUFFIX), precision)
        return np.swapaxes(base, -1, -2)
    check_order(order, shape, precision)
    if order == "row_major":
        return flat.reshape(shape)
    *batch, rows, cols = shape
    nb = len(batch)
    if order in ("amp_left", "amp_output"):
        panels = flat.reshape(*batch, cols // AMP_BLOCK, rows, AMP_BLOCK)
        perm = (*range(nb), nb + 1, nb, nb + 2)
        return panels.transpose(perm).reshape(shape)
    sr = right_subblock_rows(precision)
    blocks = flat.reshape(
        *batch, rows // AMP_BLOCK, cols // AMP_BLOCK, AMP_BLOCK // sr, AMP_BLOCK // 16, sr, 16
    )
    perm = (*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3, nb + 5)
    return blocks.transpose(perm).reshape(shape)


def pack(shard: np.ndarray, order: str, precision: str, scale: int = 0) -> np.ndarray:
    """Logical padded shard -> the bytes a tile stores."""
    return encode_elements(to_order(np.asarray(shard), order, precision), precision, scale)


def unpack(
    raw: np.ndarray, shape: tuple[int, ...], order: str, precision: str, scale: int = 0
) -> np.ndarray:
    """Bytes a tile stores -> logical padded shard (float64)."""
    return from_order(decode_elements(raw, precision, scale), shape, order, precision)
