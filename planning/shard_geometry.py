"""Shard geometry for the passes: the device's `ShardGeometry` and its helpers, re-exported,
plus the adapter from a `#mid.format` attribute.

The arithmetic itself lives in `device/shard_geometry.py`, where the kernels of the executable
model decode it from their descriptors: one definition for the compiler and the device.
"""

from __future__ import annotations

from collections.abc import Sequence

from device.shard_geometry import (
    DescriptorError,
    ShardGeometry,
    axis_chunk,
    ceil_div,
    decode_descriptor,
    decode_descriptors,
    padded_extent,
)
from ipu_dialects.mid import TensorFormatAttr

__all__ = [
    "DescriptorError",
    "ShardGeometry",
    "axis_chunk",
    "ceil_div",
    "decode_descriptor",
    "decode_descriptors",
    "geometry",
    "padded_extent",
]


def geometry(shape: Sequence[int], fmt: TensorFormatAttr) -> ShardGeometry:
    """The geometry of a tensor of logical `shape` stored in `fmt` (order and scale included,
    so `geometry(...).encode()` is the kernel descriptor of that operand)."""
    return ShardGeometry.from_format(shape, fmt)
