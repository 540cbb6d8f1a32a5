"""The `xdsl.universe` entry point (see pyproject.toml): our dialects, passes and emitters
for `xdsl-opt` and any other xDSL tool, e.g. `xdsl-opt -p 'ipu-pipeline{tiles=4}' f.mlir`.

Only our names: xDSL supplies builtin, func, arith and its own passes itself.

Diagnostics in xDSL's tools. `xdsl-opt` lets a pass's `PassFailedException` (any
`DiagnosticException`, and a `ParseError`) escape as a Python traceback unless
`--verify-diagnostics` is given. Loading this universe installs `diagnostic_excepthook`: an
uncaught diagnostic is printed as what it is, its message (which names the op, its value and,
when the input gave one, its `file:line:col`) and the IR xDSL marks under it, with exit status
1; any other exception keeps Python's traceback.
"""

import sys
from types import TracebackType

from xdsl.universe import Universe

from ipu_dialects import get_all_dialects
from passes import get_all_passes
from tools.targets import get_all_targets

IPU_UNIVERSE = Universe(
    all_dialects=get_all_dialects(),
    all_passes=get_all_passes(),
    all_targets=get_all_targets(),
)

_python_excepthook = sys.excepthook


def diagnostic_excepthook(kind: type[BaseException], error: BaseException,
                          trace: TracebackType | None) -> None:
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    if not isinstance(error, DiagnosticException | ParseError):
        _python_excepthook(kind, error, trace)
        return
    print(f"error: {error}" if isinstance(error, DiagnosticException) and ": error: " not in
          str(error) else str(error), file=sys.stderr)
    for note in getattr(error, "__notes__", ()):
        print(note, file=sys.stderr)
    sys.stderr.flush()
    raise SystemExit(1)


if sys.excepthook is _python_excepthook and sys.excepthook is sys.__excepthook__:
    sys.excepthook = diagnostic_excepthook
