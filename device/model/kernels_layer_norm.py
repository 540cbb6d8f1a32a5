"""The layer_norm kernel: out = (src - mean) / sqrt(var + eps) * weight + bias, row by row
over the last axis (the semantics of `interpreters/graph.py`).

out and src share this tile's shard box, which must hold whole rows: all of the last axis.
weight and bias are [C] vectors whose shard on this tile holds all C entries (replicated).
Numerics: values widened to FP32, FP32 mean and biased variance (FP32 accumulation), eps and
the reciprocal square root in FP32, normalization, scale and shift in FP32, then one rounding
to out's precision. Out's padding (rows or columns outside the logical extent) is zeros.
"""

from __future__ import annotations

import numpy as np

from device.kernel_abi import described
from device.model.cycles import layer_norm_cycles
from device.model.kernel_call import Kernel, KernelCall, of_formats
from device.model.kernel_shards import (
    box_on,
    is_empty,
    local_slices,
    logical_box,
    operand_formats,
    positive_f32,
    read_values,
    same_box,
    write_values,
)
from device.shard_geometry import ShardGeometry


def _whole_vector(call: KernelCall, name: str, fmt: ShardGeometry, width: int) -> np.ndarray:
    if fmt.shape != (width,):
        raise call.fail(f"'{name}' has shape {fmt.shape}, expected ({width},): one entry per "
                        f"element of the normalized last axis")
    start, stop = box_on(call, name, fmt)
    if start[0] != 0 or stop[0] < width:
        raise call.fail(f"'{name}': its shard [{start[0]}:{stop[0]}] on this tile does not hold "
                        f"all {width} entries")
    return read_values(call, name, fmt)[:width].astype(np.float32)


def layer_norm(call: KernelCall) -> int:
    formats = operand_formats(call)
    out, src = formats["out"], formats["src"]
    if out.shape != src.shape or out.rank < 1:
        raise call.fail(f"'out' has shape {out.shape} but 'src' has {src.shape}: layer_norm "
                        f"keeps the shape (rank >= 1)")
    box = same_box(call, out, "src", src)
    width = out.shape[-1]
    eps = positive_f32(call, "eps_bits")
    weight = _whole_vector(call, "weight", formats["weight"], width)
    bias = _whole_vector(call, "bias", formats["bias"], width)
    region = logical_box(box, out)
    result = np.zeros(out.chunk)
    if not is_empty(region):
        if region[0][-1] != 0 or region[1][-1] != width:
            raise call.fail(f"this tile's box {box} splits the normalized last axis ({width}); "
                            f"layer_norm needs whole rows")
        local = local_slices(region, box[0])
        x = read_values(call, "src", src)[local].astype(np.float32)
        mean = x.mean(axis=-1, keepdims=True, dtype=np.float32)
        centered = x - mean
        variance = np.square(centered).mean(axis=-1, keepdims=True, dtype=np.float32)
        scale = np.float32(1) / np.sqrt(variance + eps)
        result[local] = centered * scale * weight + bias
    write_values(call, "out", out, result)
    return layer_norm_cycles(out, src, formats["weight"], formats["bias"], call.tile,
                             call.target)


RECORDS: tuple[Kernel, ...] = (
    Kernel(
        described(
            "layer_norm", ("out", "src", "weight", "bias"), ("eps_bits",),
            "out = (src - mean) / sqrt(var + eps) * weight + bias over the last axis "
            "(descriptors: out, src, weight, bias; out and src share a shard box holding whole "
            "rows of the last axis, weight and bias [C] shards hold all C entries on this "
            "tile). eps_bits: the f32 bit pattern of eps. FP32 mean and biased variance, FP32 "
            "normalization, one rounding to out's precision; padding of out is written as "
            "zeros.",
            checked=("eps_bits",),
        ),
        layer_norm,
        of_formats(layer_norm_cycles),
    ),
)
