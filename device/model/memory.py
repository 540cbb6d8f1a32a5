"""Per-tile SRAM: one uint8 array [tiles, memory_end - memory_base], zero-filled lazily.

The array is one zero-filled anonymous allocation, which the operating system backs with
pages only where something is written, so a package for many tiles costs memory only for the
pages it touches. From `HUGE_PAGES_FROM` bytes on (about 100 tiles) the mapping asks for
transparent huge pages (`madvise(MADV_HUGEPAGE)`, where the system offers it): a whole-chip
run touches most of its 918 MB, and one fault per 2 MiB instead of per 4 KiB took loading
the images and inputs of a 1472-tile package from seconds to a fraction of one. One array
for all tiles lets the fabric and batched kernels read and write many tiles in one NumPy
operation (`gather`, `scatter`, `tile_bytes`, `copy_elements`).
"""

from __future__ import annotations

import mmap

import numpy as np

from device.model.errors import ModelError
from device.target import WORD_BYTES, Target

HUGE_PAGES_FROM = 64 << 20  # bytes of tile memory from which huge pages are asked for


def zeroed_bytes(shape: tuple[int, int]) -> tuple[np.ndarray, mmap.mmap | None]:
    """A zero-filled uint8 array of `shape` and the mapping that holds it (None: `np.zeros`)."""
    nbytes = shape[0] * shape[1]
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if nbytes < HUGE_PAGES_FROM or advice is None:
        return np.zeros(shape, dtype=np.uint8), None
    mapping = mmap.mmap(-1, nbytes)  # anonymous: zero-filled, pages on first touch
    try:
        mapping.madvise(advice)
    except OSError:  # huge pages off: the mapping still works with small pages
        pass
    return np.frombuffer(mapping, dtype=np.uint8).reshape(shape), mapping


