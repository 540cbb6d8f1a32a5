"""Pointwise kernels: `gelu` (exact), `gelu_tanh` (its tanh form) and the broadcasting `add`.

They compute in float64 (every stored f32/f16/FP8 value is exact there) and round once to
out's precision when storing, as the reference interpreter does; out's padding is written as
zeros. `add` follows NumPy broadcasting (ranks aligned at the right, extent-1 axes broadcast):
this tile's out box, clipped to the logical extent, maps to each operand's coordinates
(broadcast axes at index 0) and must lie in that operand's shard on the same tile.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from device.kernel_abi import described
from device.model.cycles import add_cycles, pointwise_cycles
from device.model.kernel_call import CallCycles, Kernel, KernelCall, of_formats
from device.model.kernel_shards import (
    Box,
    box_on,
    is_empty,
    local_slices,
    logical_box,
    operand_formats,
    read_region,
    read_values,
    same_box,
    write_values,
)
from device.numerics import gelu as exact_gelu
from device.numerics import gelu_tanh as tanh_gelu
from device.shard_geometry import ShardGeometry
from device.target import Target

# What one element costs beyond streaming it, from the target's rates: (cycles of a special
# function, FP32 vector passes). `pointwise_cycles` turns it into a tile's cycles.
ElementCost = Callable[[Target], tuple[int, int]]


def one_pass(target: Target) -> tuple[int, int]:
    return 0, 1


def elementwise(call: KernelCall, function: Callable[[np.ndarray], np.ndarray]
                ) -> tuple[ShardGeometry, ShardGeometry]:
    """out = function(src) over this tile's shard (the same shape and shard box); (out, src)."""
    formats = operand_formats(call)
    out, src = formats["out"], formats["src"]
    if out.shape != src.shape:
        raise call.fail(f"'out' has shape {out.shape} but 'src' has {src.shape}: "
                        f"{call.abi.symbol} keeps the shape")
    box = same_box(call, out, "src", src)
    region = local_slices(logical_box(box, out), box[0])
    result = np.zeros(out.chunk)
    result[region] = function(read_values(call, "src", src)[region])
    write_values(call, "out", out, result)
    return out, src


def elementwise_cycles(cost: ElementCost) -> CallCycles:
    """The cycle function of a unary pointwise kernel of `cost`."""
    return lambda call: pointwise_cycles(call.formats(), call.tile, call.target,
                                         *cost(call.target))


def unary_kernel(symbol: str, function: Callable[[np.ndarray], np.ndarray], doc: str,
                 cost: ElementCost = one_pass) -> Kernel:
    """The record of a unary pointwise kernel (descriptors: out, src): out = function(src)
    in float64, one rounding to out's precision; `doc` says what function computes."""
    cycles = elementwise_cycles(cost)

    def run(call: KernelCall) -> int:
        return pointwise_cycles(elementwise(call, function), call.tile, call.target,
                                *cost(call.target))

    return Kernel(
        described(symbol, ("out", "src"), (),
                  f"{doc}, one rounding to out's precision (descriptors: out, src; the same "
                  "shard box). Padding of out is written as zeros."),
        run,
        cycles,
    )


def _check_broadcast(call: KernelCall, name: str, operand: ShardGeometry,
                     out: ShardGeometry) -> None:
    offset = out.rank - operand.rank
    if offset < 0 or any(e not in (1, out.shape[offset + j]) for j, e in enumerate(operand.shape)):
        raise call.fail(f"operand '{name}' of shape {operand.shape} does not broadcast to "
                        f"out's shape {out.shape}")


def _operand_view(call: KernelCall, name: str, operand: ShardGeometry, out: ShardGeometry,
                  region: Box) -> np.ndarray:
    """The operand's values over out's `region`, broadcast to the region's shape."""
    offset = out.rank - operand.rank
    starts, stops = [], []
    for j, extent in enumerate(operand.shape):
        broadcast = extent == 1 and out.shape[offset + j] != 1
        starts.append(0 if broadcast else region[0][offset + j])
        stops.append(1 if broadcast else region[1][offset + j])
    values = read_region(call, name, operand, (tuple(starts), tuple(stops)),
                         "its view [{need}] of out's box is not resident in its shard [{held}] "
                         "on this tile")
    region_shape = tuple(b - a for a, b in zip(*region))
    return np.broadcast_to(values.reshape((1,) * offset + values.shape), region_shape)


def add(call: KernelCall) -> int:
    formats = operand_formats(call)
    out = formats["out"]
    for name in ("lhs", "rhs"):
        _check_broadcast(call, name, formats[name], out)
    box = box_on(call, "out", out)
    region = logical_box(box, out)
    result = np.zeros(out.chunk)
    if not is_empty(region):  # a tile of only padding reads no operand
        total = (_operand_view(call, "lhs", formats["lhs"], out, region)
                 + _operand_view(call, "rhs", formats["rhs"], out, region))
        result[local_slices(region, box[0])] = total
    write_values(call, "out", out, result)
    return add_cycles(out, formats["lhs"], formats["rhs"], call.tile, call.target)


RECORDS: tuple[Kernel, ...] = (
    unary_kernel("gelu", exact_gelu, "out = gelu(src), exact erf form computed in float64",
                 lambda target: (target.erf_cycles_per_element, 1)),
    unary_kernel(
        "gelu_tanh", tanh_gelu,
        "out = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) of x = src, the tanh form of "
        "gelu, computed in float64",
        lambda target: (target.tanh_cycles_per_element, target.tanh_gelu_f32_passes)),
    Kernel(
        described(
            "add", ("out", "lhs", "rhs"), (),
            "out = lhs + rhs with NumPy broadcasting (descriptors: out, lhs, rhs); each "
            "operand's view of this tile's out box must be in its shard on this tile. float64 "
            "sum, one rounding to out's precision; padding of out is written as zeros.",
        ),
        add,
        of_formats(add_cycles),
    ),
)
