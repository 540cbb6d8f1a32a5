"""Helpers for the kernel tests: place a tensor's shards in tile memory in a format, run one
kernel step through the model, read the shards back (no tests here)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from device.kernels import descriptor_words, kernel_cycles
from device.layouts import pack, unpack
from device.model.kernel_steps import run_kernel_step
from device.model.memory import TileMemory
from device.package import KernelStep
from device.shard_geometry import ShardGeometry
from device.target import IPU21

T = IPU21
# Three areas of 64 KiB-aligned memory apart from each other and from the code region.
BASE = T.element_of(T.code_region[1] - 1).end
AREAS = [BASE + k * 0x10000 for k in range(6)]


def fmt(shape, blocks, partitions, precision="f32", order="row_major", replication=1,
        scale=0, pads=None) -> ShardGeometry:
    rank = len(shape)
    tiles = replication * math.prod(partitions)
    return ShardGeometry(tuple(shape), tuple(blocks), tuple(partitions),
                         tuple(pads or (True,) * rank), replication, tiles, precision, order,
                         scale)


def padded_values(g: ShardGeometry, values: np.ndarray) -> np.ndarray:
    padded = np.zeros(g.padded_shape)
    padded[tuple(slice(0, e) for e in g.shape)] = values
    return padded


def shard_slices(g: ShardGeometry, tile: int) -> tuple[slice, ...]:
    starts, stops = g.shard_box(tile)
    return tuple(slice(a, b) for a, b in zip(starts, stops))


def place(memory: TileMemory, g: ShardGeometry, values: np.ndarray, address: int) -> None:
    """Write every tile's shard of `values` (logical shape; padding zero) at `address`."""
    padded = padded_values(g, values)
    for tile in range(g.tiles_used):
        memory.write(tile, address, pack(padded[shard_slices(g, tile)], g.order, g.precision,
                                         g.scale))


def read_shard(memory: TileMemory, g: ShardGeometry, tile: int, address: int) -> np.ndarray:
    raw = memory.read(tile, address, g.shard_bytes())
    return unpack(raw, g.chunk, g.order, g.precision, g.scale)


def collect(memory: TileMemory, g: ShardGeometry, address: int,
            check_replicas: bool = True) -> np.ndarray:
    """The padded tensor from every tile's shard; replicas must agree."""
    padded = np.full(g.padded_shape, np.nan)
    for tile in range(g.tiles_used):
        shard = read_shard(memory, g, tile, address)
        window = shard_slices(g, tile)
        if tile >= g.partition_count and check_replicas:
            np.testing.assert_array_equal(padded[window], shard)
        padded[window] = shard
    return padded


def logical(g: ShardGeometry, padded: np.ndarray) -> np.ndarray:
    return padded[tuple(slice(0, e) for e in g.shape)]


def padding_is_zero(g: ShardGeometry, padded: np.ndarray) -> bool:
    mask = np.ones(g.padded_shape, dtype=bool)
    mask[tuple(slice(0, e) for e in g.shape)] = False
    return bool((padded[mask] == 0).all())


def run(memory: TileMemory, symbol: str, tiles, pointers, scalars) -> int:
    """Run one step of `symbol` on `tiles` with the same pointers on every tile; returns the
    step's cycles, checked against the pure cycle function for the slowest tile."""
    tiles = list(tiles)
    step = KernelStep(symbol, np.asarray(tiles, np.int32),
                      np.asarray([list(pointers)] * len(tiles), np.int64), tuple(scalars))
    cycles = run_kernel_step(memory, step, "step 0", T)
    assert cycles == max(kernel_cycles(symbol, scalars, t, T) for t in tiles)
    return cycles


def descriptors(*formats: ShardGeometry) -> list[int]:
    return list(descriptor_words(*formats))


# ---- independent rounding -------------------------------------------------------------------
def round_to(values: np.ndarray, precision: str, scale: int = 0) -> np.ndarray:
    """float64 values rounded as stored: NumPy's IEEE casts; FP8 saturating at 240 * 2**scale
    (ml_dtypes, from float32: the test values are exact there)."""
    values = np.asarray(values, np.float64)
    if precision == "f8f143":
        q = np.clip(values * 2.0**-scale, -240, 240).astype(np.float32)
        return q.astype(ml_dtypes.float8_e4m3fnuz).astype(np.float64) * 2.0**scale
    with np.errstate(over="ignore"):
        return values.astype({"f16": np.float16, "f32": np.float32}[precision]).astype(np.float64)


def random_values(rng: np.random.Generator, shape, precision: str, scale: int = 0,
                  spread: float = 1.0) -> np.ndarray:
    """Random values already representable in `precision` (so loading is exact)."""
    return round_to(rng.normal(0, spread, shape), precision, scale)
