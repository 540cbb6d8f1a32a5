"""Selection counts what tile 0 already holds (`passes/operators/resident.py`): a plan that
fits beside the program's other stored values is preferred to a cheaper one that does not."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.parser import Parser

from device.target import IPU21
from ipu_dialects import graph
from passes import get_all_passes
from passes.operators.resident import ResidentTracker
from planning.gemm_problem import GemmProblem
from planning.gemm_selection import evaluate_candidates, plan_tile_memory, row_tile_memory
from tools.ipu_run import EXIT_PASS, compile_module, find_function, make_context, run_main

REPO = Path(__file__).resolve().parents[2]
LAYERS = 48


def deep_repeat_text(layers: int = LAYERS) -> str:
    """`examples/repeat_layers.mlir` with 48 layers: 3 MB of f32 weights, on 16 tiles."""
    text = (REPO / "examples/repeat_layers.mlir").read_text()
    return text.replace("graph.repeat 4 ", f"graph.repeat {layers} ").replace(
        "tensor<4x128x128xf32>", f"tensor<{layers}x128x128xf32>")


def test_a_deep_stack_runs_with_its_weights_spread(tmp_path):
    """On main this was `Out of memory on tile 0: ... ws 786432`: no GEMM plan holds a
    128 x 128 weight on more than the 4 tiles of its 64 x 64 blocks, so 48 of them do not
    fit there whatever selection counts; the pipeline's spread fallback stores the sequence
    over the chip (by the overflow place-memory measured) and the program runs."""
    package = compile_module(Parser(make_context(), deep_repeat_text()).parse_module(), 16,
                             "pad", with_assembly=False)
    assert "spread_sequences=true" in package.pipeline
    path = tmp_path / "deep.mlir"
    path.write_text(deep_repeat_text())
    assert run_main(path, tiles=16, quiet=True) == EXIT_PASS


def test_a_sequence_operand_counts_its_other_elements():
    ctx = make_context()
    module = Parser(ctx, deep_repeat_text()).parse_module()
    function = find_function(module)
    tracker = ResidentTracker.of(function, 16)
    gemm = next(op for op in function.walk() if isinstance(op, graph.GemmOp))
    resident = tracker.at(gemm)
    assert resident.sequence_counts == (1, LAYERS)  # lhs: the carried value; rhs: the weights
    assert resident.new_inputs == (False, True)
    shards = [1024, 2048]
    assert resident.other_elements(shards) == (LAYERS - 1) * 2048
    assert resident.newly_stored(shards) == LAYERS * 2048


def test_an_input_no_plan_stored_yet_counts_at_its_bytes_over_every_tile():
    text = """
func.func @two(%x: tensor<64x256xf32>, %w0: tensor<256x256xf32>, %w1: tensor<256x256xf32>)
    -> tensor<64x256xf32> {
  %y0 = graph.gemm %x, %w0 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %y1 = graph.gemm %y0, %w1 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  func.return %y1 : tensor<64x256xf32>
}
"""
    module = Parser(make_context(), text).parse_module()
    function = find_function(module)
    tracker = ResidentTracker.of(function, 16)
    first = next(op for op in function.walk() if isinstance(op, graph.GemmOp))
    resident = tracker.at(first)
    assert resident.live == 256 * 256 * 4 // 16  # w1, live after the first GEMM
    assert resident.earlier_peak == 0


def test_selection_with_room_picks_what_it_picked_before():
    """Where everything fits, memory-aware selection changes nothing: the example MLP's plans
    are the cheapest of each op."""
    from planning.gemm_problem import GemmProblem
    from planning.gemm_selection import select_gemm_plan

    ctx = make_context()
    module = Parser(ctx, (REPO / "examples/mlp_f16.mlir").read_text()).parse_module()
    get_all_passes()["graph-to-mid"]()(tiles=16).apply(ctx, module)
    for op in module.walk():
        if op.name != "mid.gemm":
            continue
        lhs, rhs, out = (v.type for v in (op.lhs, op.rhs, op.result))
        problem = GemmProblem.from_types(lhs, rhs, out, op.transpose_lhs is not None,
                                         op.transpose_rhs is not None)
        assert op.plan == select_gemm_plan(problem, 16).plan


PROBLEMS = [  # (lhs, rhs, out, precision): plain, tall, wide, deep, folded batches, f32, f8
    ((128, 128), (128, 128), (128, 128), "f16"),
    ((1024, 768), (768, 3072), (1024, 3072), "f16"),
    ((64, 4096), (4096, 64), (64, 64), "f16"),
    ((8, 384, 768), (768, 768), (8, 384, 768), "f16"),
    ((3, 100, 64), (64, 64), (3, 100, 64), "f32"),
    ((256, 256), (256, 256), (256, 256), "f8E4M3FNUZ"),
]


@pytest.mark.parametrize("tiles", [16, 1472])
@pytest.mark.parametrize("shapes", PROBLEMS, ids=lambda p: "x".join(map(str, p[0])))
def test_a_chosen_plan_counts_the_bytes_its_evaluation_did(shapes, tiles):
    """What resident memory records of a chosen GEMM (`plan_tile_memory`, from the plan
    alone) is what selection measured of its evaluation (`row_tile_memory`), folded plans
    refolded into the GEMM their layout planned."""
    lhs, rhs, out, precision = shapes
    problem = GemmProblem(lhs, rhs, out, precision)
    for evaluation in evaluate_candidates(problem, tiles, "pad", IPU21):
        if evaluation.reason is None:
            assert (plan_tile_memory(evaluation.plan, problem, IPU21)
                    == row_tile_memory(evaluation, IPU21)), evaluation.candidate.name
