"""What the descriptor kernels share: decoding their operands' formats, finding this tile's
shard box, and reading/writing a whole shard in its format (`device.layouts`).

A descriptor kernel gets one format descriptor per pointer operand, in pointer order
(`device/kernels.py`); a malformed descriptor, or a tile outside an operand's format, is a
`ModelError` naming the kernel, tile and operand.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from device.layouts import element_bytes, from_order, pack, to_order, unpack
from device.shard_geometry import DescriptorError, ShardGeometry, decode_descriptors

if TYPE_CHECKING:
    from device.model.kernel_call import KernelCall

Box = tuple[tuple[int, ...], tuple[int, ...]]

_CODE_DTYPES: dict[int, np.dtype[np.unsignedinteger[Any]]] = {1: np.dtype("u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4")}


@lru_cache(maxsize=4096)
def decoded(words: tuple[int, ...], count: int) -> tuple[ShardGeometry, ...]:
    """`decode_descriptors`, once per distinct descriptor words: a layout step calls its
    kernel on every tile (a gather once per source tile too) with the same descriptors, and
    decoding them was most of a large model's run time. A bad descriptor raises each time
    (exceptions are not cached)."""
    return tuple(decode_descriptors(words, count))


@lru_cache(maxsize=1 << 16)
def shard_box(fmt: ShardGeometry, tile: int) -> Box:
    """`fmt.shard_box(tile)`, remembered (the geometries are frozen; see `decoded`)."""
    return fmt.shard_box(tile)


def operand_formats(call: KernelCall) -> dict[str, ShardGeometry]:
    """Each pointer's decoded descriptor, by pointer name."""
    try:
        formats = decoded(tuple(call.variadic), len(call.abi.pointers))
    except DescriptorError as error:
        raise call.fail(f"bad descriptors: {error}") from None
    named = dict(zip(call.abi.pointers, formats, strict=True))
    for name, fmt in named.items():  # before any shard-sized array is allocated
        call.memory.check_range(call.tile, call.pointers[name], fmt.shard_bytes(),
                                f"{call.describe()}, operand '{name}'")
    return named


def box_on(call: KernelCall, name: str, fmt: ShardGeometry, tile: int | None = None) -> Box:
    """The padded box of `name`'s shard on `tile` (default: the tile the call runs on)."""
    try:
        return shard_box(fmt, call.tile if tile is None else tile)
    except DescriptorError as error:
        raise call.fail(f"operand '{name}': {error}") from None


def positive_f32(call: KernelCall, name: str, what: str = "") -> np.float32:
    """The finite positive f32 whose bit pattern is scalar `name` (a scale, an epsilon)."""
    bits = call.scalars[name]
    value = np.array([bits & 0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0]
    if not (0 <= bits < 1 << 32 and math.isfinite(value) and value > 0):
        raise call.fail(f"{name} {bits:#x} is not the bit pattern of a finite positive f32{what}")
    return value


def logical_box(box: Box, fmt: ShardGeometry) -> Box:
    """`box` clipped to the tensor's logical (unpadded) extent; may be empty."""
    starts, stops = box
    clipped = tuple(max(a, min(b, e)) for a, b, e in zip(starts, stops, fmt.shape))
    return starts, clipped


def is_empty(box: Box) -> bool:
    return any(b <= a for a, b in zip(*box))


def local_slices(region: Box, origin: tuple[int, ...]) -> tuple[slice, ...]:
    """`region` (global padded indices) as slices of a shard whose box starts at `origin`."""
    return tuple(slice(a - o, b - o) for a, b, o in zip(*region, origin))


def shard_pointer(call: KernelCall, name: str) -> int:
    return call.aligned_pointer(name, call.target.vector_alignment)


def read_values(call: KernelCall, name: str, fmt: ShardGeometry) -> np.ndarray:
    """The whole shard at pointer `name`, as float64 values in logical shard shape."""
    raw = call.read(name, shard_pointer(call, name), fmt.shard_bytes())
    return unpack(raw, fmt.chunk, fmt.order, fmt.precision, fmt.scale)


def write_values(call: KernelCall, name: str, fmt: ShardGeometry, values: np.ndarray) -> None:
    """Round `values` (logical shard shape) once to `fmt`'s precision and store its shard."""
    call.write(name, shard_pointer(call, name), pack(values, fmt.order, fmt.precision, fmt.scale))


def read_codes(call: KernelCall, name: str, fmt: ShardGeometry) -> np.ndarray:
    """The whole shard at pointer `name` as raw storage codes (uint8/16/32), logical shape:
    for moving elements bit-exactly."""
    raw = call.read(name, shard_pointer(call, name), fmt.shard_bytes())
    codes = raw.view(_CODE_DTYPES[element_bytes(fmt.precision)])
    return from_order(codes, fmt.chunk, fmt.order, fmt.precision)


def write_codes(call: KernelCall, name: str, fmt: ShardGeometry, codes: np.ndarray) -> None:
    flat = np.ascontiguousarray(to_order(codes, fmt.order, fmt.precision))
    call.write(name, shard_pointer(call, name), flat.view(np.uint8))


def zero_padding(values: np.ndarray, box: Box, fmt: ShardGeometry) -> np.ndarray:
    """`values` (the shard of `box`) with every element outside the logical extent zeroed:
    a kernel's output padding is zeros, as the host writes it, so a later GEMM that
    contracts over a padded axis adds nothing."""
    keep = np.zeros(values.shape, dtype=bool)
    keep[local_slices(logical_box(box, fmt), box[0])] = True
    return np.where(keep, values, 0.0)
