"""The layer_norm kernels: out = (src - mean) / sqrt(var + eps) * weight + bias, row by row
over the last axis (the semantics of `interpreters/graph.py`).

`layer_norm` computes rows that are whole on its tile. Where the last axis is cut across C
tiles (a GEMM's output in 64-column panels), `layer_norm_stats` writes each row's mean and
M2 (sum of squared deviations) over the tile's own columns into block c of a statistics
buffer (`stats_geometry`), the exchange sends block c to the other tiles of the row group,
and `layer_norm_apply` merges the C blocks (Chan's pairwise formula: the mean weighted by the
parts' real columns, M2 plus each part's n (mean_c - mean)^2) and normalizes its columns.

out and src share this tile's shard box, which must hold whole rows: all of the last axis.
weight and bias are [C] vectors whose shard on this tile holds all C entries (replicated).
Numerics: values widened to FP32, FP32 mean and biased variance (FP32 accumulation), eps and
the reciprocal square root in FP32, normalization, scale and shift in FP32, then one rounding
to out's precision. Out's padding (rows or columns outside the logical extent) is zeros.
"""

from __future__ import annotations

import math

import numpy as np

from device.kernel_abi import described
from device.model.cycles import (
    STATS_PER_ROW,
    layer_norm_apply_cycles,
    layer_norm_cycles,
    layer_norm_stats_cycles,
)
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


def _check_width(call: KernelCall, name: str, fmt: ShardGeometry, width: int) -> None:
    """weight and bias: [C] vectors, one entry per element of the normalized axis."""
    if fmt.shape != (width,):
        raise call.fail(f"'{name}' has shape {fmt.shape}, expected ({width},): one entry per "
                        f"element of the normalized last axis")


def _whole_vector(call: KernelCall, name: str, fmt: ShardGeometry, width: int) -> np.ndarray:
    _check_width(call, name, fmt, width)
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



def stats_geometry(src: ShardGeometry) -> ShardGeometry:
    """The statistics buffer of a column-split layer norm of `src` (C = src's partitions of
    the last axis): on each of src's tiles, C blocks of rows x 2 FP32 words, block c holding
    the (mean, M2) of column part c for each of the tile's rows (rows = the shard's rows,
    padding included). Described as an FP32 row-major tensor cut as src on the leading axes
    and C ways on a last axis of 2 C per tile, so that its tiles are src's."""
    parts = src.partitions[-1]
    lead = src.chunk[:-1]
    width = STATS_PER_ROW * parts
    shape = (*(c * p for c, p in zip(lead, src.partitions[:-1], strict=True)), width * parts)
    return ShardGeometry(shape, (*lead, width), src.partitions, (True,) * src.rank, 1,
                         src.group, "f32", "row_major", 0, src.first_tile)


def stats_rows(src: ShardGeometry) -> int:
    """Rows of a tile's statistics block: the rows of src's shard, padding included."""
    return math.prod(src.chunk[:-1])


def _text(fmt: ShardGeometry) -> str:
    return (f"shape {fmt.shape}, shard {fmt.chunk}, cut {fmt.partitions}, {fmt.precision} "
            f"{fmt.order}")


def _checked_stats(call: KernelCall, stats: ShardGeometry, src: ShardGeometry,
                   name: str = "stats") -> None:
    if src.rank < 2 or src.replication != 1:
        raise call.fail(f"'src' has shape {src.shape} and replication {src.replication}: the "
                        "column-split layer norm needs rows (rank >= 2) stored once")
    if stats != stats_geometry(src):
        raise call.fail(f"'{name}' is {_text(stats)}; for this src it must be "
                        f"{_text(stats_geometry(src))} (C blocks of rows x 2 f32)")


def _part_of(call: KernelCall, src: ShardGeometry) -> tuple[int, tuple, tuple[slice, ...]]:
    """(this tile's column part, its padded box, its local slices of real elements or ())."""
    box = box_on(call, "src", src)
    region = logical_box(box, src)
    local = () if is_empty(region) else local_slices(region, box[0])
    return box[0][-1] // src.chunk[-1], box, local


def layer_norm_stats(call: KernelCall) -> int:
    formats = operand_formats(call)
    stats, src = formats["out"], formats["src"]  # out: the statistics buffer it writes
    _checked_stats(call, stats, src, "out")
    part, _, local = _part_of(call, src)
    rows = stats_rows(src)
    blocks = np.zeros((src.partitions[-1], rows, STATS_PER_ROW), np.float32)
    if local:
        x = read_values(call, "src", src)[local].astype(np.float32)
        mean = x.mean(axis=-1, dtype=np.float32)
        m2 = np.square(x - mean[..., None]).sum(axis=-1, dtype=np.float32)
        own = np.zeros((*src.chunk[:-1], STATS_PER_ROW), np.float32)
        own[local[:-1]] = np.stack([mean, m2], axis=-1)
        blocks[part] = own.reshape(rows, STATS_PER_ROW)
    write_values(call, "out", stats, blocks.reshape(stats.chunk))
    return layer_norm_stats_cycles(stats, src, call.tile, call.target)


