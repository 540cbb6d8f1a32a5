"""`-t ipu-asm`: supervisor assembly for every tile, with provenance comments.

The listing is the package's (`tools/asm_listing.py` formats it once, when
`tools/package_writer.py` builds the package), so it shows exactly what the device model runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from tools.package_writer import build_package
from tools.progress import terminal_progress


@dataclass(frozen=True)
class IpuAsmTarget(Target):
    name = "ipu-asm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        # the writer formats it once; a long build and listing show their progress on a
        # terminal's stderr (tools/progress.py)
        output.write(build_package(module, progress=terminal_progress()).assembly)
