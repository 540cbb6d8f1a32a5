"""What `ipu-opt` and `ipu-run` register: our dialects, passes and targets (the registries in
`ipu_dialects`, `passes` and `tools.targets`, which the `xdsl.universe` entry point exposes to
any xDSL tool) plus the few xDSL dialects and passes our IR and pipelines use.

Our registries hold only our names: xDSL's `Multiverse` merges every installed universe and
refuses a name defined twice, so re-exporting `builtin` or `cse` there would break `xdsl-opt`.
"""

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect
from xdsl.passes import ModulePass

from ipu_dialects import get_all_dialects
from passes import get_all_passes

XDSL_DIALECTS = ("builtin", "func", "arith", "test", "tensor", "linalg")
XDSL_PASSES = ("canonicalize", "cse", "dce")


def opt_dialects() -> dict[str, Callable[[], Dialect]]:
    """xDSL's `builtin`, `func`, `arith` and `test`, `tensor` and `linalg` (what IR from the
    MLIR world brings: `convert-linalg-to-graph` rewrites it), then ours."""
    from xdsl.dialects import get_all_dialects as xdsl_dialects

    def linalg_with_batch_matmul():
        from ipu_dialects.linalg_batch import LINALG

        return LINALG

    upstream = {**xdsl_dialects(), "linalg": linalg_with_batch_matmul}
    return {**{name: upstream[name] for name in XDSL_DIALECTS}, **get_all_dialects()}


def opt_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Ours, then xDSL's `canonicalize`, `cse` and `dce`."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    upstream = xdsl_passes()
    return {**get_all_passes(), **{name: upstream[name] for name in XDSL_PASSES}}


def make_context() -> Context:
    """A context that parses everything ipu-opt reads."""
    ctx = Context()
    for name, factory in opt_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx
