"""What the report says about where memory and cycles go (`tools/report.py` draws it).

- `tile_liveness`: the bytes live on one tile at every program position (the positions
  place-memory allocates by: ops of the tile-level function in a pre-order walk), split into
  the buffers that hold the most of that tile's memory over the program (bytes times
  positions live), each named, the rest together, and the exchange rows
  (code), which are resident throughout; with each named buffer's kind, memory class, size
  and live range as the graph ops that open and close it.
- `op_phases`: modeled cycles per graph op split into sync, exchange and compute, with the
  format conversions between plans (the gather's exchanges and kernels, `convert_shard`
  repacking) as bars of their own, `"<graph op> (conversion)"`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from device.package import ExchangeStep, KernelStep, Package
from device.target import IPU21, Target
from tools.run_summary import code_bytes_per_tile, graph_op_of, step_phases

# Work a conversion between two plans does (passes/operators/conversions.py, gather.py).
CONVERSION_KERNELS = {"convert_shard", "gather_shard", "copy_words"}
CONVERSION_EXCHANGE = re.compile(r"input shard")


@dataclass(frozen=True)
class NamedBuffer:
    name: str
    kind: str
    memory: str
    bytes: int
    start: int  # first and last program position at which it is live
    stop: int
    opened_by: str  # the graph op of the work at `start`, and at `stop`
    closed_by: str


@dataclass(frozen=True)
class TileLiveness:
    tile: int
    positions: int
    bands: dict[str, np.ndarray]  # label -> bytes live at each position (stacked in order)
    buffers: list[NamedBuffer]  # the named bands' buffers, largest first
    peak_bytes: int
    peak_position: int
    peak_op: str


def position_ops(func: FuncOp) -> list[str]:
    """The graph op each program position works for (its provenance), else the op name."""
    labels = []
    for op in func.body.walk():
        provenance = op.properties.get("provenance") or op.attributes.get("provenance")
        source = getattr(provenance, "op", None)
        labels.append(source.data if source is not None else op.name)
    return labels


def tile_liveness(module: ModuleOp, package: Package, tile: int, named: int = 10,
                  target: Target = IPU21) -> TileLiveness:
    from ipu_dialects.tile import BufferOp
    from passes.place_memory import FunctionPlacement

    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    placement = FunctionPlacement(func, target, package.tiles)
    labels = position_ops(func)
    buffers = [op for op in func.body.block.ops if isinstance(op, BufferOp) and tile in op.tiles]
    positions = max(len(labels), 1)

    def live(buffer: BufferOp) -> np.ndarray:
        start, stop = placement.spans.get(buffer, (0, positions - 1))
        band = np.zeros(positions, np.int64)
        band[start:min(stop, positions - 1) + 1] = placement.extent(buffer)
        return band

    def held(buffer: BufferOp) -> int:  # bytes x positions: what fills the tile, and long
        start, stop = placement.spans.get(buffer, (0, positions - 1))
        return placement.extent(buffer) * (min(stop, positions - 1) - start + 1)

    by_size = sorted(buffers, key=lambda b: (-held(b), b.sym_name.data))
    bands: dict[str, np.ndarray] = {}
    chosen = []
    for buffer in by_size[:named]:
        start, stop = placement.spans.get(buffer, (0, positions - 1))
        stop = min(stop, positions - 1)
        chosen.append(NamedBuffer(buffer.sym_name.data, buffer.kind.data, buffer.memory.data,
                                  placement.extent(buffer), start, stop, labels[start],
                                  labels[stop]))
        bands[f"{buffer.sym_name.data} ({buffer.kind.data}, {buffer.memory.data})"] = live(buffer)
    rest = by_size[named:]
    if rest:
        bands[f"{len(rest)} other buffers"] = sum((live(b) for b in rest),
                                                  np.zeros(positions, np.int64))
    bands["exchange rows (code)"] = np.full(positions, code_bytes_per_tile(package)[tile])
    total = sum(bands.values(), np.zeros(positions, np.int64))
    peak = int(np.argmax(total))
    return TileLiveness(tile, positions, bands, chosen, int(total[peak]), peak, labels[peak])


def is_conversion(step: ExchangeStep | KernelStep) -> bool:
    """Work of a conversion between plans: the gather's exchanges and kernels and the
    repacking kernels (a GEMM's own rounding of its partials is the GEMM's)."""
    if isinstance(step, KernelStep):
        return step.symbol in CONVERSION_KERNELS and "partials" not in step.provenance
    return CONVERSION_EXCHANGE.search(step.provenance) is not None


def op_phases(package: Package, cycles_by_step: list[int],
              target: Target = IPU21) -> dict[str, dict[str, int]]:
    """Cycles by graph op and phase, conversions apart; the largest first."""
    split: dict[str, dict[str, int]] = defaultdict(lambda: {"sync": 0, "exchange": 0,
                                                            "compute": 0})
    for step, cycles in zip(package.executed(), cycles_by_step, strict=True):
        label = graph_op_of(step.provenance)
        if is_conversion(step):
            label += " (conversion)"
        for phase, share in step_phases(step, cycles, target).items():
            split[label][phase] += share
    return dict(sorted(split.items(), key=lambda item: -sum(item[1].values())))
