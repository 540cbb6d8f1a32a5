"""Progress bars (tqdm) for long compiles and model runs, on stderr.

A bar appears once its work has run `DELAY_SECONDS`, so short work prints nothing, and from
then on it is redrawn every `TICK_SECONDS` even while one item is still running (a stage of the
pipeline that takes 20 s shows its name and the time spent in it from the first second). It
is off when stderr is not a terminal (tqdm's `disable=None`) or when the caller is quiet. An
item with a `name` (a pass) is shown by it next to the bar. `phase(progress, what, work)`
gives one long step of its own (the NumPy reference, the listing) a bar of one item.

The compiler and the model take a `Progress` (a function wrapping an iterable) rather than
importing this module, so they stay free of any display code.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from tqdm import tqdm

DELAY_SECONDS = 1.0
TICK_SECONDS = 0.5

Item = TypeVar("Item")
Result = TypeVar("Result")
Progress = Callable[[Iterable[Item], str, int | None], Iterable[Item]]


def no_progress(items: Iterable[Item], description: str = "",
                total: int | None = None) -> Iterable[Item]:
    return items


def phase(progress: Progress, description: str, work: Callable[[], Result]) -> Result:
    """`work()`, shown by `progress` as a step of its own named `description`."""
    result: list[Any] = []
    for _ in progress([description], description, 1):
        result.append(work())
    return result[0]


class Ticker:
    """Redraws a bar every TICK_SECONDS once DELAY_SECONDS have passed, until stopped."""

    def __init__(self, bar: tqdm):
        self.bar, self.stopped = bar, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        if self.stopped.wait(DELAY_SECONDS):
            return
        while not self.stopped.is_set():
            self.bar.refresh()
            self.bar.last_print_t = self.bar._time()  # so that close() clears the line
            self.stopped.wait(TICK_SECONDS)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def label(item: object) -> str:
    name = getattr(item, "name", item if isinstance(item, str) else "")
    return name if isinstance(name, str) else ""


def terminal_progress(quiet: bool = False) -> Progress:
    """Bars on stderr when it is a terminal, unless `quiet`."""

    def wrap(items: Iterable[Item], description: str = "",
             total: int | None = None) -> Iterator[Item]:
        bar = tqdm(total=total, desc=description, file=sys.stderr,
                   disable=True if quiet else None, delay=DELAY_SECONDS, leave=False)
        if bar.disable:
            bar.close()
            yield from items
            return
        ticker = Ticker(bar)
        try:
            for item in items:
                if (text := label(item)) and text != description:
                    bar.set_postfix_str(text, refresh=False)
                yield item
                bar.update()
        finally:
            ticker.stop()
            bar.close()

    return wrap
