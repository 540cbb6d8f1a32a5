"""The package: finalized tile programs, tile images and host metadata.

This is the contract between the compiler's final emitter and whoever runs the result
(the executable device model here; `ipu-driver`/`ipu-runtime` on hardware). It holds no IR.

Programs are bulk-synchronous and lock-stepped: ``steps`` is one ordered list shared by all
tiles, and each step says, per tile, what that tile does in it. Per-tile differences are
dense NumPy arrays, never per-tile objects, so a 1472-tile package stays small.

- `ExchangeStep`: a sync, then one exchange phase. Tile t runs the row ``rows[row_id[t]]``
  whose words were written, by its tile image, at ``row_address`` (the same slot address on
  every tile); ``row_id[t] == -1`` means the tile's row is empty for this phase.
- `KernelStep`: tiles ``tiles[i]`` call ``symbol`` with pointer arguments ``pointers[i]``
  (absolute byte addresses, in the ABI registry's order) and the shared ``scalars``.

Tile images: the only bytes the compiler puts into tile memory are the exchange rows; each
tile's image is its rows at their slot addresses (`tile_image`). Host tensors are written by
the host from `HostTensor` metadata: each shard is the padded rectangle ``origin`` +
``padded`` of the logical tensor (zero beyond the tensor), stored in ``order`` and
``precision`` at ``address`` on ``tile``.

On disk (`Package.save(dir)` / `Package.load(dir)`, `FORMAT_VERSION`): ``metadata.json``
(target, tiles, function, steps, host tensors, metadata), ``program.npz`` (the row words and
the per-step and per-tensor arrays) and ``program.s`` (the supervisor assembly).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

FORMAT_VERSION = 1


@dataclass
class HostTensor:
    """Where a graph input or output lives: one record per shard, as parallel arrays."""

    name: str
    shape: tuple[int, ...]
    precision: str  # device.target.Precision name
    order: str  # device.layouts order name
    padded: tuple[int, ...]  # stored shard shape, the same for every shard
    tiles: np.ndarray  # int32 [S]
    addresses: np.ndarray  # int64 [S] absolute byte address of the shard
    origins: np.ndarray  # int64 [S, rank] logical start of the shard per axis
    scale: int = 0  # FP8 power-of-two scale

    def shard_count(self) -> int:
        return int(self.tiles.shape[0])


@dataclass
class ExchangeStep:
    row_address: int
    row_id: np.ndarray  # int32 [tiles]; -1 = no row on that tile
    provenance: str = ""


@dataclass
class KernelStep:
    symbol: str
    tiles: np.ndarray  # int32 [n]
    pointers: np.ndarray  # int64 [n, pointer_count]
    scalars: tuple[int, ...] = ()
    provenance: str = ""


Step = ExchangeStep | KernelStep


@dataclass
class Package:
    target: str
    tiles: int
    rows: list[np.ndarray]  # unique encoded rows, uint32 words each
    steps: list[Step]
    inputs: list[HostTensor]
    outputs: list[HostTensor]
    function: str = "main"
    assembly: str = ""  # supervisor assembly as emitted, for people
    metadata: dict = field(default_factory=dict)

    def tile_image(self, tile: int) -> list[tuple[int, np.ndarray]]:
        """The (address, words) segments the loader writes into `tile`'s memory."""
        segments = []
        for step in self.steps:
            if isinstance(step, ExchangeStep) and step.row_id[tile] >= 0:
                segments.append((step.row_address, self.rows[int(step.row_id[tile])]))
        return segments

    # ---- persistence ------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {}
        row_lengths = np.array([len(r) for r in self.rows], dtype=np.int64)
        arrays["row_lengths"] = row_lengths
        arrays["row_words"] = (
            np.concatenate(self.rows).astype(np.uint32) if self.rows else np.zeros(0, np.uint32)
        )
        steps_meta = []
        for i, step in enumerate(self.steps):
            if isinstance(step, ExchangeStep):
                arrays[f"step{i}_row_id"] = step.row_id
                steps_meta.append(
                    {"kind": "exchange", "row_address": step.row_address,
                     "provenance": step.provenance}
                )
            else:
                arrays[f"step{i}_tiles"] = step.tiles
                arrays[f"step{i}_pointers"] = step.pointers
                steps_meta.append(
                    {"kind": "kernel", "symbol": step.symbol, "scalars": list(step.scalars),
                     "provenance": step.provenance}
                )
        tensors_meta = {}
        for role, tensors in (("inputs", self.inputs), ("outputs", self.outputs)):
            tensors_meta[role] = []
            for j, t in enumerate(tensors):
                for key in ("tiles", "addresses", "origins"):
                    arrays[f"{role}{j}_{key}"] = getattr(t, key)
                tensors_meta[role].append(
                    {"name": t.name, "shape": list(t.shape), "precision": t.precision,
                     "order": t.order, "padded": list(t.padded), "scale": t.scale}
                )
        meta = {
            "format_version": FORMAT_VERSION, "target": self.target, "tiles": self.tiles,
            "function": self.function, "steps": steps_meta, **tensors_meta,
            "metadata": self.metadata,
        }
        (directory / "metadata.json").write_text(json.dumps(meta, indent=1))
        np.savez_compressed(directory / "program.npz", **arrays)
        (directory / "program.s").write_text(self.assembly)
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> Package:
        directory = Path(directory)
        meta = json.loads((directory / "metadata.json").read_text())
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{directory}: unsupported package format {meta.get('format_version')}")
        with np.load(directory / "program.npz") as npz:
            arrays = {k: npz[k] for k in npz.files}
        ends = np.cumsum(arrays["row_lengths"])
        rows = np.split(arrays["row_words"], ends[:-1]) if len(ends) else []
        steps: list[Step] = []
        for i, s in enumerate(meta["steps"]):
            if s["kind"] == "exchange":
                steps.append(ExchangeStep(s["row_address"], arrays[f"step{i}_row_id"],
                                          s["provenance"]))
            else:
                steps.append(KernelStep(s["symbol"], arrays[f"step{i}_tiles"],
                                        arrays[f"step{i}_pointers"], tuple(s["scalars"]),
                                        s["provenance"]))
        tensors: dict[str, list[HostTensor]] = {}
        for role in ("inputs", "outputs"):
            tensors[role] = [
                HostTensor(t["name"], tuple(t["shape"]), t["precision"], t["order"],
                           tuple(t["padded"]), arrays[f"{role}{j}_tiles"],
                           arrays[f"{role}{j}_addresses"], arrays[f"{role}{j}_origins"],
                           t["scale"])
                for j, t in enumerate(meta[role])
            ]
        assembly_path = directory / "program.s"
        return cls(meta["target"], meta["tiles"], list(rows), steps, tensors["inputs"],
                   tensors["outputs"], meta["function"],
                   assembly_path.read_text() if assembly_path.exists() else "",
                   meta.get("metadata", {}))


def describe(package: Package) -> dict:
    """A JSON-able summary (for tools and notes)."""
    kernels = [s for s in package.steps if isinstance(s, KernelStep)]
    exchanges = [s for s in package.steps if isinstance(s, ExchangeStep)]
    return {
        "tiles": package.tiles, "unique_rows": len(package.rows),
        "exchange_steps": len(exchanges), "kernel_steps": len(kernels),
        "inputs": [t.name for t in package.inputs],
        "outputs": [t.name for t in package.outputs],
    }
