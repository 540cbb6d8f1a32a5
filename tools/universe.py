"""The `xdsl.universe` entry point (see pyproject.toml): our dialects, passes and emitters
for `xdsl-opt` and any other xDSL tool, e.g. `xdsl-opt -p 'ipu-pipeline{tiles=4}' f.mlir`.

Only our names: xDSL supplies builtin, func, arith and its own passes itself.
"""

from xdsl.universe import Universe

from ipu_dialects import get_all_dialects
from passes import get_all_passes
from tools.targets import get_all_targets

IPU_UNIVERSE = Universe(
    all_dialects=get_all_dialects(),
    all_passes=get_all_passes(),
    all_targets=get_all_targets(),
)
