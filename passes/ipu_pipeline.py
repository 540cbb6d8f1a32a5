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

Plans are chosen per op, each the fastest that fits with that op's own buffers; the program
as a whole may then not fit (the K-split replicates its B in both layers, which doubles a
weight that stays resident). With the default catalog, when `place-memory` reports that the
program is out of memory (`OutOfTileMemory`), the stages run once more without the plans
that replicate an operand (`run_with_fallback`; `ipu-run` does the same). An explicit
`catalog` is taken as given. When `schedule-exchange` finds no room for the exchange rows
(`RowsDoNotFit`: a program whose buffers fill the standard memory of every tile, such as a
12-layer stack at full width), the stages run again with
`place-memory{row-elements=1}` (the rest of the code region's memory element kept free of
buffers for the rows), then `row-elements=2` (one element more).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import PassFailedException

from passes.stages import get_stage_passes
from planning.pipeline_config import PipelineOptions

# The rows' fallback keeps at most this many memory elements for rows (the code region's and
# one more: 96 KiB on the IPU21 model, of 624).
MAX_ROW_ELEMENTS = 2
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
    # memory elements place-memory keeps for exchange rows (`place-memory{row-elements}`;
    # what `run_with_fallback` asks for when the rows do not fit otherwise)
    row_elements: int = 0

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
            elif stage == "place-memory":
                from passes.place_memory import PlaceMemoryPass

                assert issubclass(pass_class, PlaceMemoryPass)  # the registry's entry
                stages.append(pass_class(row_elements=self.row_elements))
            else:
                stages.append(pass_class())
        return stages

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        self.run_with_fallback(op, lambda pipeline: PassPipeline(
            tuple(pipeline.stage_passes()), verify_after_stage).apply(ctx, op))

    def run_with_fallback(self, module: builtin.ModuleOp,
                          run: Callable[[IpuPipelinePass], None]) -> None:
        """`run` this pipeline on `module`; if the default catalog's choice runs out of
        memory, restore `module` and `run` `without_replicating_plans()`. When that fails
        too, the first diagnostic is the one reported."""
        from passes.place_memory import OutOfTileMemory  # loaded when run, like the stages
        from passes.schedule_exchange import RowsDoNotFit

        original = module.clone()
        try:
            run(self)
        except RowsDoNotFit as error:
            if self.row_elements >= MAX_ROW_ELEMENTS:
                raise
            restore(module, original)
            try:
                replace(self, row_elements=max(1, self.row_elements + 1)).run_with_fallback(
                    module, run)
            except PassFailedException:
                raise error from None
        except OutOfTileMemory as error:
            if self.catalog:
                raise
            restore(module, original)
            try:
                run(self.without_replicating_plans())
            except PassFailedException:
                raise error from None

    def without_replicating_plans(self) -> IpuPipelinePass:
        from planning.gemm_problem import default_catalog_names
        from planning.gemm_selection import replicates_an_operand

        names = tuple(n for n in default_catalog_names(self.gemm_partials)
                      if not replicates_an_operand(n))
        return replace(self, catalog=names)


def restore(module: builtin.ModuleOp, original: builtin.ModuleOp) -> None:
    """Give `module` the ops and attributes of `original` (a clone taken before the stages)."""
    for op in list(module.body.block.ops):
        op.detach()
        op.erase(safe_erase=False)
    for op in list(original.body.block.ops):
        op.detach()
        module.body.block.add_op(op)
    module.attributes.clear()
    module.attributes.update(original.attributes)


def verify_after_stage(done: ModulePass | None, op: builtin.ModuleOp, _next: ModulePass | None):
    """As xDSL's own driver does: a broken stage is caught where it broke."""
    if done is not None:
        op.verify()
