"""Selection counts what the tiles already hold (`passes/operators/resident.py`): a plan that
fits beside the program's other stored values on its tiles is preferred to a cheaper one that
does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType
from xdsl.parser import Parser
from xdsl.rewriter import Rewriter

from device.target import IPU21
from ipu_dialects import graph, mid
from passes import get_all_passes
from passes.operators.resident import ResidentTracker
from planning.gemm_problem import GemmProblem
from planning.gemm_selection import evaluate_candidates, plan_tile_memory, row_tile_memory
from planning.shard_geometry import geometry
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
    fit there whatever selection counts. The GEMM's selection sees it (`spread_operands`):
    it takes the sequence stored spread over the chip, fetching each layer's weight, at the
    first attempt, and the program runs (the pipeline's spread fallback did this before,
    after place-memory measured the overflow)."""
    module = Parser(make_context(), deep_repeat_text()).parse_module()
    package = compile_module(module, 16, "pad", with_assembly=False)
    assert package.pipeline == "ipu-pipeline{tiles=16}"
    assert any(op.results and op.results[0].name_hint == "w_fetched" for op in module.walk())
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
    lhs = geometry((128, 128), row_major_on(4, 16))  # 4 shards of 16,384 bytes
    rhs = geometry((128, 128), row_major_on(2, 16))  # 2 shards of 32,768 bytes
    others = resident.other_elements([lhs, rhs])  # on the element's tiles only
    assert others[:2].tolist() == [(LAYERS - 1) * 32768] * 2 and not others[2:].any()
    stored = resident.newly_stored([lhs, rhs])
    assert stored[:2].tolist() == [LAYERS * 32768] * 2 and not stored[2:].any()


TWO_SEQUENCES = """
func.func @two(%x0: tensor<64x128xf32>, %ws: tensor<8x128x128xf32>, %vs: tensor<8x128x128xf32>)
    -> tensor<64x128xf32> {
  %out = graph.repeat 8 carried(%x = %x0 : tensor<64x128xf32>) sequence(%w = %ws : tensor<8x128x128xf32>, %v = %vs : tensor<8x128x128xf32>) {
    %y = graph.gemm %x, %w : (tensor<64x128xf32>, tensor<128x128xf32>) -> tensor<64x128xf32>
    %z = graph.gemm %y, %v : (tensor<64x128xf32>, tensor<128x128xf32>) -> tensor<64x128xf32>
    graph.yield %z : tensor<64x128xf32>
  } -> tensor<64x128xf32>
  func.return %out : tensor<64x128xf32>
}
"""


def test_a_sequence_no_plan_stored_yet_counts_nowhere():
    """At the first GEMM the second's weights have no format: they count on no tile (where
    they go, in place or spread on the tiles that hold least, is their own GEMM's to find,
    against every earlier op's peak), and that GEMM reserves nothing for them before."""
    module = Parser(make_context(), TWO_SEQUENCES).parse_module()
    function = find_function(module)
    tracker = ResidentTracker.of(function, 16)
    first, second = [op for op in function.walk() if isinstance(op, graph.GemmOp)]
    assert not tracker.at(first).live.any()
    resident = tracker.at(second)
    assert resident.new_inputs == (False, True) and resident.reserved == 0
    rhs = geometry((128, 128), row_major_on(2, 16))
    stored = resident.newly_stored([geometry((64, 128), row_major_on(4, 16)), rhs])
    assert stored[:2].tolist() == [8 * 32768] * 2 and not stored[2:].any()


TWO_GEMMS = """
func.func @two(%x: tensor<64x256xf32>, %w0: tensor<256x256xf32>, %w1: tensor<256x256xf32>)
    -> tensor<64x256xf32> {
  %y0 = graph.gemm %x, %w0 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %y1 = graph.gemm %y0, %w1 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  func.return %y1 : tensor<64x256xf32>
}
"""


