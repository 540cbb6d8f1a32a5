"""`trace.json`: one `ipu-run` as a Chrome trace-event file (open it in ui.perfetto.dev or
chrome://tracing).

Two processes. "device model": one track per tile group (tiles that do the same steps; past
`MAX_TRACKS` groups, runs of consecutive tiles, a slice showing when any of them takes part),
with a `sync` and an `exchange` slice for each exchange step and a compute slice (the
kernel's symbol) for each kernel step, on the modeled clock (`Target.clock_hz`). "compiler":
the wall-time span of each pass, the stages of `ipu-pipeline` nested under it, and the package
build. Times are microseconds, as the format asks.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from device.package import ExchangeStep, KernelStep, Package
from device.target import IPU21, Target
from tools.pass_timing import PassTimer
from tools.run_summary import step_phases

DEVICE_PID, COMPILER_PID = 1, 2
MAX_TRACKS = 64  # Perfetto stays usable; 1472 tracks of thousands of slices would not


def step_tiles(step: ExchangeStep | KernelStep, tiles: int) -> np.ndarray:
    """The tiles that take part in a step (a sync involves every tile)."""
    mask = np.zeros(tiles, bool)
    if isinstance(step, ExchangeStep):
        mask[step.row_id >= 0] = True
    else:
        mask[step.tiles] = True
    return mask


def tile_groups(package: Package) -> list[np.ndarray]:
    """Tiles grouped by the steps they take part in, groups in order of their first tile;
    more than `MAX_TRACKS` such groups become `MAX_TRACKS` runs of consecutive tiles."""
    participation = np.stack([step_tiles(s, package.tiles) for s in package.executed()], axis=1) \
        if package.steps else np.zeros((package.tiles, 0), bool)
    _, group_of = np.unique(participation, axis=0, return_inverse=True)
    group_of = np.asarray(group_of).reshape(-1)
    groups = [np.flatnonzero(group_of == g) for g in np.unique(group_of)]
    if len(groups) > MAX_TRACKS:
        return [run for run in np.array_split(np.arange(package.tiles), MAX_TRACKS) if run.size]
    return sorted(groups, key=lambda tiles: int(tiles[0]))


def tiles_label(tiles: np.ndarray) -> str:
    """`tiles 0-3, 7` style: consecutive runs collapsed."""
    runs, start = [], int(tiles[0])
    for previous, current in zip(tiles[:-1].tolist(), tiles[1:].tolist(), strict=True):
        if current != previous + 1:
            runs.append((start, previous))
            start = current
    runs.append((start, int(tiles[-1])))
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
    return f"tiles {text}" if len(text) < 60 else f"{tiles.size} tiles from {tiles[0]}"


def metadata(pid: int, tid: int | None, key: str, name: str) -> dict:
    event = {"ph": "M", "pid": pid, "name": key, "args": {"name": name}}
    if tid is not None:
        event["tid"] = tid
    return event


def device_events(package: Package, cycles_by_step: list[int], target: Target) -> list[dict]:
    groups = tile_groups(package)
    events = [metadata(DEVICE_PID, None, "process_name", "device model (modeled time)")]
    for tid, tiles in enumerate(groups):
        events.append(metadata(DEVICE_PID, tid, "thread_name", tiles_label(tiles)))
        events.append({"ph": "M", "pid": DEVICE_PID, "tid": tid, "name": "thread_sort_index",
                       "args": {"sort_index": tid}})
    microseconds = 1e6 / target.clock_hz
    now = 0
    for index, (step, cycles) in enumerate(zip(package.executed(), cycles_by_step, strict=True)):
        taking_part = step_tiles(step, package.tiles)
        start = now
        for phase, length in step_phases(step, cycles, target).items():
            name = step.symbol if isinstance(step, KernelStep) else phase  # its one phase: compute
            for tid, tiles in enumerate(groups):
                busy = int(np.count_nonzero(taking_part[tiles]))
                if phase != "sync" and not busy:
                    continue
                events.append({
                    "ph": "X", "pid": DEVICE_PID, "tid": tid, "name": name, "cat": phase,
                    "ts": start * microseconds, "dur": length * microseconds,
                    "args": {"step": index, "cycles": length, "work": step.provenance,
                             "tiles taking part": busy},
                })
            start += length
        now += cycles
    return events


def compiler_events(timer: PassTimer) -> list[dict]:
    events = [metadata(COMPILER_PID, None, "process_name", "compiler (wall time)"),
              metadata(COMPILER_PID, 0, "thread_name", "passes")]
    for span in timer.grouped():
        events.append({
            "ph": "X", "pid": COMPILER_PID, "tid": 0, "name": span.name,
            "cat": "pass" if span.parent else "compile",
            "ts": span.start * 1e6, "dur": span.seconds * 1e6,
            "args": {"parent": span.parent or ""},
        })
    return events


def write_trace(path: Path, package: Package, cycles_by_step: list[int], timer: PassTimer,
                target: Target = IPU21) -> Path:
    trace = {
        "traceEvents": device_events(package, cycles_by_step, target) + compiler_events(timer),
        "displayTimeUnit": "ns",
        "otherData": {"function": package.function, "tiles": package.tiles,
                      "clock_hz": target.clock_hz},
    }
    path.write_text(json.dumps(trace))
    return path
