"""Plans are chosen per op, counting what tile 0 already holds; a program whose chosen plans
still do not fit tile memory together falls back, with the default catalog, to the plans that
store no operand twice, then (with a repeat) to sequences stored spread.

Five f32 GEMMs in a chain on 16 tiles, each with its own 512 x 512 weight (a function
argument, resident for the whole program): each GEMM alone is fastest as a K-split, which
keeps its weight in both layers, and the five weights then need more than a tile holds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from device.model import run_package
from device.model.host import stored_of_values, values_of_stored
from interpreters.graph import run_function
from ipu_dialects.graph import GemmOp
from passes import get_all_passes
from passes.ipu_pipeline import IpuPipelinePass
from planning.gemm_problem import GemmProblem
from planning.gemm_selection import replicates_an_operand, select_gemm_plan
from tools.ipu_run import compare, compile_module, find_function, make_context, random_inputs

LAYERS, TILES = 5, 16
WEIGHT = "tensor<512x512xf32>"
ACTIVATION = "tensor<128x512xf32>"


def chain_text() -> str:
    weights = ", ".join(f"%w{i}: {WEIGHT}" for i in range(LAYERS))
    lines = [f"func.func @chain(%x: {ACTIVATION}, {weights}) -> {ACTIVATION} {{"]
    previous = "%x"
    for i in range(LAYERS):
        lines.append(f"  %y{i} = graph.gemm {previous}, %w{i} : ({ACTIVATION}, {WEIGHT}) -> "
                     f"{ACTIVATION}")
        previous = f"%y{i}"
    return "\n".join([*lines, f"  func.return {previous} : {ACTIVATION}", "}", ""])


def catalog_of(module) -> list[str]:
    return [name.data for name in module.attributes["ipu.config"].catalog.data]


def test_each_gemm_alone_picks_the_k_split():
    problem = GemmProblem((128, 512), (512, 512), (128, 512), "f32")
    chosen = select_gemm_plan(problem, TILES)
    assert replicates_an_operand(chosen.candidate.name)


def test_the_chosen_k_splits_do_not_fit_together():
    module = Parser(make_context(), chain_text()).parse_module()
    with pytest.raises(PassFailedException, match="Out of memory on tile 0"):
        compile_module(module, TILES, "pad", with_assembly=False,
                       catalog=("amp_gemm_f32_ksplit",))


def plans_of(module) -> list[str]:
    return [op.plan.candidate.data for op in module.walk() if op.name == "mid.gemm"]


def test_memory_aware_selection_fits_the_chain_at_once_and_it_runs():
    """Selection counts what tile 0 already holds (`passes/operators/resident.py`): the
    weights the earlier GEMMs stored, the later ones at the least they can take. The first
    GEMM keeps its K-split, the others take the grid, which stores its weight once: the
    program fits in the pipeline's first attempt, and costs fewer cycles than the plans
    without replication that the fallback would give every GEMM."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from gemm_roofline import package_cycles  # what the device model charges

    module = Parser(make_context(), chain_text()).parse_module()
    reference = module.clone()
    func = find_function(reference)
    inputs = random_inputs(func, seed=2)
    expected = run_function(reference, inputs)
    ctx = make_context()
    lowered = Parser(ctx, chain_text()).parse_module()
    get_all_passes()["graph-to-mid"]()(tiles=TILES).apply(ctx, lowered)
    plans = plans_of(lowered)
    assert any(replicates_an_operand(p) for p in plans)
    assert not all(replicates_an_operand(p) for p in plans)
    package = compile_module(module, TILES, "pad", with_assembly=False)
    assert package.pipeline == f"ipu-pipeline{{tiles={TILES}}}"  # no fallback ran
    run = run_package(package, {t.name: values_of_stored(t, a)
                                for t, a in zip(package.inputs, inputs, strict=True)})
    assert not run.exchange_errors
    outcome = compare([stored_of_values(t, run.outputs[t.name]) for t in package.outputs],
                      expected, func.function_type.outputs.data)
    assert outcome.passed
    without = IpuPipelinePass(tiles=TILES).without_replicating_plans().catalog
    unreplicated = compile_module(Parser(make_context(), chain_text()).parse_module(), TILES,
                                  "pad", with_assembly=False, catalog=without)
    assert sum(package_cycles(package)) < sum(package_cycles(unreplicated))


def test_ipu_pipeline_compiles_the_chain_in_its_first_attempt():
    ctx = make_context()
    module = Parser(ctx, chain_text()).parse_module()
    IpuPipelinePass(tiles=TILES).apply(ctx, module)
    assert any(replicates_an_operand(name) for name in catalog_of(module))  # the default
    assert not any(isinstance(op, GemmOp) for op in module.walk())


