"""Progress bars (tqdm) for long compiles and model runs, on stderr.

A bar appears only after `DELAY_SECONDS`, so short work prints nothing; it is off when
stderr is not a terminal (tqdm's `disable=None`) or when the caller is quiet. The compiler
and the model take a `Progress` (a function wrapping an iterable) rather than importing
this module, so they stay free of any display code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

DELAY_SECONDS = 1.5

Item = TypeVar("Item")
Progress = Callable[[Iterable[Item], str, int | None], Iterable[Item]]


def no_progress(items: Iterable[Item], description: str = "",
                total: int | None = None) -> Iterable[Item]:
    return items


def terminal_progress(quiet: bool = False) -> Progress:
    """Bars on stderr when it is a terminal, unless `quiet`."""

    def wrap(items: Iterable[Item], description: str = "",
             total: int | None = None) -> Iterator[Item]:
        return iter(tqdm(items, desc=description, total=total, file=sys.stderr,
                         disable=True if quiet else None, delay=DELAY_SECONDS, leave=False))

    return wrap
