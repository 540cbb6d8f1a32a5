"""Registry of our passes (only ours: `tools.registry` adds xDSL's canonicalize, cse and dce
for ipu-opt, and the `xdsl.universe` entry point exposes these to xDSL tools).

Each of our passes lives in its own module named like the pass (kebab-case name,
snake_case file). Factories are lazy so that start-up imports nothing heavy.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
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

    def get_ipu_pipeline():
        from passes.ipu_pipeline import IpuPipelinePass

        return IpuPipelinePass

    return {
        "graph-to-mid": get_graph_to_mid,
        "insert-conversions": get_insert_conversions,
        "normalize-repeats": get_normalize_repeats,
        "mid-to-tile": get_mid_to_tile,
        "place-memory": get_place_memory,
        "schedule-exchange": get_schedule_exchange,
        "ipu-pipeline": get_ipu_pipeline,
    }