class TileMemory:
    def __init__(self, target: Target, tiles: int):
        self.target = target
        self.tiles = tiles
        self.base = target.memory_base
        self.end = target.memory_end
        self._bytes, self._mapping = zeroed_bytes((tiles, self.end - self.base))
        self._words = self._bytes.view("<u4")

    # ---- checks ---------------------------------------------------------------------
    def check_tile(self, tile: int, what: str = "access") -> None:
        if not 0 <= tile < self.tiles:
            raise ModelError(f"{what}: tile {tile} does not exist (the package has "
                             f"{self.tiles} tiles)")

    def check_range(self, tile: int, address: int, nbytes: int, what: str = "access") -> None:
        self.check_tile(tile, what)
        if nbytes < 0 or address < self.base or address + nbytes > self.end:
            raise ModelError(
                f"{what}: tile {tile}, bytes [{address:#x}, {address + nbytes:#x}) are outside "
                f"tile memory [{self.base:#x}, {self.end:#x})"
            )

    def word_index(self, byte_address: int) -> int:
        """Index of the word at `byte_address` in the tile's word array (address % 4 == 0)."""
        return (byte_address - self.base) // WORD_BYTES

    @property
    def words_per_tile(self) -> int:
        return (self.end - self.base) // WORD_BYTES

    # ---- storage --------------------------------------------------------------------
    def _storage(self, tile: int) -> np.ndarray:
        return self._bytes[tile]

    def words(self, tile: int) -> np.ndarray:
        """The tile's memory as a writable little-endian uint32 view."""
        return self._storage(tile).view("<u4")

    @property
    def all_words(self) -> np.ndarray:
        """Every tile's memory as a [tiles, words_per_tile] uint32 view, for array access
        by callers that have range-checked their indices."""
        return self._words

    # ---- byte access ----------------------------------------------------------------
    def read(self, tile: int, address: int, nbytes: int, what: str = "read") -> np.ndarray:
        """A copy of `nbytes` bytes at absolute byte `address` of `tile`."""
        self.check_range(tile, address, nbytes, what)
        offset = address - self.base
        return self._bytes[tile][offset : offset + nbytes].copy()

    def write(self, tile: int, address: int, data: np.ndarray, what: str = "write") -> None:
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        self.check_range(tile, address, raw.size, what)
        offset = address - self.base
        self._storage(tile)[offset : offset + raw.size] = raw

    def read_words(self, tile: int, address: int, count: int, what: str = "read") -> np.ndarray:
        return self.read(tile, address, count * WORD_BYTES, what).view("<u4").astype(np.uint32)

    def write_words(self, tile: int, address: int, words, what: str = "write") -> None:
        self.write(tile, address, np.asarray(words, dtype="<u4"), what)

    # ---- many tiles at once (the fabric, batched kernels) ---------------------------
    def gather_words(self, tiles: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """Word `indices[i]` of tile `tiles[i]` for each i (already range-checked)."""
        return self._words[tiles, indices]

    def scatter_words(self, tiles: np.ndarray, indices: np.ndarray, values: np.ndarray) -> None:
        """Store `values[i]` at word `indices[i]` of tile `tiles[i]` (range-checked; each
        (tile, index) pair at most once)."""
        self._words[tiles, indices] = values

    def copy_words(self, source: int, source_index: int, receivers: np.ndarray,
                   target_index: int, count: int) -> None:
        """Copy `count` words at `source_index` of `source` to `target_index` of each of
        `receivers` (range-checked; the source block is not among the targets)."""
        self._words[receivers, target_index:target_index + count] = (
            self._words[source, source_index:source_index + count])

    def copy_elements(self, tiles: np.ndarray, targets: np.ndarray, sources: np.ndarray,
                      itemsize: int) -> None:
        """On each tile `tiles[i]`, copy the `itemsize`-byte elements at element indices
        `sources[i]` to `targets[i]` (indices in units of `itemsize` from the tile's memory
        base; int64 arrays of shape [n, m], or [n] for one element per entry, range-checked by
        the caller). Every source element is read before any target is written, as a kernel
        that reads its operands whole does."""
        view = self._bytes.view(f"<u{itemsize}")
        rows = np.asarray(tiles, dtype=np.int64)
        rows = rows.reshape(rows.shape + (1,) * (np.ndim(targets) - rows.ndim))
        view[rows, targets] = view[rows, sources]

    def check_ranges(self, tiles: np.ndarray, address: np.ndarray | int, nbytes: int,
                     what: str) -> None:
        """`check_range` for many tiles at once; the message names the first bad tile."""
        tiles = np.asarray(tiles).reshape(-1)
        addresses = np.broadcast_to(np.asarray(address, dtype=np.int64), tiles.shape)
        bad = (tiles < 0) | (tiles >= self.tiles) | (addresses < self.base) | (
            addresses + nbytes > self.end)
        if nbytes < 0 or bad.any():
            first = int(np.argmax(bad))
            self.check_range(int(tiles[first]), int(addresses[first]), nbytes, what)

    def tile_bytes(self, tiles: np.ndarray, address: np.ndarray | int, nbytes: int,
                   what: str = "read") -> np.ndarray:
        """A [len(tiles), nbytes] copy of `nbytes` bytes at `address` (one, or one per tile)
        of each tile."""
        self.check_ranges(tiles, address, nbytes, what)
        offsets = np.asarray(address, dtype=np.int64) - self.base
        if offsets.ndim == 0:
            return self._bytes[tiles, int(offsets):int(offsets) + nbytes]
        tiles = np.asarray(tiles)
        groups = _offset_groups(offsets)
        if groups is None:
            return self._bytes[tiles[:, None], offsets[:, None] + np.arange(nbytes)]
        result = np.empty((tiles.size, nbytes), dtype=np.uint8)
        for offset, rows in groups:
            result[rows] = self._bytes[tiles[rows], offset:offset + nbytes]
        return result

    def write_tile_bytes(self, tiles: np.ndarray, address: np.ndarray | int,
                         data: np.ndarray, what: str = "write") -> None:
        """Write row i of the [len(tiles), nbytes] uint8 `data` at `address` (one, or one
        per tile) of tile `tiles[i]`; a tile listed twice gets its last row."""
        nbytes = data.shape[1]
        self.check_ranges(tiles, address, nbytes, what)
        tiles = np.asarray(tiles)
        offsets = np.asarray(address, dtype=np.int64) - self.base
        if offsets.ndim == 0:
            self._bytes[tiles, int(offsets):int(offsets) + nbytes] = data
            return
        groups = _offset_groups(offsets)
        if groups is None or np.unique(tiles).size != tiles.size:  # one store: its order
            self._bytes[tiles[:, None], offsets[:, None] + np.arange(nbytes)] = data
            return
        for offset, rows in groups:  # distinct tiles: the groups touch disjoint bytes
            self._bytes[tiles[rows], offset:offset + nbytes] = data[rows]


OFFSET_GROUPS = 32  # per-tile addresses with at most this many distinct values: sliced


def _offset_groups(offsets: np.ndarray) -> list[tuple[int, np.ndarray]] | None:
    """(offset, the entries that have it) for each distinct per-tile offset, or None when
    there are more than `OFFSET_GROUPS` of them. A step whose tiles use a few addresses
    (a GEMM's right blocks at two slots) is then a few slices, not one [tiles, nbytes]
    index array (eight bytes of index per byte moved)."""
    distinct, inverse = np.unique(offsets, return_inverse=True)
    if distinct.size > OFFSET_GROUPS:
        return None
    inverse = inverse.reshape(-1)
    return [(int(offset), np.flatnonzero(inverse == k))
            for k, offset in enumerate(distinct.tolist())]
