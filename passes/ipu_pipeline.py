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
weight that stays resident). So the pipeline falls back on memory (`run_with_fallback`;
`ipu-run` does the same): when `place-memory` reports the program out of memory
(`OutOfTileMemory`), the stages run again, first without the plans that replicate an operand
(default catalog only: an explicit `catalog` is taken as given), then, for a program with a
repeat, with its largest per-iteration sequences stored spread over the chip until tile 0
holds what it overflowed by fewer (`graph-to-mid{spread-sequences=true spread-saving=N}`: a
12-layer stack at full width, whose layers' shards would otherwise all sit on the first
tiles), then with as many spread as keep them to a quarter of tile 0, and last with the
graph inputs stored on the least-loaded tiles and each brought to its consumers by a
`mid.rearrange` (`graph-to-mid{spread-inputs=true}`: a layer written with one GEMM per head,
whose heads' weights would otherwise all sit on the same tiles). When `schedule-exchange` finds no room for the
exchange rows (`RowsDoNotFit`: buffers that fill the standard memory of every tile), only
`place-memory` and `schedule-exchange` run again, from the module `mid-to-tile` produced, with
`place-memory{row-elements=1}` (the rest of the code region's memory element kept free of
buffers for the rows), then `row-elements=2` (one element more). When every attempt runs
out of memory and the graph inputs alone need more than the tiles hold, the diagnostic leads
with the fewest tiles that could (`inputs_bound`: GPT-2-small x12 on 256 tiles).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
# The stages' names in the order they run: the stage registry's order (`passes/stages.py`).
STAGES = tuple(get_stage_passes())


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
        self.run_with_fallback(
            op, lambda stages: PassPipeline(tuple(stages), verify_after_stage).apply(ctx, op))

    def run_with_fallback(self, module: builtin.ModuleOp,
                          run: Callable[[Sequence[ModulePass]], None]) -> IpuPipelinePass:
        """`run` this pipeline's stages on `module` (`run` applies the stages it is given, in
        order), falling back on memory: when place-memory reports the program out of memory,
        or schedule-exchange finds no room for the rows even with memory kept for them
        (`run_fitting_rows`), restore `module` and run `next_memory_attempt()`.
        Returns the pipeline that compiled the module; when every attempt fails, the first
        diagnostic is the one reported."""
        from passes.place_memory import OutOfTileMemory  # loaded when run, like the stages
        from passes.schedule_exchange import RowsDoNotFit

        original = module.clone()
        first_error: PassFailedException | None = None
        attempt: IpuPipelinePass | None = self
        while attempt is not None:
            try:
                return attempt.run_fitting_rows(module, run)
            except (OutOfTileMemory, RowsDoNotFit) as error:
                first_error = first_error or error
                overflow = error.overflow if isinstance(error, OutOfTileMemory) else None
                shortfall = error.shortfall if isinstance(error, OutOfTileMemory) else None
                attempt = attempt.next_memory_attempt(self, overflow, original, shortfall)
            if attempt is not None:
                restore(module, original.clone())  # a restore takes the clone's ops
        assert first_error is not None
        bound = inputs_bound(original, self.tiles)
        if bound is not None and isinstance(first_error, OutOfTileMemory):
            raise OutOfTileMemory(lead_with(str(first_error), bound), first_error.overflow)
        raise first_error

    def next_memory_attempt(self, first: IpuPipelinePass, overflow: int | None,
                            module: builtin.ModuleOp,
                            shortfall: int | None = None) -> IpuPipelinePass | None:
        """The pipeline to try after this one did not fit `module` (as given; `overflow`: by
        how many bytes its fullest tile overflowed, if known; `shortfall`: at least how many
        bytes it must hold fewer, the overflow or a buffer that found no free range), or
        None: for a program with per-iteration sequences, sequences stored spread until the
        selection's estimate holds `shortfall` bytes fewer (`graph-to-mid{spread-sequences=true
        spread-saving=N}`: its GEMMs price the fetch of each iteration's element, the
        replicating plans still candidates); then, with the default catalog, the plans that
        replicate no operand; then sequences spread until they hold at most a quarter of tile
        0; then the graph inputs stored on the least-loaded tiles and brought to their
        consumers (`graph-to-mid{spread-inputs=true}`)."""
        if not self.spread_sequences and has_sequences(module):
            saving = overflow if overflow is not None else shortfall
            return replace(self, spread_sequences=True, spread_saving=max(0, saving or 0))
        if not first.catalog and not self.catalog:
            return self.without_replicating_plans()
        if self.spread_sequences and self.spread_saving > 0:
            return replace(self, spread_saving=0)
        if not self.spread_inputs and overflow is not None:  # spreading frees no row memory
            return replace(self, spread_inputs=True)
        return None

    def run_fitting_rows(self, module: builtin.ModuleOp,
                         run: Callable[[Sequence[ModulePass]], None]) -> IpuPipelinePass:
        """Run the stages; while schedule-exchange's rows do not fit, run the placement and
        the schedule again (from the module mid-to-tile produced) with one more memory element
        kept for rows."""
        from passes.place_memory import OutOfTileMemory
        from passes.schedule_exchange import RowsDoNotFit

        stages = self.stage_passes()
        placing = next(i for i, s in enumerate(stages) if s.name == "place-memory")
        run(stages[:placing])
        lowered = module.clone()
        first_error: RowsDoNotFit | None = None
        pipeline = self
        while True:
            try:
                run(pipeline.stage_passes()[placing:])
                return pipeline
            except RowsDoNotFit as error:
                first_error = first_error or error
                if pipeline.row_elements >= MAX_ROW_ELEMENTS:
                    raise first_error from None
            except OutOfTileMemory:  # the memory kept for rows was the buffers' room
                if first_error is None:
                    raise
                raise first_error from None
            restore(module, lowered.clone())
            pipeline = replace(pipeline, row_elements=max(1, pipeline.row_elements + 1))

    def without_replicating_plans(self) -> IpuPipelinePass:
        from planning.gemm_problem import default_catalog_names
        from planning.gemm_selection import replicates_an_operand

        names = tuple(n for n in default_catalog_names(self.gemm_partials)
                      if not replicates_an_operand(n))
        return replace(self, catalog=names)


def inputs_bound(module: builtin.ModuleOp, tiles: int | None) -> str | None:
    """The whole program's tile-count bound, when it proves that no plan can fit: the host
    writes every graph input before the program runs, so the inputs together must fit the
    memory the tiles have outside their code regions. A sentence with the fewest tiles that
    could hold them, or None when they fit (the program may still not: the bound is a floor)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import TensorType

    from device.target import IPU21
    from passes.operators.formats import whole_bytes

    if tiles is None:
        return None
    needed = sum(whole_bytes(arg.type) for f in module.walk() if isinstance(f, func.FuncOp)
                 for arg in f.args if isinstance(arg.type, TensorType))
    usable = IPU21.usable_bytes
    if needed <= tiles * usable:
        return None
    return (f"the program's graph inputs alone need {needed} bytes, more than its {tiles} "
            f"tiles hold outside their code regions ({tiles * usable}): it needs at least "
            f"{-(-needed // usable)} tiles")


def lead_with(message: str, sentence: str) -> str:
    """`message` (perhaps `file:line:col: error: ...`) led by `sentence`."""
    head, marker, body = message.partition(": error: ")
    lead = sentence[0].upper() + sentence[1:]
    return f"{head}{marker}{lead}. {body}" if marker else f"{lead}. {message}"


def has_sequences(module: builtin.ModuleOp) -> bool:
    """Whether `module` has a `graph.repeat` with per-iteration sequences (what spreading
    can help)."""
    from ipu_dialects.graph import RepeatOp

    return any(isinstance(op, RepeatOp) and op.sequences for op in module.walk())


def restore(module: builtin.ModuleOp, original: builtin.ModuleOp) -> None:
    """Give `module` the ops and attributes of `original` (a clone taken before the stages;
    its ops move to `module`)."""
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
