"""The 2-D grid GEMM plan (`planning/gemm_grid.py`) on the device model.

The plan's exchange phases are concurrent groups (one sender per grid row or column, all in
one phase) and its kernels read the blocks a tile holds in place (`home` views). These tests
run it from the encoded words and show that the model is not fooled: a receiver listening to
another group's sender, or a home tile reading its slot instead of its own block, fails.
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from e2e_support import compile_case, gemm_module, gemm_op_counts, run_verdict
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from device import isa
from device.package import ExchangeStep, KernelStep, LoopStep, Package
from device.target import IPU21
from frontend.builder import f16, f32
from tools.ipu_run import make_context

GRID_F16 = ("amp_gemm_f16_grid",)
GEMM_64 = ("func.func @g(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) -> tensor<64x64xf16> {\n"
           "  %c = graph.gemm %a, %b : (tensor<64x128xf16>, tensor<128x64xf16>) -> "
           "tensor<64x64xf16>\n  func.return %c : tensor<64x64xf16>\n}\n")


@pytest.mark.parametrize("lhs,rhs,element,tiles,catalog", [
    ((200, 300), (300, 330), f16, 16, GRID_F16),  # 5 x 3 grid, padding on every axis
    ((64, 640), (640, 128), f16, 4, GRID_F16),
    ((96, 256), (256, 200), f32, 12, ("amp_gemm_f32_grid",)),
    ((48, 128), (128, 512), f16, 8, ("amp_gemm_f16_grid_p16",)),
    ((256, 64), (64, 64), f16, 16, GRID_F16),  # one K block: the init phase only
])
def test_grid_plan_passes_on_the_device_model(lhs, rhs, element, tiles, catalog):
    case = compile_case(gemm_module(lhs, rhs, element), tiles, seed=5, catalog=catalog)
    assert run_verdict(case) is None


def grid_case(tiles: int = 16):
    return compile_case(gemm_module((200, 300), (300, 330), f16), tiles, seed=7,
                        catalog=GRID_F16)


def senders_of(package: Package, step: ExchangeStep) -> dict[int, int]:
    """tile -> the source its row selects (receivers) or -1 (senders), for active tiles."""
    roles = {}
    for tile in np.flatnonzero(step.row_id >= 0).tolist():
        instrs = isa.decode(package.rows[int(step.row_id[tile])].tolist(), step.row_address)
        select = next((i for i in instrs if isinstance(i, isa.SendPicP)), None)
        roles[tile] = -1 if select is None else select.xpic & XPIC_SOURCE_BITS
    return roles


XPIC_SOURCE_BITS = 0x1FFF  # sendpicp's XPIC field: mux selector << 13 | source tile


def test_a_grid_phase_has_concurrent_senders():
    package = grid_case().package
    phases = [s for s in package.steps if isinstance(s, ExchangeStep)]
    counts = [sum(1 for v in senders_of(package, s).values() if v == -1) for s in phases]
    assert max(counts) >= 3  # 5 grid rows or 3 grid columns send in one phase


def test_a_receiver_listening_to_another_group_fails_the_run():
    case = grid_case()
    assert run_verdict(case) is None
    package = case.package
    index, step = next((i, s) for i, s in enumerate(package.steps)
                       if isinstance(s, ExchangeStep)
                       and sum(v == -1 for v in senders_of(package, s).values()) >= 2)
    roles = senders_of(package, step)
    senders = sorted(t for t, v in roles.items() if v == -1)
    receiver = next(t for t, v in roles.items() if v == senders[0])
    instrs = isa.decode(package.rows[int(step.row_id[receiver])].tolist(), step.row_address)
    # the sendpicp selecting the source (its mux, own or pair, stays)
    instrs[0] = replace(instrs[0], xpic=instrs[0].xpic & ~XPIC_SOURCE_BITS | senders[1])
    corrupted = copy.deepcopy(package)
    corrupted.rows.append(np.asarray(isa.encode(instrs, step.row_address), dtype=np.uint32))
    corrupted.steps[index].row_id[receiver] = len(corrupted.rows) - 1
    verdict = run_verdict(case, corrupted)
    assert verdict is not None and verdict.startswith("outputs differ")


def first_gemm_call(steps: list) -> KernelStep:
    """The first AMP call of the program as stored (inside a kept loop: its body's step)."""
    for step in steps:
        if isinstance(step, LoopStep):
            found = first_gemm_call(step.body)
            if found is not None:
                return found
        elif isinstance(step, KernelStep) and step.symbol.startswith("amp_gemm"):
            return step
    return None  # type: ignore[return-value]


def test_a_home_tile_reading_its_slot_fails_the_run():
    case = grid_case()
    assert run_verdict(case) is None
    corrupted = copy.deepcopy(case.package)
    call = first_gemm_call(corrupted.steps)
    left = call.pointers[:, 1]  # the A panel: the slot on most tiles, home on a few
    slot = int(np.bincount(left).argmax())
    home_rows = np.flatnonzero(left != slot)
    assert home_rows.size, "some tiles read panel 0 of A in place"
    call.pointers[home_rows[0], 1] = slot  # that tile's slot holds no panel 0 of A
    verdict = run_verdict(case, corrupted)
    assert verdict is not None and verdict.startswith("outputs differ")


def op_counts(tiles: int) -> list[int]:
    return gemm_op_counts(tiles, GRID_F16)


def test_op_counts_do_not_grow_with_the_tile_count():
    assert op_counts(16) == op_counts(64) == op_counts(1472)


def test_mid_to_tile_names_a_dispatch_that_is_no_gemm_plan(tmp_path, capsys):
    from tools.ipu_opt import IpuOptMain

    source = tmp_path / "g.mlir"
    source.write_text(GEMM_64)
    mid_text = tmp_path / "mid.mlir"
    IpuOptMain(args=[str(source), "-p", "graph-to-mid{tiles=4}", "-o", str(mid_text)]).run()
    mid_text.write_text(re.sub(r"dispatch<gemm_\w+", "dispatch<pointwise", mid_text.read_text()))
    with pytest.raises(SystemExit) as exited:
        IpuOptMain(args=[str(mid_text), "-p", "mid-to-tile"]).run()
    assert exited.value.code == 1
    assert ("mid-to-tile: mid.gemm %c: dispatch 'pointwise' is not gemm_blocks, gemm_grid, "
            "gemm_ksplit or gemm_grid3d" in capsys.readouterr().err)


def test_a_grid_plan_whose_operands_are_cut_over_different_grids_is_invalid():
    from ipu_dialects.mid import AxisTilingAttr, OperandPlanAttr, OperatorPlanAttr
    from planning.gemm_problem import CATALOG, GemmProblem
    from planning.gemm_selection import build_gemm_plan, validate_gemm_plan

    grid = next(c for c in CATALOG if c.name == "amp_gemm_f16_grid")
    problem = GemmProblem((256, 256), (256, 256), (256, 256), "f16")
    plan = build_gemm_plan(grid, problem, 16, "pad", IPU21)
    operands = []
    for e in plan.operands.data:
        fmt = e.format
        if e.operand.data == "rhs":
            fmt = fmt.with_changes(tiling=[AxisTilingAttr(64, 2), AxisTilingAttr(64, 8)])
        operands.append(OperandPlanAttr(e.operand.data, e.role.data, fmt, e.alignment.data,
                                        e.tail.data))
    broken = OperatorPlanAttr(plan.candidate.data, plan.dispatch, plan.accumulate.data,
                              plan.amp.data, operands, plan.distinct_pairs, plan.alias.data)
    assert validate_gemm_plan(broken, problem, 16, IPU21) == (
        "lhs, rhs and out must be cut over one grid (out [4, 4], lhs [4, 4], rhs [2, 8])")


def test_a_grid_that_cannot_fit_says_no_tile_count_helps():
    from planning.gemm_problem import GemmProblem, catalog_entries
    from planning.gemm_selection import evaluate_candidates

    # one 16x64 output block: the grid is 1 x 1 whatever the tiles, with all of K on it
    problem = GemmProblem((16, 8192), (8192, 64), (16, 64), "f16")
    (grid,) = evaluate_candidates(problem, 4, "pad", IPU21, catalog_entries(GRID_F16))
    assert grid.reason is not None and grid.reason.endswith(
        "no tile count helps: the grid plan cuts the output into at most 1 x 1 blocks of 16 "
        "rows by 64 columns here, and on all 1472 tiles a grid tile still does not fit")


def test_the_grid_fit_hint_names_a_tile_count_the_whole_pipeline_compiles_on():
    import re

    from planning.gemm_problem import GemmProblem, catalog_entries
    from planning.gemm_selection import evaluate_candidates
    from tools.ipu_run import compile_module, parse_module

    problem = GemmProblem((64, 4096), (4096, 128), (64, 128), "f16")
    (grid,) = evaluate_candidates(problem, 4, "pad", IPU21, catalog_entries(GRID_F16))
    hinted = re.search(r"it fits on (\d+) tiles$", grid.reason or "")
    assert hinted, grid.reason
    fits = int(hinted.group(1))
    text = ("func.func @g(%a: tensor<64x4096xf16>, %b: tensor<4096x128xf16>) -> "
            "tensor<64x128xf16> {\n  %c = graph.gemm %a, %b : (tensor<64x4096xf16>, "
            "tensor<4096x128xf16>) -> tensor<64x128xf16>\n  func.return %c : tensor<64x128xf16>\n}\n")
    compile_module(parse_module(Path("g.mlir"), text), fits, "pad", with_assembly=False,
                   catalog=GRID_F16)  # places and schedules: no diagnostic
    (one_less,) = evaluate_candidates(problem, fits - 1, "pad", IPU21, catalog_entries(GRID_F16))
    assert one_less.reason is not None


@st.composite
def grid_cases(draw):
    extent = st.integers(1, 200)  # on one tile the largest need more memory than it has
    m, k, n = draw(extent), draw(extent), draw(extent)
    element, catalog = draw(st.sampled_from([
        (f16, GRID_F16), (f32, ("amp_gemm_f32_grid",)), (f16, ("amp_gemm_f16_grid_p16",))]))
    tiles = draw(st.sampled_from([1, 2, 3, 5, 8, 16, 24, 64]))
    return (m, k), (k, n), element, catalog, tiles


@settings(max_examples=12, deadline=None)
@given(grid_cases(), st.integers(0, 2**16))
def test_grid_plan_differential(case, seed):
    """Random shapes (padding on every axis) and tile counts with the grid plan forced. A
    shape whose grid does not fit the drawn tiles (161x65 by 65x193 in f16 on one tile: 270,336
    bytes of interleaved memory) is refused with the fewest tiles that fit, more than drawn,
    and on those it runs."""
    lhs, rhs, element, catalog, tiles = case
    try:
        compiled = compile_case(gemm_module(lhs, rhs, element), tiles, seed=seed,
                                catalog=catalog)
    except PassFailedException as error:
        hinted = re.search(r"it fits on (\d+) tiles", str(error))
        assert hinted and "no candidate fits in tile memory" in str(error), (case, str(error))
        fits = int(hinted.group(1))
        assert fits > tiles, (case, fits)
        compiled = compile_case(gemm_module(lhs, rhs, element), fits, seed=seed,
                                catalog=catalog)
    assert run_verdict(compiled) is None, case


def test_the_grid_chooser_keeps_the_output_inside_the_interleaved_region():
    """256x64 by 64x8192 on 18 tiles: a 1 x 16 grid fits tile memory in total but not its
    262144-byte output shard in the interleaved region; the 2 x 9 grid fits both."""
    from planning.gemm_problem import GemmProblem, catalog_entries
    from planning.gemm_selection import evaluate_candidates

    problem = GemmProblem((256, 64), (64, 8192), (256, 8192), "f16")
    (grid,) = evaluate_candidates(problem, 18, "pad", IPU21, catalog_entries(GRID_F16))
    assert grid.reason is None
    assert grid.plan.operand_plan("out").format.partitions == (2, 9)


REPO = Path(__file__).resolve().parents[2]
GRID_PLANS = ("amp_gemm_f16_grid", "amp_gemm_f32_grid")


def run_example_with(path: str, tiles: int, catalog: tuple[str, ...]):
    """Compile an example with only `catalog`'s GEMM plans and run it on the device model."""
    from device.model import run_package
    from device.model.host import stored_of_values, values_of_stored
    from interpreters.graph import run_function
    from tools.ipu_run import compare, compile_module, find_function, random_inputs

    module = Parser(make_context(), (REPO / path).read_text(), path).parse_module()
    func = find_function(module, None)
    inputs = random_inputs(func, seed=0)
    expected = run_function(module, inputs)
    package = compile_module(module, tiles, "pad", with_assembly=False, catalog=catalog)
    run = run_package(package, {t.name: values_of_stored(t, a)
                                for t, a in zip(package.inputs, inputs, strict=True)})
    outcome = compare([stored_of_values(t, run.outputs[t.name]) for t in package.outputs],
                      expected, func.function_type.outputs.data)
    return package, outcome.passed and not run.exchange_errors


@pytest.mark.parametrize("path, tiles, loops", [
    ("examples/repeat_layers.mlir", 4, [4]),  # the weight is a per-layer sequence
    ("examples/repeat_layers.mlir", 16, [4]),
    ("examples/nested_repeat_f16.mlir", 16, [3, 2]),
])
def test_grid_gemms_in_repeat_bodies_pass_and_keep_the_loops(path, tiles, loops):
    package, passed = run_example_with(path, tiles, GRID_PLANS)
    assert passed
    # the repeats stay loops (a grid block's panel loop may be kept as one too)
    assert [s.count for s in flat(package.steps) if isinstance(s, LoopStep)
            and s.provenance.startswith("graph.repeat")] == loops
    homes = [s for s in flat(package.steps) if isinstance(s, KernelStep)
             and s.symbol.startswith("amp_gemm") and len(np.unique(s.pointers[:, 2])) > 1]
    assert homes, "some tiles read their B block in place (home views)"


def flat(steps: list) -> list:
    out = []
    for step in steps:
        out.append(step)
        if isinstance(step, LoopStep):
            out += flat(step.body)
    return out
