"""The registry of the passes `ipu-pipeline` runs as its stages, in the order it runs them
(`passes.ipu_pipeline.STAGES` is this order; `passes/__init__.py` adds `ipu-pipeline`
itself, which looks its stages up here). Factories are lazy so that start-up imports nothing
heavy.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_stage_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def get_graph_to_mid():
        from passes.graph_to_mid import GraphToMidPass

        return GraphToMidPass

    def get_insert_conversions():
        from passes.insert_conversions import InsertConversionsPass

        return InsertConversionsPass

    def get_normalize_repeats():
        from passes.normalize_repeats import NormalizeRepeatsPass

        return NormalizeRepeatsPass

    def get_mid_to_tile():
        from passes.mid_to_tile import MidToTilePass

        return MidToTilePass

    def get_place_memory():
        from passes.place_memory import PlaceMemoryPass

        return PlaceMemoryPass

    def get_schedule_exchange():
        from passes.schedule_exchange import ScheduleExchangePass

        return ScheduleExchangePass

    return {
        "graph-to-mid": get_graph_to_mid,
        "insert-conversions": get_insert_conversions,
        "normalize-repeats": get_normalize_repeats,
        "mid-to-tile": get_mid_to_tile,
        "place-memory": get_place_memory,
        "schedule-exchange": get_schedule_exchange,
    }
