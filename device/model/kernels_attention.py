"""The attention kernel: out = softmax(scale * query @ key^T [causal]) @ value.

Tensors are [..., heads, seq, head_dim], the leading axes batch-like (the semantics of
`interpreters/graph.py`): the scale multiplies the logits, and the causal mask hides key j
from query row i when j > i (causal attention has equal query and key lengths). out and query
share this tile's shard box, which may split the query rows: the mask uses the GLOBAL row
indices of the box. The key and value shards on this tile must hold the box's batch/head
indices with every key row and all of head_dim.

Numerics: FP32 scores (products of exact FP32 inputs, FP32 accumulation), the scale in FP32, a
stable softmax (the row max subtracted) in FP32, FP32 accumulation of P @ V, then one rounding
to out's precision. Out's padding (rows or columns outside the logical extent) is zeros;
padded key rows and head_dim columns take no part.
"""

from __future__ import annotations

import numpy as np

from device.kernel_abi import described
from device.model.cycles import attention_cycles
from device.model.kernel_call import Kernel, KernelCall, of_formats
from device.model.kernel_shards import (
    Box,
    is_empty,
    local_slices,
    logical_box,
    operand_formats,
    positive_f32,
    read_region,
    read_values,
    same_box,
    write_values,
)
from device.shard_geometry import ShardGeometry


def _check_shapes(call: KernelCall, formats: dict[str, ShardGeometry]) -> None:
    out, query, key, value = (formats[n] for n in ("out", "query", "key", "value"))
    if query.rank < 3 or out.shape != query.shape:
        raise call.fail(f"out {out.shape} and query {query.shape} must be one shape "
                        f"[..., heads, seq, head_dim]")
    if key.shape != value.shape or key.shape[:-2] != query.shape[:-2] \
            or key.shape[-1] != query.shape[-1]:
        raise call.fail(f"key {key.shape} and value {value.shape} must be [..., heads, "
                        f"key_seq, head_dim] with query {query.shape}'s batch, heads and "
                        f"head_dim")
    if key.shape[-2] < 1:
        raise call.fail(f"key {key.shape} has no rows to attend to")
    if call.scalars["causal"] not in (0, 1):
        raise call.fail(f"causal = {call.scalars['causal']} must be 0 or 1")
    if call.scalars["causal"] and key.shape[-2] != query.shape[-2]:
        raise call.fail(f"causal attention needs equal query and key lengths, got "
                        f"{query.shape[-2]} and {key.shape[-2]}")


def _resident_keys(call: KernelCall, name: str, fmt: ShardGeometry, region: Box) -> np.ndarray:
    """`name`'s values for the region's batch/head indices, all key rows, all of head_dim."""
    need = (region[0][:-2] + (0, 0), region[1][:-2] + fmt.shape[-2:])
    return read_region(call, name, fmt, need,
                       "the heads [{need}] this tile's query rows need are not resident in its "
                       "shard [{held}] on this tile").astype(np.float32)


def attention(call: KernelCall) -> int:
    formats = operand_formats(call)
    _check_shapes(call, formats)
    out, query = formats["out"], formats["query"]
    box = same_box(call, out, "query", query)
    scale = positive_f32(call, "scale_bits", " scale")
    region = logical_box(box, out)
    result = np.zeros(out.chunk)
    if not is_empty(region):
        if region[0][-1] != 0 or region[1][-1] != out.shape[-1]:
            raise call.fail(f"this tile's query box {box} splits head_dim "
                            f"({out.shape[-1]}); attention needs whole query rows")
        local = local_slices(region, box[0])
        q = read_values(call, "query", query)[local].astype(np.float32)
        k = _resident_keys(call, "key", formats["key"], region)
        v = _resident_keys(call, "value", formats["value"], region)
        logits = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
        if call.scalars["causal"]:
            rows = np.arange(region[0][-2], region[1][-2])[:, None]  # global query rows
            logits = np.where(np.arange(k.shape[-2])[None, :] > rows, np.float32(-np.inf),
                              logits)
        weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        result[local] = np.matmul(weights, v)
    write_values(call, "out", out, result)
    return attention_cycles(out, query, formats["key"], formats["value"], call.tile,
                            call.target)


RECORDS: tuple[Kernel, ...] = (
    Kernel(
        described(
            "attention", ("out", "query", "key", "value"), ("causal", "scale_bits"),
            "out = softmax(scale * query @ key^T [causal mask]) @ value over [..., heads, seq, "
            "head_dim] (descriptors: out, query, key, value; out and query share a shard box, "
            "key/value shards hold the box's heads with every key row and all of head_dim). "
            "causal: 0 or 1; scale_bits: the f32 bit pattern of the scale. FP32 scores and "
            "stable softmax, FP32 accumulation, one rounding to out's precision.",
            checked=("causal", "scale_bits"),
        ),
        attention,
        of_formats(attention_cycles),
    ),
)
