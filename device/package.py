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
- `LoopStep`: ``count`` runs of its ``body`` steps (a structured repeat). Exchange steps in a
  body are the same in every iteration (the same rows at the same slots); a kernel step's
  pointers advance by ``pointer_strides`` (one row per enclosing loop, outermost first) per
  iteration. `Package.executed()` gives the steps as the device runs them; on disk a loop is
  one ``{"kind": "loop", "count", "length"}`` entry followed by the ``length`` entries of its
  body (pre-order), so step ``i``'s arrays keep their ``step<i>_...`` names.

Tile images: the only bytes the compiler puts into tile memory are the exchange rows; each
tile's image is its rows at their slot addresses (`tile_image`). Host tensors are written by
the host from `HostTensor` metadata: each shard is the padded rectangle ``origin`` +
``padded`` of the logical tensor (zero beyond the tensor), stored in ``order`` and
``precision`` at ``address`` on ``tile``.

On disk (`Package.save(dir)` / `Package.load(dir)`, `FORMAT_VERSION`): ``metadata.json``
(target, tiles, function, row count, pipeline, steps, host tensors, metadata),
``program.npz`` (the row words and the per-step and per-tensor arrays), ``program.s`` (the
supervisor assembly) and ``source.mlir`` (the graph function the package was built from,
with ``pipeline`` the pass pipeline that built it, so that `ipu-run DIR` can check a run
against the NumPy reference). A package is untrusted input: `Package.load` checks all of it
against the schema of `device/package_schema.py` and raises `PackageError` for any violation.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from device.limits import MAX_MODEL_SECONDS
from device.package_parts import (
    FORMAT_VERSION,
    ExchangeStep,
    HostTensor,
    KernelStep,
    LoopStep,
    PackageError,
    RunStep,
    Step,
    executed_count,
    executed_steps,
    flat_steps,
)
from device.package_schema import package_fields

# the parts are part of this module's interface (`from device.package import KernelStep`)
__all__ = ["FORMAT_VERSION", "ExchangeStep", "HostTensor", "KernelStep", "LoopStep", "Package",
           "PackageError", "RunStep", "Step", "executed_count", "executed_steps",
           "flat_steps"]

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
    source: str = ""  # the graph function's .mlir text
    pipeline: str = ""  # the pass pipeline that built the package from `source`

    def executed(self) -> Iterator[RunStep]:
        """The steps as the device runs them (`executed_steps`)."""
        return executed_steps(self.steps)

    def tile_image(self, tile: int) -> list[tuple[int, np.ndarray]]:
        """The (address, words) segments the loader writes into `tile`'s memory."""
        segments = []
        for _, step in flat_steps(self.steps):
            if isinstance(step, ExchangeStep) and step.row_id[tile] >= 0:
                segments.append((step.row_address, self.rows[int(step.row_id[tile])]))
        return segments

    # ---- persistence ------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write the package into `directory`: its files are written beside it under
        temporary names and renamed into place (metadata.json last), so a failure leaves no
        half-written file; a symbolic link as `directory` is refused (OSError), one at a file's
        place is replaced, never followed."""
        directory = Path(directory)
        if directory.is_symlink():
            raise OSError(errno.ELOOP, "is a symbolic link; a package is never written "
                                       "through one", str(directory))
        directory.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}.",
                                        suffix=".tmp"))
        try:
            self._write(staging)
            directory.mkdir(exist_ok=True)
            names = ("program.npz", "program.s", "source.mlir", "metadata.json")
            for name in names:  # what os.replace cannot replace, before any file is moved
                place = directory / name
                if place.is_dir() and not place.is_symlink():
                    raise IsADirectoryError(errno.EISDIR, "a directory is in the place of a "
                                                          "package file", str(place))
            for name in names:
                if (staging / name).exists():
                    os.replace(staging / name, directory / name)
                elif name == "source.mlir":
                    (directory / name).unlink(missing_ok=True)  # not a stale one
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return directory

    def _write(self, directory: Path) -> None:
        arrays: dict[str, np.ndarray] = {}
        row_lengths = np.array([len(r) for r in self.rows], dtype=np.int64)
        arrays["row_lengths"] = row_lengths
        arrays["row_words"] = (
            np.concatenate(self.rows).astype(np.uint32) if self.rows else np.zeros(0, np.uint32)
        )
        steps_meta = []
        for i, (depth, step) in enumerate(flat_steps(self.steps)):
            if isinstance(step, LoopStep):
                steps_meta.append({"kind": "loop", "count": step.count,
                                   "length": sum(1 for _ in flat_steps(step.body)),
                                   "provenance": step.provenance})
            elif isinstance(step, ExchangeStep):
                arrays[f"step{i}_row_id"] = np.asarray(step.row_id, "<i4")
                steps_meta.append(
                    {"kind": "exchange", "row_address": step.row_address,
                     "provenance": step.provenance}
                )
            else:
                arrays[f"step{i}_tiles"] = np.asarray(step.tiles, "<i4")
                arrays[f"step{i}_pointers"] = np.asarray(step.pointers, "<i8")
                if depth:
                    strides = step.pointer_strides
                    if strides is None:
                        strides = np.zeros((depth, step.pointers.shape[1]), np.int64)
                    arrays[f"step{i}_pointer_strides"] = np.asarray(strides, "<i8")
                steps_meta.append(
                    {"kind": "kernel", "symbol": step.symbol, "scalars": list(step.scalars),
                     "provenance": step.provenance}
                )
        tensors_meta: dict[str, list[dict]] = {}
        for role, tensors in (("inputs", self.inputs), ("outputs", self.outputs)):
            tensors_meta[role] = []
            for j, t in enumerate(tensors):
                for key, dtype in (("tiles", "<i4"), ("addresses", "<i8"), ("origins", "<i8")):
                    arrays[f"{role}{j}_{key}"] = np.asarray(getattr(t, key), dtype)
                tensors_meta[role].append(
                    {"name": t.name, "shape": list(t.shape), "precision": t.precision,
                     "order": t.order, "padded": list(t.padded), "scale": t.scale}
                )
        meta = {
            "format_version": FORMAT_VERSION, "target": self.target, "tiles": self.tiles,
            "function": self.function, "row_count": len(self.rows), "pipeline": self.pipeline,
            "steps": steps_meta, **tensors_meta,
            "metadata": self.metadata,
        }
        (directory / "metadata.json").write_text(json.dumps(meta, indent=1))
        np.savez_compressed(directory / "program.npz", **arrays)  # type: ignore[arg-type]
        (directory / "program.s").write_text(self.assembly)
        if self.source:
            (directory / "source.mlir").write_text(self.source)

    @classmethod
    def load(cls, directory: str | Path,
             max_model_seconds: float = MAX_MODEL_SECONDS) -> Package:
        """The package saved in `directory`, checked against the schema before anything is
        allocated for it (`device/package_schema.py`), its run estimated to take the model
        at most `max_model_seconds` (`math.inf`: not to be run); raises `PackageError`."""
        return cls(**package_fields(directory, max_model_seconds))