def test_rows_that_do_not_fit_are_retried_from_placement_with_elements_kept_for_rows():
    """`RowsDoNotFit` from schedule-exchange: place-memory and schedule-exchange run again
    (the earlier stages once) with one memory element kept for rows, then two; past that the
    first diagnostic is the one reported, after the same without replicating plans."""
    from xdsl.dialects.builtin import ModuleOp

    from passes.ipu_pipeline import MAX_ROW_ELEMENTS
    from passes.schedule_exchange import RowsDoNotFit

    ran: list[str] = []

    def run(stages, fits_at: int) -> None:
        for stage in stages:
            label = stage.name
            if stage.name == "place-memory":
                label = f"place-memory{{{stage.row_elements}}}"
            ran.append(label)
            if stage.name == "schedule-exchange" and placed_with() < fits_at:
                raise RowsDoNotFit(f"rows do not fit with {placed_with()} elements")

    def placed_with() -> int:
        return int(next(r for r in reversed(ran) if r.startswith("place-memory"))[13:-1])

    front = ["graph-to-mid", "insert-conversions", "normalize-repeats", "mid-to-tile"]
    chosen = IpuPipelinePass(tiles=4).run_with_fallback(ModuleOp([]), lambda s: run(s, 2))
    assert chosen.row_elements == 2
    assert ran == [*front,
                   "place-memory{0}", "schedule-exchange",
                   "place-memory{1}", "schedule-exchange",
                   "place-memory{2}", "schedule-exchange"]
    ran.clear()
    with pytest.raises(RowsDoNotFit, match="rows do not fit with 0 elements"):
        IpuPipelinePass(tiles=4).run_with_fallback(
            ModuleOp([]), lambda s: run(s, MAX_ROW_ELEMENTS + 1))
    # then the same without replicating plans (they may leave room for the rows)
    assert ran.count("graph-to-mid") == 2
    assert [r for r in ran if r.startswith("place-memory")] == [
        f"place-memory{{{n}}}" for _attempt in range(2) for n in range(MAX_ROW_ELEMENTS + 1)]


def failing_attempts(error):
    """(the attempts' graph-to-mid options, a stage runner whose every attempt fails with
    `error(attempt number)` at its last stage)."""
    tried: list[tuple[bool, bool, int, bool]] = []

    def run(stages) -> None:
        first = stages[0]
        if first.name == "graph-to-mid":
            tried.append((bool(first.catalog), first.spread_sequences, first.spread_saving,
                          first.spread_inputs))
        if stages[-1].name == "schedule-exchange":
            raise error(len(tried))

    return tried, run


def test_out_of_memory_falls_back_to_spread_sequences_then_to_no_replication():
    """The memory attempts, in order, and the first diagnostic when all of them fail: a
    program with sequences first spreads them to save what place-memory measured tile 0 to
    overflow by (selection then chooses the plans that read them, each pricing its fetch,
    the replicating ones included), then gives up the replicating plans; the graph inputs
    are spread last."""
    from xdsl.dialects.builtin import ModuleOp

    from passes.place_memory import OutOfTileMemory

    module = Parser(make_context(), REPEAT_TEXT).parse_module()
    tried, run = failing_attempts(lambda n: OutOfTileMemory(f"out of memory, attempt {n}",
                                                            overflow=1000))
    with pytest.raises(OutOfTileMemory, match="attempt 1"):
        IpuPipelinePass(tiles=4).run_with_fallback(module, run)
    assert tried == [(False, False, 0, False), (False, True, 1000, False), (True, True, 1000, False),
                     (True, True, 0, False), (True, True, 0, True)]
    tried.clear()
    with pytest.raises(OutOfTileMemory, match="attempt 1"):  # no repeat: no sequence to spread
        IpuPipelinePass(tiles=4).run_with_fallback(ModuleOp([]), run)
    assert tried == [(False, False, 0, False), (True, False, 0, False), (True, False, 0, True)]
    tried.clear()
    with pytest.raises(OutOfTileMemory, match="attempt 1"):  # a catalog is taken as given
        IpuPipelinePass(tiles=4, catalog=("amp_gemm_f32_grid",)).run_with_fallback(module, run)
    assert tried == [(True, False, 0, False), (True, True, 1000, False), (True, True, 0, False),
                     (True, True, 0, True)]


