"""Where graph-to-mid has put values so far: the bytes of every tile, for a placement that
spreads values over the chip (issue 28, "placement that uses the chip").

A plan that does not need particular tiles (a pointwise op's, whose operands come to it
anyway) may start at any tile; `least_loaded_start` gives the first tile of the run of tiles
that holds the fewest bytes so far, so that the small values of a program (biases, layer-norm
results, small pointwise results) do not all pile onto the first tiles. The loads are what
selection has assigned, not what place-memory will find live: a guide, not a capacity check.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planning.shard_geometry import ShardGeometry


def on_tiles(geom: ShardGeometry, tiles: int, each: int | None = None) -> np.ndarray:
    """Bytes on each of `tiles` tiles: `each` (default: one shard of `geom`) on the tiles of
    `geom` (those within the chip; mid-to-tile refuses the rest)."""
    vector = np.zeros(tiles, dtype=np.int64)
    vector[geom.first_tile:min(geom.tile_stop, tiles)] = geom.shard_bytes() if each is None else each
    return vector


@dataclass
class TileLoads:
    tiles: int
    loads: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.loads = np.zeros(self.tiles, dtype=np.int64)

    def add(self, geom: ShardGeometry) -> None:
        """A value stored in `geom` now lives on its tiles."""
        self.loads += on_tiles(geom, self.tiles)

    def least_loaded_start(self, count: int) -> int:
        """The first tile of the `count` consecutive tiles with the fewest bytes (the lowest
        such tile on ties, so an empty chip keeps tile 0)."""
        if not 0 < count < self.tiles:
            return 0
        sums = np.concatenate(([0], np.cumsum(self.loads)))
        windows = sums[count:] - sums[:-count]  # windows[o] = bytes on tiles o .. o + count - 1
        return int(np.argmin(windows))
