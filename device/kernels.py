"""The kernel table: every kernel symbol a package may call, one `Kernel` record each.

A record (`device.model.kernel_call.Kernel`) holds a kernel's ABI (`device.kernel_abi`), its
model implementation, its optional batched form and its cycle function; it is written
beside the implementation, in the family module of `device/model/` listed in `FAMILIES`
(the GEMM family's records come from one table, `device.model.kernels_gemm.GEMM_FAMILIES`).
Its `.S` source in `device/sources/` carries the same ABI in comments, which
test/pytest/test_kernels.py compares with the record.

Readers: the package schema and the `tile.kernel` verifier check calls against `KERNELS`
(the ABIs); the model runs `RECORDS` (`device/model/kernel_steps.py`); the compiler's cost
model asks `kernel_cycles`, which is the record's own cycle function (`step_cycles` for a
whole step: the max over its tiles, computed at once for the layout kernels).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from device.kernel_abi import KernelAbi
from device.model import (
    kernels_attention,
    kernels_attention_blocked,
    kernels_embedding,
    kernels_gemm,
    kernels_layer_norm,
    kernels_layout,
    kernels_pointwise,
    kernels_views,
)
from device.model.kernel_call import Kernel
from device.shard_geometry import ShardGeometry
from device.target import Target

# The modules whose `RECORDS` make the table, in table order.
FAMILIES = (kernels_gemm, kernels_layout, kernels_pointwise, kernels_attention,
            kernels_layer_norm, kernels_views, kernels_attention_blocked, kernels_embedding)


class UnknownKernelError(KeyError):
    """A kernel symbol that the table does not know."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


def _by_symbol(records: Sequence[Kernel]) -> dict[str, Kernel]:
    table: dict[str, Kernel] = {}
    for record in records:
        if record.symbol in table:
            raise ValueError(f"kernel '{record.symbol}' has two records")
        table[record.symbol] = record
    return table


RECORDS: dict[str, Kernel] = _by_symbol([r for family in FAMILIES for r in family.RECORDS])
KERNELS: dict[str, KernelAbi] = {symbol: record.abi for symbol, record in RECORDS.items()}


def get_kernel(symbol: str) -> KernelAbi:
    try:
        return KERNELS[symbol]
    except KeyError:
        raise UnknownKernelError(
            f"unknown kernel symbol '{symbol}'; the ABI registry (device/kernels.py) knows: "
            f"{', '.join(sorted(KERNELS))}"
        ) from None


def kernel_cycles(symbol: str, scalars: Sequence[int], tile: int, target: Target) -> int:
    """Cycles of one call of `symbol` with these scalars (descriptors included) on `tile`:
    what the model charges for it. Raises `UnknownKernelError` or `ValueError` (e.g.
    `DescriptorError`) for a bad call."""
    key = (symbol, tuple(scalars), tile, id(target))
    known = KNOWN_CYCLES.get(key)
    if known is not None and known[0] is target:
        return known[1]
    get_kernel(symbol)  # UnknownKernelError, naming the known symbols
    cycles = RECORDS[symbol].call_cycles(scalars, tile, target)
    if len(KNOWN_CYCLES) >= KNOWN_CALLS:
        KNOWN_CYCLES.clear()
    KNOWN_CYCLES[key] = (target, cycles)
    return cycles


# Cycles of calls asked before (a pure function of the call): the selector prices the same
# layout copy for many candidates, some of them a view walk over every element of a shard.
# Keyed by the target's identity (it holds tables, and is not hashable), which the value
# keeps alive; bounded: emptied when full. A bad call raises each time.
KNOWN_CYCLES: dict[tuple, tuple[Target, int]] = {}
KNOWN_CALLS = 1 << 14


def step_cycles(symbol: str, scalars: Sequence[int], tiles: Sequence[int] | np.ndarray,
                target: Target) -> int:
    """Cycles of one step of `symbol` on `tiles` (`kernel_step_cycles` of `kernel_cycles`
    over them: what the model charges the step), computed for all tiles at once where the
    record can (`Kernel.step_cycles`: `gather_shard`, `gather_view`, `view_shard`). Same
    errors as `kernel_cycles`."""
    get_kernel(symbol)
    return RECORDS[symbol].call_step_cycles(scalars, tiles, target)


def f32_bits(value: float) -> int:
    """The f32 bit pattern of `value` rounded to f32 (past the f32 range: inf), as an
    unsigned 32-bit word (attention's `scale_bits`)."""
    with np.errstate(over="ignore"):
        return int(np.array([value], np.float64).astype("<f4").view("<u4")[0])


def descriptor_words(*formats: ShardGeometry) -> tuple[int, ...]:
    """The variadic words of a descriptor kernel: each pointer's format, in pointer order."""
    return tuple(word for fmt in formats for word in fmt.encode())
