"""Per-tile SRAM: one uint8 array over [memory_base, memory_end) per tile, allocated lazily.

A tile that nothing has written reads as zeros without being allocated, so a package for
many tiles costs memory only for the tiles it touches.
"""

from __future__ import annotations

import numpy as np

from device.model.errors import ModelError
from device.target import WORD_BYTES, Target


class TileMemory:
    def __init__(self, target: Target, tiles: int):
        self.target = target
        self.tiles = tiles
        self.base = target.memory_base
        self.end = target.memory_end
        self._bytes: dict[int, np.ndarray] = {}

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
    def allocated(self, tile: int) -> bool:
        return tile in self._bytes

    def _storage(self, tile: int) -> np.ndarray:
        storage = self._bytes.get(tile)
        if storage is None:
            storage = np.zeros(self.end - self.base, dtype=np.uint8)
            self._bytes[tile] = storage
        return storage

    def words(self, tile: int) -> np.ndarray:
        """The tile's memory as a writable little-endian uint32 view."""
        return self._storage(tile).view("<u4")

    # ---- byte access ----------------------------------------------------------------
    def read(self, tile: int, address: int, nbytes: int, what: str = "read") -> np.ndarray:
        """A copy of `nbytes` bytes at absolute byte `address` of `tile`."""
        self.check_range(tile, address, nbytes, what)
        if tile not in self._bytes:
            return np.zeros(nbytes, dtype=np.uint8)
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

    # ---- word gather/scatter for the fabric -----------------------------------------
    def gather_words(self, tile: int, indices: np.ndarray) -> np.ndarray:
        """Words at word `indices` (already range-checked) of `tile`."""
        if tile not in self._bytes:
            return np.zeros(len(indices), dtype=np.uint32)
        return self.words(tile)[indices]

    def scatter_words(self, tile: int, indices: np.ndarray, values: np.ndarray) -> None:
        """Store `values` at word `indices` (range-checked, unique) of `tile`."""
        self.words(tile)[indices] = values
