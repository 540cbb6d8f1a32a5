"""Verification helpers the tile ops share (no IR definitions): affine maps that must be
well-formed and stay in 64 bits over the loop nest, views that stay inside their buffer and on
word boundaries, buffers resident where they are used, tile sets within the module's
configured tile count. (What a row patch must name is the patch's own check:
`ipu_dialects/tile_schedule.py`.)

They see the tile ops through the small protocols below (a buffer, a tile set) rather than
by importing `ipu_dialects/tile.py`, which imports them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol, Self

import numpy as np
from xdsl.dialects.builtin import IntAttr, StringAttr
from xdsl.ir import Operation
from xdsl.ir.affine import AffineConstantExpr, AffineMap
from xdsl.utils.exceptions import VerifyException

from device.target import WORD_BYTES
from ipu_dialects.shared_attrs import configured_tile_count
from ipu_dialects.tile_iteration import divisors, evaluate_scalar_map, iteration_count, magnitude_bound
from ipu_dialects.tile_syntax import I64_MAX

# Verifiers evaluate maps over the whole iteration space only up to this many iterations.
MAX_VERIFIED_ITERATIONS = 1 << 16


class TileSet(Protocol):
    """`#tile.tiles` as the checks see it."""

    @property
    def stop(self) -> IntAttr: ...

    def issubset(self, other: Self) -> bool: ...


class Buffer(Protocol):
    """`tile.buffer` as the checks see it."""

    @property
    def sym_name(self) -> StringAttr: ...

    @property
    def tiles(self) -> TileSet: ...

    @property
    def byte_size(self) -> int: ...

    @property
    def alignment_bytes(self) -> int: ...


class NamedInDiagnostics(ABC):
    """An op whose diagnostics name more than its op name (`tile.kernel @symbol`)."""

    @abstractmethod
    def diagnostic_name(self) -> str: ...


def describe(op: Operation) -> str:
    """How diagnostics name an op: by its `diagnostic_name` where it has one (kernels name
    their symbol), else by its op name."""
    return op.diagnostic_name() if isinstance(op, NamedInDiagnostics) else op.name


def check_tile_set_fits(op: Operation, what: str, tile_set: TileSet) -> None:
    total = configured_tile_count(op)
    if total is not None and tile_set.stop.data > total:
        raise VerifyException(
            f"{describe(op)}: {what} {tile_set} reaches tile {tile_set.stop.data - 1}, "
            f"but the module is configured for {total} tiles"
        )


def check_map(op: Operation, what: str, affine_map: AffineMap,
              bounds: Sequence[tuple[int, int]]) -> None:
    depth = len(bounds)
    if affine_map.num_dims != depth:
        raise VerifyException(
            f"{describe(op)}: {what} map {affine_map} takes {affine_map.num_dims} indices, "
            f"but the op has {depth} index operand(s)"
        )
    if affine_map.num_symbols != 0 or len(affine_map.results) != 1:
        raise VerifyException(
            f"{describe(op)}: {what} map {affine_map} must have no symbols and exactly one result"
        )
    for divisor in divisors(affine_map.results[0]):
        if not isinstance(divisor, AffineConstantExpr) or divisor.value < 1:
            raise VerifyException(
                f"{describe(op)}: {what} map {affine_map} divides by {divisor}; floordiv, "
                "ceildiv and mod need a positive constant"
            )
    if magnitude_bound(affine_map.results[0], bounds) > I64_MAX:
        raise VerifyException(
            f"{describe(op)}: {what} map {affine_map} can exceed 64-bit integers over the "
            "loop bounds"
        )


def map_values(affine_map: AffineMap, bounds: Sequence[tuple[int, int]]) -> np.ndarray | None:
    """The map over every iteration, or None when the nest is too large to check cheaply."""
    if iteration_count(bounds) > MAX_VERIFIED_ITERATIONS:
        return None
    return evaluate_scalar_map(affine_map, bounds)


def check_view_inside(
    op: Operation,
    what: str,
    buffer: Buffer,
    offset_map: AffineMap,
    view_bytes: int,
    bounds: Sequence[tuple[int, int]],
) -> None:
    offsets = map_values(offset_map, bounds)
    if offsets is None or offsets.size == 0:
        return
    size = buffer.byte_size
    lo, hi = int(offsets.min()), int(offsets.max())
    if lo < 0 or hi + view_bytes > size:
        bad = lo if lo < 0 else hi
        raise VerifyException(
            f"{describe(op)}: {what} view of @{buffer.sym_name.data} at byte offset {bad} "
            f"({view_bytes} bytes) leaves the buffer ({size} bytes)"
        )


def check_word_aligned(
    op: Operation, what: str, buffer: Buffer, offset_map: AffineMap, bounds: Sequence[tuple[int, int]],
    item_bytes: int = WORD_BYTES,
) -> None:
    """Exchanges stream 32-bit words (or, between tile pairs, 64-bit items): a view that is
    not aligned to its items cannot be addressed."""
    items = "whole words" if item_bytes == WORD_BYTES else f"{8 * item_bytes}-bit items"
    if buffer.alignment_bytes % item_bytes:
        raise VerifyException(
            f"{describe(op)}: {what} buffer @{buffer.sym_name.data} is only "
            f"{buffer.alignment_bytes}-byte aligned; exchanged buffers need {item_bytes}-byte "
            f"alignment" + ("" if item_bytes == WORD_BYTES else f" to move {items}")
        )
    offsets = map_values(offset_map, bounds)
    misaligned = [] if offsets is None else offsets[offsets % item_bytes != 0]
    if len(misaligned):
        raise VerifyException(
            f"{describe(op)}: {what} view of @{buffer.sym_name.data} at byte offset "
            f"{int(misaligned[0])} is not a multiple of {item_bytes}; exchanges move {items}"
        )


def check_resident(op: Operation, what: str, buffer: Buffer, tiles: TileSet) -> None:
    if not tiles.issubset(buffer.tiles):
        raise VerifyException(
            f"{describe(op)}: {what} @{buffer.sym_name.data} lives on {buffer.tiles}, "
            f"not on every tile of {tiles}"
        )
