"""Registry of our passes (only ours: `tools.registry` adds xDSL's canonicalize, cse and dce
for ipu-opt, and the `xdsl.universe` entry point exposes these to xDSL tools).

Each of our passes lives in its own module named like the pass (kebab-case name,
snake_case file). Factories are lazy so that start-up imports nothing heavy.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass

from passes.stages import get_stage_passes


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def get_ipu_pipeline():
        from passes.ipu_pipeline import IpuPipelinePass

        return IpuPipelinePass

    def get_convert_linalg_to_graph():
        from passes.convert_linalg_to_graph import ConvertLinalgToGraphPass

        return ConvertLinalgToGraphPass

    return {"convert-linalg-to-graph": get_convert_linalg_to_graph, **get_stage_passes(),
            "ipu-pipeline": get_ipu_pipeline}
