"""The embedding kernel `gather_rows`: out[n, ...] = table[indices[n], ...] (graph.gather).

Descriptors: out, table, indices. `indices` is an i32 tensor [N...]; out has shape
indices.shape + table.shape[1:]. On its tile the kernel fills out's shard box: the box's
index positions must lie in the indices' shard on this tile and its trailing (row) axes in
the table's shard. Each row is copied bit-exactly (out and table have the same precision and
scale) when the table's shard on this tile holds it, else written as zeros: a masked select,
so a table cut by rows gives partial outputs that sum exactly (one tile holds each row). An
index outside the table's rows (`0 <= i < rows`) is a `ModelError` naming the tile, the
position and the index, never a silent zero. Out's padding is written as zeros.
"""

from __future__ import annotations

import numpy as np

from device.kernel_abi import described
from device.model.cycles import gather_rows_cycles
from device.model.kernel_call import Kernel, KernelCall, of_formats
from device.model.kernel_shards import (
    Box,
    box_on,
    check_resident,
    is_empty,
    local_slices,
    logical_box,
    operand_formats,
    read_codes,
    read_region,
    write_codes,
)
from device.shard_geometry import ShardGeometry
from device.target import Precision


def _check_formats(call: KernelCall, out: ShardGeometry, table: ShardGeometry,
                   indices: ShardGeometry) -> None:
    if indices.precision != Precision.I32:
        raise call.fail(f"'indices' are stored as {indices.precision}; they must be i32")
    if out.shape != indices.shape + table.shape[1:]:
        raise call.fail(f"'out' has shape {out.shape}; the indices' shape {indices.shape} "
                        f"followed by the table's row shape {table.shape[1:]} is expected")
    if (out.precision, out.scale) != (table.precision, table.scale):
        raise call.fail(f"'out' ({out.precision}, scale {out.scale}) and 'table' "
                        f"({table.precision}, scale {table.scale}) differ: rows are copied "
                        "bit-exactly")


RESIDENT = "out's box needs [{need}], its shard on this tile holds [{held}]"


def _checked_indices(call: KernelCall, indices: ShardGeometry, region: Box,
                     rows: int) -> np.ndarray:
    """The indices of `region` (positions of out's leading axes), each in [0, rows)."""
    values = read_region(call, "indices", indices, region, RESIDENT)
    bad = (values < 0) | (values >= rows)
    if bad.any():
        local = np.argwhere(bad)[0]
        position = [int(i) + a for i, a in zip(local, region[0])]
        raise call.fail(f"index {int(values[tuple(local)])} at {position} of the indices is "
                        f"outside the table's {rows} rows (0 <= index < {rows})")
    return values.astype(np.int64)


def gather_rows(call: KernelCall) -> int:
    formats = operand_formats(call)
    out, table, indices = formats["out"], formats["table"], formats["indices"]
    _check_formats(call, out, table, indices)
    box = box_on(call, "out", out)
    region = logical_box(box, out)
    codes = np.zeros(out.chunk, dtype=read_codes(call, "table", table).dtype)
    if not is_empty(region):  # a tile of only padding reads nothing
        lead = indices.rank
        rows = _checked_indices(call, indices, (region[0][:lead], region[1][:lead]),
                                table.shape[0])
        shard = box_on(call, "table", table)
        row_box = (region[0][lead:], region[1][lead:])
        check_resident(call, "table", row_box, (shard[0][1:], shard[1][1:]), RESIDENT)
        first, stop = shard[0][0], min(shard[1][0], table.shape[0])
        owned = (rows >= first) & (rows < stop)
        where: tuple[np.ndarray | slice, ...] = (np.where(owned, rows - first, 0),
                                                 *local_slices(row_box, shard[0][1:]))
        picked = read_codes(call, "table", table)[where]
        owned = owned.reshape(owned.shape + (1,) * (picked.ndim - owned.ndim))
        codes[local_slices(region, box[0])] = np.where(owned, picked, 0)
    write_codes(call, "out", out, codes)
    return gather_rows_cycles(out, table, indices, call.tile, call.target)


RECORDS: tuple[Kernel, ...] = (
    Kernel(
        described(
            "gather_rows", ("out", "table", "indices"), (),
            "out[n, ...] = table[indices[n], ...] over this tile's out box (descriptors: out, "
            "table, indices; i32 indices): rows the table's shard on this tile holds are "
            "copied bit-exactly, others written as zeros (a masked select); an index outside "
            "the table's rows is an error. Padding of out is written as zeros.",
        ),
        gather_rows,
        of_formats(gather_rows_cycles),
    ),
)
