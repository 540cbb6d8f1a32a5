"""The four ipu-stack dialects: graph, mid, tile, exchange (only ours: `tools.registry` adds the
xDSL ones ipu-opt parses, and the `xdsl.universe` entry point exposes these to xDSL tools).

Factories are lazy, as in xDSL's own registry: importing this package costs nothing.
"""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    def get_graph():
        from ipu_dialects.graph import Graph

        return Graph

    def get_mid():
        from ipu_dialects.mid import Mid

        return Mid

    def get_tile():
        from ipu_dialects.tile import Tile

        return Tile

    def get_exchange():
        from ipu_dialects.exchange import Exchange

        return Exchange

    return {
        "graph": get_graph,
        "mid": get_mid,
        "tile": get_tile,
        "exchange": get_exchange,
    }
