"""`--version` of every tool: `TOOL VERSION (ipu-stack, on xdsl VERSION)`."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version


def ipu_stack_version() -> str:
    try:
        return version("ipu-stack")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def version_line(tool: str) -> str:
    try:
        xdsl = version("xdsl")
    except PackageNotFoundError:
        xdsl = "unknown"
    return f"{tool} {ipu_stack_version()} (ipu-stack, on xdsl {xdsl})"


def version_callback(tool: str) -> Callable[[bool], None]:
    """A typer option callback (`is_eager=True`): print the version line and exit 0."""
    def show(value: bool) -> None:
        if value:
            import typer

            print(version_line(tool))
            raise typer.Exit()

    return show
