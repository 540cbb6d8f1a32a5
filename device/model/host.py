"""Host I/O: write graph inputs into tile memory and read outputs back, from `HostTensor`s.

Every shard is the padded rectangle [origin, origin + padded) of the logical tensor, zero
beyond the tensor's extent, stored in the tensor's element order and precision at
(tile, address). Reading back clips each shard at the tensor's edges; every element of an
output must be covered by some shard.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from device.layouts import pack, round_to_fp8, shard_bytes, unpack
from device.model.errors import ModelError
from device.model.memory import TileMemory
from device.package import HostTensor, Package
from device.target import Precision

# The NumPy type an output is returned in, by storage precision (FP8 values q * 2**scale are
# exact in float32 for every scale).
OUTPUT_DTYPES: dict[str, type[np.floating[Any]]] = {Precision.F16: np.float16, Precision.F32: np.float32,
                 Precision.F8F143: np.float32}
FP8_DTYPE = np.dtype(ml_dtypes.float8_e4m3fnuz)


def _check_metadata(tensor: HostTensor, role: str) -> None:
    rank = len(tensor.shape)
    origins = np.asarray(tensor.origins)
    if len(tensor.padded) != rank or origins.ndim != 2 or origins.shape[1] != rank:
        raise ModelError(
            f"{role} '{tensor.name}': shape {tensor.shape}, padded shard {tensor.padded} and "
            f"origins of shape {origins.shape} disagree on the rank"
        )
    count = tensor.shard_count()
    if origins.shape[0] != count or np.asarray(tensor.addresses).shape[0] != count:
        raise ModelError(f"{role} '{tensor.name}': tiles, addresses and origins have different "
                         f"shard counts")


def _windows(tensor: HostTensor, origin: np.ndarray) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    """(slice of the logical tensor, slice of the shard) that a shard at `origin` covers."""
    logical, local = [], []
    for start, extent, size in zip(origin.tolist(), tensor.padded, tensor.shape, strict=True):
        stop = min(start + extent, size)
        count = max(stop - start, 0)
        logical.append(slice(start, start + count))
        local.append(slice(0, count))
    return tuple(logical), tuple(local)


def _shards(tensor: HostTensor):
    for index in range(tensor.shard_count()):
        yield (index, int(tensor.tiles[index]), int(tensor.addresses[index]),
               np.asarray(tensor.origins[index], dtype=np.int64))


def write_input(memory: TileMemory, tensor: HostTensor, value: np.ndarray) -> None:
    _check_metadata(tensor, "input")
    array = np.asarray(value)
    if array.shape != tuple(tensor.shape):
        raise ModelError(f"input '{tensor.name}': expected shape {tuple(tensor.shape)}, "
                         f"got {array.shape}")
    values = array.astype(np.float64)
    if tensor.precision == Precision.I32:
        check_indices(tensor, values)
    for index, tile, address, origin in _shards(tensor):
        shard = np.zeros(tensor.padded, dtype=np.float64)
        logical, local = _windows(tensor, origin)
        shard[local] = values[logical]
        memory.write(tile, address, pack(shard, tensor.order, tensor.precision, tensor.scale),
                     f"input '{tensor.name}' shard {index}")


def check_indices(tensor: HostTensor, values: np.ndarray) -> None:
    """An i32 input holds integers that fit in 32 bits: anything else would be stored as
    another index than the one given."""
    bad = (values != np.rint(values)) | (values < -(2**31)) | (values >= 2**31)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ModelError(f"input '{tensor.name}': element {list(where)} = {values[where]} is not "
                         "an i32 integer (an index input holds integers)")


def write_inputs(memory: TileMemory, package: Package, inputs: dict[str, np.ndarray]) -> None:
    expected = [t.name for t in package.inputs]
    missing = [n for n in expected if n not in inputs]
    unknown = [n for n in inputs if n not in expected]
    if missing or unknown:
        raise ModelError(
            f"inputs do not match the package: missing {missing}, unknown {unknown} "
            f"(the package's inputs: {expected})"
        )
    for tensor in package.inputs:
        write_input(memory, tensor, inputs[tensor.name])


def read_output(memory: TileMemory, tensor: HostTensor) -> np.ndarray:
    _check_metadata(tensor, "output")
    result = np.zeros(tensor.shape, dtype=np.float64)
    covered = np.zeros(tensor.shape, dtype=bool)
    nbytes = shard_bytes(tuple(tensor.padded), tensor.precision)
    for index, tile, address, origin in _shards(tensor):
        raw = memory.read(tile, address, nbytes, f"output '{tensor.name}' shard {index}")
        shard = unpack(raw, tuple(tensor.padded), tensor.order, tensor.precision, tensor.scale)
        logical, local = _windows(tensor, origin)
        result[logical] = shard[local]
        covered[logical] = True
    if not covered.all():
        first = tuple(int(i) for i in np.argwhere(~covered)[0])
        raise ModelError(f"output '{tensor.name}': element {first} is in no shard "
                         f"({int((~covered).sum())} elements uncovered)")
    return result.astype(OUTPUT_DTYPES[tensor.precision])


def values_of_stored(tensor: HostTensor, array: np.ndarray) -> np.ndarray:
    """An input given as the reference interpreter holds it (an FP8 tensor as the
    float8_e4m3fnuz array of its stored q) as the values the model writes (q * 2**scale)."""
    array = np.asarray(array)
    if tensor.precision == Precision.F8F143 and array.dtype == FP8_DTYPE:
        return array.astype(np.float64) * 2.0**tensor.scale
    return array


def stored_of_values(tensor: HostTensor, values: np.ndarray) -> np.ndarray:
    """An output the model read (values) as the reference interpreter holds it: an FP8
    tensor as its stored q (exact: the values came from FP8 codes)."""
    if tensor.precision == Precision.F8F143:
        return round_to_fp8(np.asarray(values, np.float64) / 2.0**tensor.scale)
    return values


def read_outputs(memory: TileMemory, package: Package) -> dict[str, np.ndarray]:
    return {tensor.name: read_output(memory, tensor) for tensor in package.outputs}