def test_a_range_fragmentation_left_too_small_is_the_saving_the_spread_aims_at():
    """No overflow is known when a buffer finds no free range: the spread then saves at least
    that buffer's bytes (`OutOfTileMemory.shortfall`); the graph inputs, which free no row
    memory, are not spread for it."""
    from passes.place_memory import OutOfTileMemory

    module = Parser(make_context(), REPEAT_TEXT).parse_module()
    tried, run = failing_attempts(lambda n: OutOfTileMemory(f"no free range, attempt {n}",
                                                            shortfall=24576))
    with pytest.raises(OutOfTileMemory, match="attempt 1"):
        IpuPipelinePass(tiles=4).run_with_fallback(module, run)
    assert tried == [(False, False, 0, False), (False, True, 24576, False),
                     (True, True, 24576, False), (True, True, 0, False)]


ELEMENTS_APART = """
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 1, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
  func.func @elements() {
    %a = tile.buffer @a input 0 on #tile.tiles<0 to 1> shard [720, 64] f16 amp_left interleaved align 32 tail 16
    %b = tile.buffer @b input 1 on #tile.tiles<0 to 1> shard [64, 64] f16 amp_right standard align 32 tail 0
    %c = tile.buffer @c output 0 on #tile.tiles<0 to 1> shard [1000, 64] f16 amp_output interleaved align 32 tail 0
    tile.kernel @amp_gemm_f16_init(%c[() -> (0)], %a[() -> (0)], %b[() -> (0)]) scalars [720] on #tile.tiles<0 to 1> iv() provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "r">
    func.return
  }
}
"""


def test_no_range_apart_from_a_partners_elements_is_a_shortage_the_pipeline_answers():
    """A buffer that finds free ranges, but none in memory elements apart from its kernel
    partners', is out of memory as any other (the 8-layer GPT-2-small stack met it at its
    first attempt, and the diagnostic stopped the compile instead of starting the fallback):
    `OutOfTileMemory`, its shortfall the buffer's bytes."""
    from passes.place_memory import OutOfTileMemory, PlaceMemoryPass

    ctx = make_context()
    module = Parser(ctx, ELEMENTS_APART).parse_module()
    with pytest.raises(OutOfTileMemory, match="apart from @a") as caught:
        PlaceMemoryPass().apply(ctx, module)
    assert caught.value.shortfall == 128000 and caught.value.overflow is None


def test_a_negative_spread_saving_is_refused():
    module = Parser(make_context(), REPEAT_TEXT).parse_module()
    with pytest.raises(PassFailedException, match=r"spread-saving=-1 is negative \(bytes tile 0 "
                       r"must hold fewer; 0 spreads by a budget\)"):
        IpuPipelinePass(tiles=4, spread_saving=-1).apply(make_context(), module)


def stack_text(rows: int, width: int, layers: int) -> str:
    """A stack of `layers` f32 GEMMs `[rows, width] x [width, width]` as one graph.repeat."""
    act, weight = f"tensor<{rows}x{width}xf32>", f"tensor<{width}x{width}xf32>"
    weights = f"tensor<{layers}x{width}x{width}xf32>"
    return f"""
func.func @stack(%x: {act}, %w: {weights}) -> {act} {{
  %y = graph.repeat {layers} carried(%c = %x : {act}) sequence(%wi = %w : {weights}) {{
    %z = graph.gemm %c, %wi : ({act}, {weight}) -> {act}
    graph.yield %z : {act}
  }} -> {act}
  func.return %y : {act}
}}
"""


REPEAT_TEXT = stack_text(4, 8, 3)
STACK_TEXT = stack_text(16, 256, 12)


def test_a_program_whose_inputs_exceed_the_tiles_says_how_many_tiles_it_needs_first():
    """When every attempt runs out of memory and the graph inputs alone (written before the
    program runs) need more than the tiles hold, the diagnostic leads with the fewest tiles
    that could hold them; where they fit, it does not (the bound proves nothing there)."""
    from passes.place_memory import OutOfTileMemory

    need = 16 * 256 * 4 + 12 * 256 * 256 * 4  # x and the weights, f32
    usable = 638976 - 32768  # a tile outside its code region
    module = Parser(make_context(), STACK_TEXT).parse_module()
    with pytest.raises(OutOfTileMemory) as caught:
        IpuPipelinePass(tiles=4).apply(make_context(), module)
    assert str(caught.value).startswith(
        f"The program's graph inputs alone need {need} bytes, more than its 4 tiles hold "
        f"outside their code regions ({4 * usable}): it needs at least {-(-need // usable)} "
        "tiles. Out of memory on tile 0: ")
    module = Parser(make_context(), STACK_TEXT).parse_module()
    with pytest.raises(OutOfTileMemory) as caught:  # 8 tiles hold the inputs: no bound
        IpuPipelinePass(tiles=8).apply(make_context(), module)
    assert str(caught.value).startswith("Out of memory on tile")
