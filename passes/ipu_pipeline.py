"""`ipu-pipeline{tiles=N indivisible=pad|reject profiling=off|cycles gemm-partials=f32|f16
catalog=a,b}`: the default pipeline, graph to exchange.

Runs, in order: `graph-to-mid{tiles=N indivisible=... profiling=... gemm-partials=...
catalog=...}`, `insert-conversions`,
`normalize-repeats`, `mid-to-tile`, `place-memory`, `schedule-exchange`. The passes are looked
up in `passes.stages.get_stage_passes()` when the pipeline runs, so this module imports without them;
a stage that cannot be loaded is a diagnostic naming it. Only `graph-to-mid` takes options:
every later pass reads the tile count and target from the module's `ipu.config`.

The stages run as an xDSL `PassPipeline` that verifies the module after each stage. Drivers
that time passes (`ipu-opt --time-passes`, `ipu-run`) run `stage_passes()` themselves, one
stage at a time (`tools/pass_timing.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import PassFailedException

from passes.stages import get_stage_passes
from planning.pipeline_config import PipelineOptions

STAGES = (
    "graph-to-mid",
    "insert-conversions",
    "normalize-repeats",
    "mid-to-tile",
    "place-memory",
    "schedule-exchange",
)


@dataclass(frozen=True)
class IpuPipelinePass(PipelineOptions, ModulePass):
    """Its options are `PipelineOptions`, graph-to-mid's, declared once for both passes."""

    name = "ipu-pipeline"

    def stage_passes(self) -> list[ModulePass]:
        registry = get_stage_passes()
        stages: list[ModulePass] = []
        for stage in STAGES:
            try:
                pass_class = registry[stage]()
            except (KeyError, ImportError) as err:
                raise PassFailedException(
                    f"{self.name}: stage {stage} is not available ({err})"
                ) from None
            if stage == "graph-to-mid":
                from passes.graph_to_mid import GraphToMidPass

                assert issubclass(pass_class, GraphToMidPass)  # the registry's entry
                stages.append(pass_class(**self.pipeline_options()))
            else:
                stages.append(pass_class())
        return stages

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PassPipeline(tuple(self.stage_passes()), verify_after_stage).apply(ctx, op)


def verify_after_stage(done: ModulePass | None, op: builtin.ModuleOp, _next: ModulePass | None):
    """As xDSL's own driver does: a broken stage is caught where it broke."""
    if done is not None:
        op.verify()