def test_an_input_no_plan_stored_yet_counts_at_its_bytes_over_every_tile():
    text = TWO_GEMMS
    module = Parser(make_context(), text).parse_module()
    function = find_function(module)
    tracker = ResidentTracker.of(function, 16)
    first = next(op for op in function.walk() if isinstance(op, graph.GemmOp))
    resident = tracker.at(first)
    # w1, live after the first GEMM, at the least it can take: over every tile
    assert resident.live.tolist() == [256 * 256 * 4 // 16] * 16
    assert not resident.earlier_peak.any()


def row_major_on(parts: int, tiles: int, first_tile: int = 0) -> mid.TensorFormatAttr:
    """A row-major format of a 2-D value cut into `parts` row shards from `first_tile`."""
    tiling = [mid.AxisTilingAttr(1, parts), mid.AxisTilingAttr(1, 1)]
    return mid.TensorFormatAttr("f32", "row_major", tiling, group=tiles, first_tile=first_tile)


def test_a_plan_is_checked_on_its_own_tiles_not_on_tile_0():
    """An input stored from tile 8 (a moved home) crowds tiles 8..11, not tile 0: a plan on
    tiles 0..3 fits beside it, the same plan moved onto tiles 8..11 does not; and what a
    chosen plan held is an earlier peak on its tiles only."""
    text = TWO_GEMMS
    function = find_function(Parser(make_context(), text).parse_module())
    w1 = function.args[2]
    home = row_major_on(4, 16, first_tile=8)  # 65,536 bytes on each of tiles 8..11
    Rewriter.replace_value_with_new_type(
        w1, TensorType(w1.type.element_type, w1.type.get_shape(), home))
    tracker = ResidentTracker.of(function, 16)
    first = next(op for op in function.walk() if isinstance(op, graph.GemmOp))
    resident = tracker.at(first)
    assert resident.live.tolist() == [0] * 8 + [65536] * 4 + [0] * 4
    shapes = [(64, 256), (256, 256)]
    room = 100_000
    on_0 = [row_major_on(4, 16), row_major_on(4, 16)]
    on_8 = [row_major_on(4, 16, 8), row_major_on(4, 16, 8)]
    assert resident.fits(40_000, on_0, shapes, room, ((64, 256), on_0[0]))
    assert not resident.fits(40_000, on_8, shapes, room, ((64, 256), on_8[0]))
    tracker.record(resident, 40_000, on_0, shapes, ((64, 256), on_0[0]))
    # tiles 0..3: x and w0, stored there for the first time (16,384 + 65,536 bytes a tile),
    # are live at every earlier op, less what those ops reserved for them on every tile (their
    # bytes over the 16 tiles: 4,096 + 16,384), above the plan's 40,000; tiles 8..11: w1
    stored = 16_384 + 65_536 - (4_096 + 16_384)
    assert tracker.earlier_peak.tolist() == [stored] * 4 + [0] * 4 + [65536] * 4 + [0] * 4


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


def test_a_computed_value_counts_on_its_tiles_until_its_last_use(monkeypatch):
    """y0 waits for the add while the second GEMM runs: its shards are live there, on the
    tiles its plan stored it on; at the add, whose plan holds both operands, nothing else."""
    from passes.graph_to_mid import GraphToMidLowering

    text = """
func.func @two(%x: tensor<64x256xf32>, %w0: tensor<256x256xf32>, %w1: tensor<256x256xf32>)
    -> tensor<64x256xf32> {
  %y0 = graph.gemm %x, %w0 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %y1 = graph.gemm %x, %w1 : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %z = graph.add %y0, %y1 : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  func.return %z : tensor<64x256xf32>
}
"""
    seen: dict[str, tuple] = {}
    selection = GraphToMidLowering.selection

    def spy(self, op):
        ctx = selection(self, op)
        seen[op.results[0].name_hint] = (ctx.resident, self.resident.computed[:])
        return ctx

    monkeypatch.setattr(GraphToMidLowering, "selection", spy)
    module = Parser(make_context(), text).parse_module()
    get_all_passes()["graph-to-mid"]()(tiles=16).apply(make_context(), module)
    at_y1, computed = seen["y1"]
    (y0,) = computed
    stored = geometry(y0.type.get_shape(), y0.type.encoding)
    expected = np.zeros(16, dtype=np.int64)
    expected[stored.first_tile:stored.tile_stop] = stored.shard_bytes()
    assert at_y1.live.tolist() == expected.tolist() and expected.any()
    at_z, _ = seen["z"]
    assert not at_z.live.any()