def part_columns(src: ShardGeometry) -> np.ndarray:
    """[C] The real columns of each column part of the last axis."""
    chunk, width = src.chunk[-1], src.shape[-1]
    starts = np.arange(src.partitions[-1]) * chunk
    return np.clip(width - starts, 0, chunk)


def layer_norm_apply(call: KernelCall) -> int:
    formats = operand_formats(call)
    out, src, stats = formats["out"], formats["src"], formats["stats"]
    if out.shape != src.shape or out.partitions != src.partitions:
        raise call.fail(f"'out' is {_text(out)} but 'src' is {_text(src)}: the "
                        "column-split layer norm keeps the shape and the cut")
    _checked_stats(call, stats, src)
    same_box(call, out, "src", src)
    eps = positive_f32(call, "eps_bits")
    _, box, local = _part_of(call, src)
    columns = (box[0][-1], min(box[1][-1], out.shape[-1]))
    weight = _part_vector(call, "weight", formats["weight"], columns, out.shape[-1])
    bias = _part_vector(call, "bias", formats["bias"], columns, out.shape[-1])
    result = np.zeros(out.chunk)
    if local:
        counts = part_columns(src).astype(np.float32)[:, None]
        blocks = read_values(call, "stats", stats).astype(np.float32).reshape(
            src.partitions[-1], stats_rows(src), STATS_PER_ROW)
        means, m2s = blocks[..., 0], blocks[..., 1]
        total = np.float32(out.shape[-1])
        mean = (counts * means).sum(axis=0, dtype=np.float32) / total
        m2 = (m2s + counts * np.square(means - mean)).sum(axis=0, dtype=np.float32)
        scale = np.float32(1) / np.sqrt(m2 / total + eps)
        lead = (*src.chunk[:-1], 1)
        mean, scale = mean.reshape(lead)[local[:-1]], scale.reshape(lead)[local[:-1]]
        x = read_values(call, "src", src)[local].astype(np.float32)
        result[local] = (x - mean) * scale * weight + bias
    write_values(call, "out", out, result)
    return layer_norm_apply_cycles(out, src, formats["weight"], formats["bias"], stats,
                                   call.tile, call.target)


def _part_vector(call: KernelCall, name: str, fmt: ShardGeometry, columns: tuple[int, int],
                 width: int) -> np.ndarray:
    """The entries of weight or bias for this tile's real columns [start, stop): its shard
    on this tile must start at the tile's first column (cut as the last axis is)."""
    start, stop = columns
    _check_width(call, name, fmt, width)
    box = box_on(call, name, fmt)
    if box[0][0] != start or (stop > start and box[1][0] < stop):
        raise call.fail(f"'{name}': its shard [{box[0][0]}:{box[1][0]}] on this tile is not "
                        f"cut as this tile's columns [{start}:{stop}]")
    return read_values(call, name, fmt)[:max(0, stop - start)].astype(np.float32)

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
    Kernel(
        described(
            "layer_norm_stats", ("out", "src"), (),
            "The column-split layer norm's statistics (descriptors: out, src; src cut on its "
            "last axis into C parts, out the statistics buffer as `stats_geometry` gives it "
            "for src): for each row of this tile's shard, the FP32 mean and M2 (sum of "
            "squared deviations from it) over the tile's real columns, into block c (this "
            "tile's column part) of out, read as [C][rows][2] f32; the other blocks are "
            "written as zeros (the exchange fills them), and so is a padding row's.",
        ),
        layer_norm_stats,
        of_formats(layer_norm_stats_cycles),
    ),
    Kernel(
        described(
            "layer_norm_apply", ("out", "src", "weight", "bias", "stats"), ("eps_bits",),
            "The column-split layer norm's normalization (descriptors: out, src, weight, "
            "bias, stats; out and src share a shard box and a cut, weight and bias [C] cut "
            "as the last axis, stats every column part's (mean, M2) of the tile's rows): the "
            "parts merged in FP32 (mean weighted by each part's real columns, M2 plus n_c "
            "(mean_c - mean)^2, biased variance), then as layer_norm on this tile's columns; "
            "one rounding to out's precision, padding written as zeros.",
            checked=("eps_bits",),
        ),
        layer_norm_apply,
        of_formats(layer_norm_apply_cycles),
    ),
)
