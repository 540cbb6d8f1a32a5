"""The executable device model: runs a `device.package.Package` from its encoded words.

Modules: `memory` (per-tile SRAM), `host` (inputs/outputs from `HostTensor`s), `fabric`
(exchange phases from the rows in memory), `kernel_impls` (NumPy semantics by kernel
symbol), `cycles` (modeled cycles), `run` (`run_package`).
"""

from device.model.errors import ModelError
from device.model.run import RunResult, run_package

__all__ = ["ModelError", "RunResult", "run_package"]
