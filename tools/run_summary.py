"""What one `ipu-run` did, as data: where the modeled cycles go, how much memory and exchange
each tile uses, and the JSON object `ipu-run --json` prints.

Cycles come from the device model's per-step counts (`RunResult.cycles_by_step`); an exchange
step is a sync (`Target.sync_cycles`) followed by its exchange events, a kernel step is
compute. Memory per tile comes from the placed `tile.buffer` ops and the package's exchange
rows (the code); exchange bytes per tile from the words each tile's rows send.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from device.exchange_timeline import row_timeline
from device.isa import decode
from device.package import ExchangeStep, KernelStep, Package, flat_steps
from device.target import IPU21, WORD_BYTES, Target

_GRAPH_OP = re.compile(r"^(\S+(?: %\S+)?)")  # "graph.gemm %c" from "graph.gemm %c %b: ..."

CODE = "exchange rows (code)"


def graph_op_of(provenance: str) -> str:
    """The graph op (name and result) a step's provenance names."""
    match = _GRAPH_OP.match(provenance)
    return match.group(1) if match else "(unknown)"


def step_phases(step: ExchangeStep | KernelStep, cycles: int, target: Target) -> dict[str, int]:
    """The step's cycles by phase: sync and exchange events, or compute."""
    if isinstance(step, ExchangeStep):
        sync = min(cycles, target.sync_cycles)
        return {"sync": sync, "exchange": cycles - sync}
    return {"compute": cycles}


def cycle_breakdown(package: Package, cycles_by_step: list[int],
                    target: Target = IPU21) -> dict:
    """Modeled cycles: the total, by phase (sync, exchange, compute), by kernel and by graph
    op; each breakdown adds up to the total."""
    by_phase: dict[str, int] = {"sync": 0, "exchange": 0, "compute": 0}
    by_kernel: dict[str, int] = defaultdict(int)
    by_graph_op: dict[str, int] = defaultdict(int)
    for step, cycles in zip(package.executed(), cycles_by_step, strict=True):
        for phase, share in step_phases(step, cycles, target).items():
            by_phase[phase] += share
        if isinstance(step, KernelStep):
            by_kernel[step.symbol] += cycles
        by_graph_op[graph_op_of(step.provenance)] += cycles
    return {"total": sum(cycles_by_step), "by_phase": by_phase, "by_kernel": dict(by_kernel),
            "by_graph_op": dict(by_graph_op)}


def memory_per_tile(module: ModuleOp, package: Package) -> dict[str, np.ndarray]:
    """Bytes per tile by `"<kind> (<memory class>)"` of the placed buffers (with their access
    tails), plus the exchange rows the tile image holds."""
    from ipu_dialects.tile import BufferOp

    usage: dict[str, np.ndarray] = {}
    for buffer in module.walk():
        if not isinstance(buffer, BufferOp):
            continue
        label = f"{buffer.kind.data} ({buffer.memory.data})"
        per_tile = usage.setdefault(label, np.zeros(package.tiles, np.int64))
        per_tile[buffer.tiles.as_array()] += buffer.byte_size + buffer.tail_bytes
    usage[CODE] = code_bytes_per_tile(package)
    return dict(sorted(usage.items()))


def code_bytes_per_tile(package: Package) -> np.ndarray:
    """Bytes of exchange rows in each tile's image: each (tile, slot address) once, as the
    loader writes it."""
    tiles, addresses, lengths = [], [], []
    row_bytes = np.array([len(r) * WORD_BYTES for r in package.rows] or [0], np.int64)
    for _, step in flat_steps(package.steps):
        if isinstance(step, ExchangeStep):
            holders = np.flatnonzero(step.row_id >= 0)
            tiles.append(holders)
            addresses.append(np.full(holders.size, step.row_address, np.int64))
            lengths.append(row_bytes[step.row_id[holders]])
    if not tiles:
        return np.zeros(package.tiles, np.int64)
    tile, address, length = (np.concatenate(a) for a in (tiles, addresses, lengths))
    keys = tile.astype(np.int64) * (1 << 40) + address
    order = np.lexsort((-length, keys))  # the longest row first within each (tile, slot)
    first = np.unique(keys[order], return_index=True)[1]
    chosen = order[first]
    return np.bincount(tile[chosen], weights=length[chosen], minlength=package.tiles).astype(
        np.int64)


def exchange_bytes_per_tile(package: Package) -> np.ndarray:
    """Bytes each tile sends over the whole run (its rows' send intervals with a direction)."""
    sent_words_of_row: dict[int, int] = {}
    sent = np.zeros(package.tiles, np.int64)
    for step in package.executed():
        if not isinstance(step, ExchangeStep):
            continue
        for row_id in np.unique(step.row_id[step.row_id >= 0]).tolist():
            if row_id not in sent_words_of_row:
                timeline = row_timeline(decode(package.rows[row_id].tolist(),
                                               base_address=step.row_address))
                sent_words_of_row[row_id] = sum(s.words for s in timeline.sends if s.direction)
            sent[step.row_id == row_id] += sent_words_of_row[row_id] * WORD_BYTES
    return sent


def finite_or_none(value: float) -> float | None:
    """JSON has no infinity: an error that is not finite is null (and the check FAILs)."""
    return value if math.isfinite(value) else None


@dataclass
class RunFacts:
    """What `ipu-run` knows after a device run, for `--json`, `--report` and the trace."""

    file: str
    function: str
    passed: bool
    max_abs: float
    max_rel: float
    note: str
    exchange_errors: list[str]
    package: Package
    cycles_by_step: list[int]
    compile_seconds: float
    pass_seconds: dict[str, float]

    def summary(self, target: Target = IPU21) -> dict:
        tiles_used = self.package.metadata.get("tiles_used", self.package.tiles)
        cycles = cycle_breakdown(self.package, self.cycles_by_step, target)
        return {
            "file": self.file,
            "function": self.function,
            "check": "PASS" if self.passed else "FAIL",
            "max_abs_error": finite_or_none(self.max_abs),
            "max_rel_error": finite_or_none(self.max_rel),
            "note": self.note,
            "exchange_errors": len(self.exchange_errors),
            "modeled_cycles": cycles,
            "modeled_seconds": cycles["total"] / target.clock_hz,
            # the selector's estimate of the total (None: the module had no selected plans)
            "estimated_cycles": self.package.metadata.get("estimated_cycles"),
            "tiles_used": tiles_used,
            "tiles": self.package.tiles,
            "compile_seconds": {"total": self.compile_seconds, "per_pass": self.pass_seconds},
        }
