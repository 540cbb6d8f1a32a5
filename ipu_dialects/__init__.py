"""The four ipu-stack dialects (graph, mid, tile, exchange) plus the xDSL ones we use.

Factories are lazy, as in xDSL's own registry: importing this package costs nothing.
"""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    def get_builtin():
        from xdsl.dialects.builtin import Builtin

        return Builtin

    def get_func():
        from xdsl.dialects.func import Func

        return Func

    def get_arith():
        from xdsl.dialects.arith import Arith

        return Arith

    def get_test():
        from xdsl.dialects.test import Test

        return Test

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
        "builtin": get_builtin,
        "func": get_func,
        "arith": get_arith,
        "test": get_test,
        "graph": get_graph,
        "mid": get_mid,
        "tile": get_tile,
        "exchange": get_exchange,
    }
