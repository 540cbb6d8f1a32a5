"""The executable device model: runs a `device.package.Package` from its encoded words.

Modules: `memory` (per-tile SRAM), `host` (inputs/outputs from `HostTensor`s), `fabric`
(exchange phases from the rows in memory), `kernel_call` (the `Kernel` record and what its
implementations see), `kernels_*` (each family's records and NumPy semantics),
`kernel_steps` (a kernel step through its record), `cycles` (modeled cycles), `run`
(`run_package`).

`RunResult` and `run_package` are imported on first use: `run` imports the package format
(`device.package`), which checks calls against the kernel table (`device/kernels.py`), whose
records live in this package; importing `run` here, eagerly, would make the table import
itself while it is being built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from device.model.errors import ModelError

if TYPE_CHECKING:
    from device.model.run import RunResult, run_package

__all__ = ["ModelError", "RunResult", "run_package"]


def __getattr__(name: str) -> Any:
    if name in ("RunResult", "run_package"):
        from device.model import run

        return getattr(run, name)
    raise AttributeError(f"module 'device.model' has no attribute '{name}'")
