"""Values remembered per key and target: what selection prices again and again (a
conversion, a GEMM candidate's costed cuts, a layout op's copy) while graph-to-mid lowers a
function, once or several times.

A `Target` holds dicts and is not hashable, so the key carries its identity and the entry
the target itself, checked on every read: a target built again at the same address is not
taken for the old one. A memo past its `limit` entries forgets them all at once (a compile
asks the same few hundred again; a long-lived process must not grow without bound).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from device.target import Target

T = TypeVar("T")


class TargetMemo(Generic[T]):
    def __init__(self, limit: int):
        self.limit = limit
        self.entries: dict[tuple, tuple[Target, T]] = {}

    def get(self, key: Hashable, target: Target, compute: Callable[[], T]) -> T:
        """The value remembered for `key` on `target`, computed by `compute` the first time."""
        full = (key, id(target))
        known = self.entries.get(full)
        if known is None or known[0] is not target:
            if len(self.entries) > self.limit:
                self.entries.clear()
            known = self.entries[full] = (target, compute())
        return known[1]
