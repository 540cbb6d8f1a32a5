"""GEMM operator candidates: construction, validation against concrete types, selection."""

import dataclasses

import pytest

from device.layouts import AMP_BLOCK
from device.target import IPU21
from ipu_dialects.mid import (
    AxisTilingAttr,
    DispatchKind,
    OperandPlanAttr,
    OperatorDispatchAttr,
    OperatorPlanAttr,
)
from planning.gemm_problem import CATALOG, GemmProblem, catalog_entries, default_catalog_names
from planning.gemm_selection import (
    NoValidPlan,
    build_gemm_plan,
    estimate_cycles,
    evaluate_candidates,
    select_gemm_plan,
    validate_gemm_plan,
)
from planning.shard_geometry import ShardGeometry

# the row plan's candidates (the grid plan has tests of its own below)
ROWS = DispatchKind.GEMM_BLOCKS
F16 = [c for c in CATALOG if c.precision == "f16" and c.accumulate == "f32" and c.dispatch == ROWS]
P16 = tuple(c for c in CATALOG if c.precision == "f16" and c.accumulate == "f16")  # gemm-partials=f16
F32 = [c for c in CATALOG if c.precision == "f32" and c.dispatch == ROWS]


def problem(m, k, n, precision="f16", batch_lhs=(), batch_rhs=(), **flags):
    import numpy as np

    out_batch = tuple(np.broadcast_shapes(batch_lhs, batch_rhs))
    lhs = (*batch_lhs, k, m) if flags.get("transpose_lhs") else (*batch_lhs, m, k)
    rhs = (*batch_rhs, n, k) if flags.get("transpose_rhs") else (*batch_rhs, k, n)
    return GemmProblem(lhs, rhs, (*out_batch, m, n), precision, **flags)


def replace_operand(plan: OperatorPlanAttr, name: str, **changes) -> OperatorPlanAttr:
    entries = []
    for e in plan.operands.data:
        if e.operand.data == name:
            fields = dict(operand=e.operand.data, role=e.role.data, format=e.format,
                          alignment=e.alignment.data, tail=e.tail.data)
            fields.update(changes)
            e = OperandPlanAttr(**fields)
        entries.append(e)
    return OperatorPlanAttr(plan.candidate.data, plan.dispatch, plan.accumulate.data,
                            plan.amp.data, entries, plan.distinct_pairs, plan.alias.data)


@pytest.mark.parametrize("tiles", [1, 4, 16])
@pytest.mark.parametrize("m,k,n", [(128, 256, 64), (100, 64, 70), (16, 128, 192)])
def test_retained_plan_shape_follows_the_spec(tiles, m, k, n):
    pr = problem(m, k, n)
    for cand in F16:
        plan = build_gemm_plan(cand, pr, tiles, "pad", IPU21)
        assert validate_gemm_plan(plan, pr, tiles, IPU21) is None
        lhs, rhs, out = (plan.operand_plan(o) for o in ("lhs", "rhs", "out"))
        rows = -(-m // cand.row_block)
        assert lhs.format.partitions == (min(tiles, rows), 1) == out.format.partitions
        assert lhs.format.blocks == (cand.row_block, AMP_BLOCK)
        assert rhs.format.blocks == (AMP_BLOCK, AMP_BLOCK)
        assert rhs.format.partition_count <= tiles
        assert (lhs.role.data, rhs.role.data, out.role.data) == ("left", "right", "output")
        assert out.format.memory.data == "interleaved" and lhs.format.memory.data == "standard"
        assert {e.alignment.data for e in (lhs, rhs, out)} == {IPU21.pace_alignment}
        assert lhs.tail.data == IPU21.amp_left_access_tail_bytes
        assert plan.distinct_pairs == (("out", "lhs"),)
        # FP32 partials across all of K: the kernels keep an f32 partials panel; a single
        # K block needs none (one FP32 product, rounded once by the FP16-output kernels)
        family = "amp_gemm_f16p32" if k > 64 else "amp_gemm_f16"
        assert plan.dispatch.init_symbol == f"{family}_init"
        assert plan.dispatch.accum_symbol == f"{family}_accum"
        assert plan.accumulate.data == "f32" and plan.amp.data == "A16/B16x16/C16"
        # every padded output row block lives on exactly one row tile
        g = ShardGeometry.from_format(pr.out_shape, out.format)
        assert g.padded_shape[-2] >= m and g.padded_shape[-1] == -(-n // 64) * 64


def test_fp32_plan_uses_the_a8_configuration():
    pr = problem(32, 64, 64, "f32")
    chosen = select_gemm_plan(pr, 4)
    assert chosen.candidate.precision == "f32"
    assert chosen.plan.amp.data == "A8/B8x16/C16"
    assert chosen.plan.dispatch.init_symbol == "amp_gemm_f32_init"


@pytest.mark.parametrize("flag", ["transpose_lhs", "transpose_rhs"])
def test_transposed_operands_are_stored_transposed(flag):
    pr = problem(64, 192, 128, **{flag: True})
    operand = "lhs" if flag == "transpose_lhs" else "rhs"
    chosen = select_gemm_plan(pr, 4)
    fmt = chosen.plan.operand_plan(operand).format
    assert fmt.order.data == {"lhs": "amp_left_t", "rhs": "amp_right_t"}[operand]
    # the tiling is the untransposed operand's with its last two axes swapped
    plain = select_gemm_plan(problem(64, 192, 128), 4).plan.operand_plan(operand).format
    assert fmt.blocks == plain.blocks[::-1]
    # a plan that stores the operand untransposed is refused, and the other way round
    for wrong, bad_flags, said in (
        (plain, {flag: True}, "is transposed but stored amp_"),
        (fmt, {}, "is not transposed but stored amp_"),
    ):
        entries = [
            OperandPlanAttr(e.operand.data, e.role.data, wrong if e.operand.data == operand
                            else e.format, e.alignment.data, e.tail.data)
            for e in chosen.plan.operands.data
        ]
        plan = OperatorPlanAttr(chosen.plan.candidate.data, chosen.plan.dispatch, "f32",
                                chosen.plan.amp.data, entries, chosen.plan.distinct_pairs)
        reason = validate_gemm_plan(plan, problem(64, 192, 128, **bad_flags), 4, IPU21)
        assert reason is not None and said in reason, reason


def test_transposed_rhs_keeps_k_whole():
    pr = problem(64, 512, 512, transpose_rhs=True)
    chosen = select_gemm_plan(pr, 64).plan
    split_k = chosen.operand_plan("rhs").format.tiling.data
    entries = [
        OperandPlanAttr(e.operand.data, e.role.data, e.format.with_changes(
            tiling=[split_k[0], AxisTilingAttr(64, 8)]) if e.operand.data == "rhs" else e.format,
            e.alignment.data, e.tail.data)
        for e in chosen.operands.data
    ]
    plan = OperatorPlanAttr(chosen.candidate.data, chosen.dispatch, "f32", chosen.amp.data,
                            entries, chosen.distinct_pairs)
    assert validate_gemm_plan(plan, pr, 64, IPU21) == "a transposed rhs must keep K whole on each tile"


def test_precision_mismatch_is_a_kernel_mode_failure():
    pr = problem(64, 64, 64, "f16")
    reasons = {e.candidate.name: e.reason for e in evaluate_candidates(pr, 4, "pad", IPU21)}
    assert all(reasons[c.name] is None for c in F16)
    assert all("does not run f16 operands" in reasons[c.name] for c in F32)


def test_reject_invalidates_only_the_indivisible_candidates():
    pr = problem(48, 64, 64)  # 48 rows: a multiple of 16 but not of 32 or 64
    evals = {e.candidate.name: e for e in evaluate_candidates(pr, 4, "reject", IPU21)}
    assert evals["amp_gemm_f16_r16"].reason is None
    assert "extent 48 is not a multiple of block 32" in evals["amp_gemm_f16_r32"].reason
    assert "extent 48 is not a multiple of block 64" in evals["amp_gemm_f16_r64"].reason
    # with padding every f16 candidate is valid, but the K-split: one K block has no halves
    padded = [e for e in evaluate_candidates(pr, 4, "pad", IPU21) if e.candidate.precision == "f16"]
    assert all(e.reason is None for e in padded if e.candidate.dispatch != DispatchKind.GEMM_KSPLIT)
    assert [e.reason for e in padded if e.candidate.dispatch == DispatchKind.GEMM_KSPLIT] == [
        "the K-split plan gives each of its two layers half of K; K has 1 block(s) of 64, an "
        "odd number"]
    with pytest.raises(NoValidPlan, match="extent 70 is not a multiple of block 64"):
        select_gemm_plan(problem(48, 64, 70), 4, "reject")


def test_validation_catches_a_broken_plan():
    pr = problem(64, 64, 64)
    good = build_gemm_plan(F16[0], pr, 4, "pad", IPU21)
    lhs_fmt = good.operand_plan("lhs").format
    cases = {
        "alignment 8 is not a multiple of the PACE alignment": replace_operand(good, "lhs", alignment=8),
        "lhs has role right": replace_operand(good, "lhs", role="right"),
        "lhs access tail 0 is shorter": replace_operand(good, "lhs", tail=0),
        "lhs needs a tile group of 8 tiles, only 4 available":
            replace_operand(good, "lhs", format=lhs_fmt.with_changes(group=8)),
        "each output-row tile must hold all of K":
            replace_operand(good, "lhs", format=lhs_fmt.with_changes(
                tiling=[AxisTilingAttr(16, 2), AxisTilingAttr(64, 2)])),
        "out must live in interleaved memory":
            replace_operand(good, "out", format=good.operand_plan("out").format.with_changes(memory="standard")),
    }
    for expected, plan in cases.items():
        assert expected in validate_gemm_plan(plan, pr, 4, IPU21)
    pointwise = OperatorPlanAttr("x", OperatorDispatchAttr("pointwise", init="gelu"), "f32", "",
                                 list(good.operands.data), good.distinct_pairs)
    assert "does not implement a gemm" in validate_gemm_plan(pointwise, pr, 4, IPU21)
    wrong_kernel = OperatorPlanAttr("x", OperatorDispatchAttr("gemm_blocks", 64, 64, "copy_words", "amp_gemm_f16_accum"),
                                    "f32", "A16/B16x16/C16", list(good.operands.data), good.distinct_pairs)
    assert "takes pointers ('out', 'src')" in validate_gemm_plan(wrong_kernel, pr, 4, IPU21)
    no_distinct = OperatorPlanAttr("x", good.dispatch, "f32", "A16/B16x16/C16", list(good.operands.data), ())
    assert "distinct memory elements" in validate_gemm_plan(no_distinct, pr, 4, IPU21)


def test_plans_too_big_for_tile_memory_are_invalid():
    pr = problem(16, 8192, 64)  # the 1 MiB right operand fits only when spread over tiles
    on_one = validate_gemm_plan(build_gemm_plan(F16[0], pr, 1, "pad", IPU21), pr, 1, IPU21)
    assert on_one is not None and "tile memory holds" in on_one
    assert validate_gemm_plan(build_gemm_plan(F16[0], pr, 16, "pad", IPU21), pr, 16, IPU21) is None
    small = dataclasses.replace(IPU21, sram_bytes=64 * 1024)
    reason = validate_gemm_plan(build_gemm_plan(F16[0], pr, 16, "pad", small), pr, 16, small)
    assert reason is not None and "tile memory holds" in reason


@pytest.mark.parametrize("tiles", [1, 2, 4, 16])
@pytest.mark.parametrize("m", [16, 40, 96, 200])
def test_selection_picks_the_cheapest_valid_candidate(tiles, m):
    pr = problem(m, 128, 128)
    evals = evaluate_candidates(pr, tiles, "pad", IPU21)
    chosen = select_gemm_plan(pr, tiles)
    valid = [e for e in evals if e.reason is None]
    assert chosen.reason is None and chosen.cycles == min(e.cycles for e in valid)
    first_cheapest = next(e for e in valid if e.cycles == chosen.cycles)
    assert chosen.candidate == first_cheapest.candidate


def test_selection_is_real_different_shapes_choose_different_candidates():
    # among the row plans, the row block follows the shape
    rows = catalog_entries([c.name for c in F16])
    assert select_gemm_plan(problem(96, 64, 64), 4, catalog=rows).candidate.name == "amp_gemm_f16_r32"
    assert select_gemm_plan(problem(128, 64, 64), 4, catalog=rows).candidate.name == "amp_gemm_f16_r16"
    # with the grid plan: a long K on few output rows keeps the row plan (the grid's A panel
    # broadcasts would cost more than its B blocks save); a square GEMM takes the grid
    assert select_gemm_plan(problem(16, 4096, 64), 4).candidate.name == "amp_gemm_f16_r16"
    assert select_gemm_plan(problem(256, 256, 256), 16).candidate.name == "amp_gemm_f16_grid"


def test_grid_plan_cuts_all_three_operands_over_one_grid_of_every_tile():
    grid = next(c for c in CATALOG if c.name == "amp_gemm_f16_grid")
    pr = problem(1024, 1024, 1024)
    plan = build_gemm_plan(grid, pr, 256, "pad", IPU21)
    assert validate_gemm_plan(plan, pr, 256, IPU21) is None
    parts = {o: plan.operand_plan(o).format.partitions for o in ("lhs", "rhs", "out")}
    assert parts["lhs"] == parts["rhs"] == parts["out"]
    rows, cols = parts["out"]
    assert rows * cols == 256  # every tile computes


def test_grid_plan_reasons():
    grid = next(c for c in CATALOG if c.name == "amp_gemm_f16_grid")
    batched = problem(32, 64, 64, batch_lhs=(2,))
    assert validate_gemm_plan(build_gemm_plan(grid, batched, 4, "pad", IPU21), batched, 4,
                              IPU21) == "the grid plan runs one GEMM; this one has 2 batch slices"
    transposed = problem(32, 64, 64, transpose_rhs=True)
    assert validate_gemm_plan(build_gemm_plan(grid, transposed, 4, "pad", IPU21), transposed,
                              4, IPU21) == "the grid plan reads rhs untransposed; rhs is transposed"


def test_cost_model_grows_with_work_and_shrinks_with_tiles():
    small, large = problem(64, 64, 64), problem(64, 256, 256)

    def plan(pr, t):
        return build_gemm_plan(F16[0], pr, t, "pad", IPU21)

    assert estimate_cycles(plan(large, 4), large, 4, IPU21) > estimate_cycles(plan(small, 4), small, 4, IPU21)
    big = problem(256, 128, 128)
    assert estimate_cycles(plan(big, 16), big, 16, IPU21) < estimate_cycles(plan(big, 1), big, 1, IPU21)
    batched = problem(64, 64, 64, batch_lhs=(2, 1), batch_rhs=(3,))
    assert estimate_cycles(plan(batched, 4), batched, 4, IPU21) == 6 * estimate_cycles(plan(small, 4), small, 4, IPU21)


def test_batch_axes_are_not_distributed():
    pr = problem(32, 64, 64, batch_lhs=(2, 1), batch_rhs=(3,))
    plan = select_gemm_plan(pr, 4).plan
    assert plan.operand_plan("lhs").format.blocks[:2] == (1, 1)
    assert plan.operand_plan("lhs").format.partitions[:2] == (1, 1)
    assert plan.operand_plan("rhs").format.partitions[:1] == (1,)
    assert plan.operand_plan("out").format.rank == 4


def test_catalog_lookup():
    # FP16 partials only when the pipeline is told accuracy allows them; the 3-D grid only
    # when a catalog names it
    grid3d = tuple(c for c in CATALOG if c.dispatch == DispatchKind.GEMM_GRID3D)
    assert [c.name for c in grid3d] == ["amp_gemm_f16_grid3d", "amp_gemm_f32_grid3d"]
    assert catalog_entries(None) == tuple(c for c in CATALOG if c not in P16 + grid3d)
    assert default_catalog_names("f16") == tuple(c.name for c in CATALOG if c not in grid3d)
    assert catalog_entries(["amp_gemm_f16_grid3d"]) == grid3d[:1]
    assert [c.name for c in P16] == [f"amp_gemm_f16_r{rb}_p16" for rb in (16, 32, 64)] + [
        "amp_gemm_f16_grid_p16"]
    with pytest.raises(ValueError, match="gemm-partials=f8: expected one of f32, f16"):
        default_catalog_names("f8")
    assert [c.name for c in catalog_entries(["amp_gemm_f32_r64"])] == ["amp_gemm_f32_r64"]
    with pytest.raises(ValueError, match="unknown GEMM candidate"):
        catalog_entries(["nope"])


# ---- one test per validation reason: each builds the faulty candidate, asserts the exact text --

GOOD_PROBLEM = problem(64, 128, 128)


def good_plan(pr=GOOD_PROBLEM, tiles=4):
    return build_gemm_plan(F16[0], pr, tiles, "pad", IPU21)


def with_plan(plan: OperatorPlanAttr, **changes) -> OperatorPlanAttr:
    fields = dict(candidate=plan.candidate.data, dispatch=plan.dispatch,
                  accumulate=plan.accumulate.data, amp=plan.amp.data,
                  operands=list(plan.operands.data), distinct=plan.distinct_pairs,
                  alias=plan.alias.data)
    fields.update(changes)
    return OperatorPlanAttr(**fields)


def with_dispatch(plan, inner=64, columns=64, init="amp_gemm_f16p32_init",
                  accum="amp_gemm_f16p32_accum"):
    return with_plan(plan, dispatch=OperatorDispatchAttr("gemm_blocks", inner, columns, init, accum))


def with_format(plan, operand, **changes):
    fmt = plan.operand_plan(operand).format
    return replace_operand(plan, operand, format=fmt.with_changes(**changes))


def reason_of(plan, pr=GOOD_PROBLEM, tiles=4):
    return validate_gemm_plan(plan, pr, tiles, IPU21)


def test_the_unmodified_plan_is_valid():
    # every test below changes one thing of this plan
    assert reason_of(good_plan()) is None


@pytest.mark.parametrize("inner,columns,what,block", [(32, 64, "inner", 32), (64, 128, "column", 128)])
def test_reason_dispatch_block_size(inner, columns, what, block):
    plan = with_dispatch(good_plan(), inner=inner, columns=columns)
    assert reason_of(plan) == f"dispatch {what} block {block} is not the AMP block 64"


def test_reason_operand_names():
    good = good_plan()
    swapped = [good.operand_plan(o) for o in ("rhs", "lhs", "out")]
    assert reason_of(with_plan(good, operands=swapped)) == (
        "plan operands ('rhs', 'lhs', 'out') are not the gemm operands ('lhs', 'rhs', 'out')"
    )


def test_reason_kernel_not_in_the_registry():
    plan = with_dispatch(good_plan(), init="amp_gemm_f16_fused")
    assert reason_of(plan) == "init kernel @amp_gemm_f16_fused is not in the kernel registry"


def test_reason_kernel_required_not_implemented(monkeypatch):
    from test_device_model_support import required_kernel

    required_kernel(monkeypatch)
    plan = with_dispatch(good_plan(), accum="future_kernel")
    assert reason_of(plan) == "accum kernel @future_kernel is Required, not implemented"


def test_reason_kernel_of_the_other_mode():
    plan = with_dispatch(good_plan(), init="amp_gemm_f16_accum")
    assert reason_of(plan) == "init kernel @amp_gemm_f16_accum is not an init kernel"


def test_reason_stored_precision_mismatch():
    plan = with_format(good_plan(), "rhs", precision="f32")
    assert reason_of(plan) == "rhs is stored f32 but the rhs of these kernels is f16"


def test_reason_accumulation_precision():
    plan = with_plan(good_plan(), accumulate="f8f143")
    assert reason_of(plan) == "accumulation precision f8f143 is not supported by the AMP kernels"


def test_reason_kernels_keep_other_partials():
    plan = with_plan(good_plan(), accumulate="f16")  # FP16 partials need amp_gemm_f16_*
    assert reason_of(plan) == ("init kernel @amp_gemm_f16p32_init does not keep f16 partials "
                               "(the plan's accumulation); that is @amp_gemm_f16_init")
    narrow = with_dispatch(good_plan(), init="amp_gemm_f16_init", accum="amp_gemm_f16_accum")
    assert reason_of(narrow) == ("init kernel @amp_gemm_f16_init does not keep f32 partials "
                                 "(the plan's accumulation); that is @amp_gemm_f16p32_init")


def test_reason_wrong_element_order():
    plan = with_format(good_plan(), "out", order="row_major")
    assert reason_of(plan) == "out has order row_major, the AMP plan needs amp_output"


def test_reason_rank_mismatch():
    batched = problem(64, 128, 128, batch_lhs=(2,), batch_rhs=(2,))
    assert reason_of(good_plan(batched)) == "lhs format tiles 3 axes, the operand has 2"


def test_reason_batch_axis_tiling():
    batched = problem(64, 128, 128, batch_lhs=(2,), batch_rhs=(2,))
    good = good_plan(batched, tiles=8)  # 2 x 2 right blocks: room for two batch partitions
    tiling = list(good.operand_plan("rhs").format.tiling.data)
    plan = with_format(good, "rhs", tiling=[AxisTilingAttr(1, 2), *tiling[1:]])
    assert reason_of(plan, batched, tiles=8) == "rhs batch axis 0 is tiled 1 x 2, not 1 x 1"


def test_reason_contraction_not_64_blocked():
    plan = with_format(good_plan(), "lhs", tiling=[AxisTilingAttr(16, 4), AxisTilingAttr(128, 1)])
    assert reason_of(plan) == "the contraction axis must be tiled in 64-blocks on lhs and rhs"


def test_reason_output_columns_not_64_blocked():
    plan = with_format(good_plan(), "out", tiling=[AxisTilingAttr(16, 4), AxisTilingAttr(128, 1)])
    assert reason_of(plan) == "out columns must be tiled in 64-blocks"


def test_reason_lhs_and_out_row_tiling_differ():
    plan = with_format(good_plan(), "lhs", tiling=[AxisTilingAttr(32, 2), AxisTilingAttr(64, 1)])
    assert reason_of(plan) == "lhs and out must share the row tiling"


def test_reason_row_block_not_a_multiple_of_16():
    good = good_plan()
    rows = [AxisTilingAttr(8, 4), AxisTilingAttr(64, 1)]
    plan = with_format(with_format(good, "lhs", tiling=rows), "out", tiling=rows)
    assert reason_of(plan) == "row block 8 is not a multiple of the AMP 16 rows"


# ---- validation sees the limits place-memory enforces -------------------------------------------


def placement_error(candidate, pr, tiles, target=IPU21):
    """Lower `candidate`'s plan for `pr` (validated or not) to tile IR and run place-memory:
    None if it places, else place-memory's diagnostic."""
    from xdsl.context import Context
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp, TensorType, f16
    from xdsl.ir import Block, Region
    from xdsl.utils.exceptions import PassFailedException

    from ipu_dialects import mid
    from passes.mid_to_tile import MidToTilePass
    from passes.place_memory import PlaceMemoryPass

    plan = build_gemm_plan(candidate, pr, tiles, "pad", target)
    types = [TensorType(f16, list(pr.shape_of(o)), plan.operand_plan(o).format)
             for o in ("lhs", "rhs", "out")]
    block = Block(arg_types=types[:2])
    gemm = mid.GemmOp(block.args[0], block.args[1], types[2], plan)
    block.add_ops([gemm, func.ReturnOp(gemm.result)])
    module = ModuleOp([func.FuncOp("gemm", (types[:2], types[2:]), Region(block))])
    module.attributes["ipu.config"] = mid.PipelineConfigAttr("ipu21", tiles)
    MidToTilePass().apply(Context(), module)
    try:
        PlaceMemoryPass().apply(Context(), module)
    except PassFailedException as error:
        return str(error)
    return None


@pytest.mark.parametrize("m,k,n,tiles,fits", [
    (256, 64, 7680, 16, True),     # the output shard fills the interleaved region exactly
    (256, 64, 7744, 16, False),    # one more column block: 16 x 7744 f16 > interleaved region
    (256, 11200, 64, 16, True),    # left shard + access tail fit standard memory
    (256, 11264, 64, 16, False),   # the 16-byte access tail no longer fits
    (256, 12288, 64, 16, False),   # the auditor's spill reproducer
    (16, 512, 512, 1, False),      # a 512 KiB exchanged right shard on one tile
    (16, 512, 512, 2, True),
    (16, 320, 512, 1, True),       # 320 KiB: just below the space above the code's elements
    (16, 384, 512, 1, False),
])
def test_validation_agrees_with_place_memory(m, k, n, tiles, fits):
    """`fits` is for the FP16-partials plan (out, lhs, rhs and the slot); the FP32-partials
    plan also holds an f32 partials panel, so at the boundaries only agreement is fixed."""
    pr = problem(m, k, n)
    reason = validate_gemm_plan(build_gemm_plan(P16[0], pr, tiles, "pad", IPU21), pr, tiles, IPU21)
    placed = placement_error(P16[0], pr, tiles)
    assert (reason is None) == fits, reason
    assert (placed is None) == fits, placed
    reason = validate_gemm_plan(build_gemm_plan(F16[0], pr, tiles, "pad", IPU21), pr, tiles, IPU21)
    placed = placement_error(F16[0], pr, tiles)
    assert (reason is None) == (placed is None), (reason, placed)


def test_no_fit_reason_says_whether_more_tiles_help():
    pr = problem(256, 64, 8192)
    evals = {e.candidate.name: e.reason for e in evaluate_candidates(pr, 16, "pad", IPU21)}
    assert evals["amp_gemm_f16_r16"] == (
        "an output-row tile needs 262144 bytes of interleaved memory for its output shard, the "
        "interleaved region holds 245760; no tile count helps: the retained plan partitions "
        f"output rows only, and on all {IPU21.tiles} tiles an output-row tile still holds 16 "
        "rows (with all 8192 output columns and all 64 of K)"
    )
    wide = problem(2944, 1024, 1024)  # bench/compile_gemm.py
    reason = {e.candidate.name: e.reason for e in evaluate_candidates(wide, 16, "pad", IPU21)}
    hinted = reason["amp_gemm_f16_r16"]
    assert hinted.startswith("an output-row tile needs ") and hinted.endswith("; it fits on 31 tiles")
    for tiles, valid in ((30, False), (31, True)):
        plan = build_gemm_plan(F16[0], wide, tiles, "pad", IPU21)
        assert (validate_gemm_plan(plan, wide, tiles, IPU21) is None) == valid


def test_out_and_left_must_be_placeable_in_distinct_elements():
    # A target with half an element of standard memory outside the code region and a
    # two-element interleaved region: the 64 KiB left shard (+ tail) spills into the
    # interleaved region, where it fits after the output shard but only by sharing its element.
    element = IPU21.element_bytes
    target = dataclasses.replace(
        IPU21, interleaved_bytes=2 * element,
        code_region_bytes=IPU21.sram_bytes - 2 * element - element // 2,
    )
    pr = problem(16, 2048, 64)
    reason = validate_gemm_plan(build_gemm_plan(P16[0], pr, 16, "pad", target), pr, 16, target)
    assert reason == (
        "an output-row tile cannot keep its left shard (65536 bytes + 16-byte access tail) in a "
        "memory element apart from the output shard: no free range of its memory class avoids "
        "their elements"
    )
    reason = validate_gemm_plan(build_gemm_plan(F16[0], pr, 16, "pad", target), pr, 16, target)
    assert reason == (
        "an output-row tile cannot keep its left shard (65536 bytes + 16-byte access tail) in a "
        "memory element apart from the output shard and f32 partials panel: no free range of "
        "its memory class avoids their elements"
    )


def test_interleaved_buffers_must_fit_the_region_together():
    # each fits alone (the output shard fills the region exactly), not together
    pr = problem(256, 64, 7680)
    plan = with_format(good_plan(pr, tiles=16), "rhs", memory="interleaved")
    region = IPU21.memory_end - IPU21.interleaved_start
    out, rhs, slot = 16 * 7680 * 2, 8 * 64 * 64 * 2, 64 * 64 * 2  # K = 64: no partials panel
    assert reason_of(plan, pr, tiles=16) == (
        f"an output-row tile needs {out + rhs + slot} bytes of interleaved memory, the "
        f"interleaved region holds {region}"
    )


# ---- zero extents -----------------------------------------------------------------------------


@pytest.mark.parametrize("shapes,label,axis", [
    (((0, 64), (64, 64)), "lhs has shape [0, 64]", 0),
    (((16, 0), (0, 64)), "lhs has shape [16, 0]", 1),
    (((16, 64), (64, 0)), "rhs has shape [64, 0]", 1),
])
def test_a_zero_extent_is_a_diagnostic_naming_the_axis(shapes, label, axis):
    """Unverified IR (graph.gemm's verifier rejects zero extents first): graph-to-mid's
    signature check names the argument and axis; GemmProblem, which embedders can build
    directly, refuses the shape itself rather than producing a bad axis tiling."""
    from xdsl.context import Context
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp, TensorType, f16
    from xdsl.ir import Block, Region
    from xdsl.utils.exceptions import PassFailedException

    from ipu_dialects.graph import GemmOp
    from passes.graph_to_mid import GraphToMidPass

    types = [TensorType(f16, list(s)) for s in shapes]
    block = Block(arg_types=types)
    out_type = TensorType(f16, [shapes[0][0], shapes[1][1]])
    gemm = GemmOp.create(operands=list(block.args), result_types=[out_type])  # unverified
    block.add_ops([gemm, func.ReturnOp(gemm.result)])
    module = ModuleOp([func.FuncOp("f", (types, [gemm.result.type]), Region(block))])
    zero_arg = 0 if label.startswith("lhs") else 1
    with pytest.raises(PassFailedException) as error:
        GraphToMidPass(tiles=4).apply(Context(), module)
    assert str(error.value) == (
        f"func.func @f: argument #{zero_arg} has shape {list(shapes[zero_arg])} with extent 0 "
        f"at axis {axis}; graph tensors need every extent >= 1"
    )
    with pytest.raises(ValueError) as error:
        GemmProblem.from_types(*types, out_type)
    assert str(error.value) == (
        f"{label} with extent 0 at axis {axis}; the AMP GEMM plan needs every extent >= 1"
    )


def test_reason_left_access_tail():
    plan = replace_operand(good_plan(), "lhs", tail=0)
    assert reason_of(plan) == "lhs access tail 0 is shorter than the left stream's 16 bytes"


def test_reason_out_and_lhs_not_kept_apart():
    assert reason_of(with_plan(good_plan(), distinct=())) == (
        "out and lhs must sit in distinct memory elements")


def test_reason_k_split_across_row_tiles():
    plan = with_format(good_plan(), "lhs", tiling=[AxisTilingAttr(16, 2), AxisTilingAttr(64, 2)])
    assert reason_of(plan) == "each output-row tile must hold all of K (lhs) and N (out)"


def test_reason_kernel_with_other_pointers():
    assert reason_of(with_dispatch(good_plan(), init="copy_words")) == (
        "init kernel @copy_words takes pointers ('out', 'src'), a gemm kernel takes "
        "('out', 'left', 'right')")


def test_element_without_storage_precision():
    from xdsl.dialects.builtin import i32

    from planning.gemm_problem import element_precision

    with pytest.raises(ValueError) as info:
        element_precision(i32)
    assert str(info.value) == "element type i32 has no storage precision"


def _with_lhs_format(plan, **changes):
    entries = [
        OperandPlanAttr(e.operand.data, e.role.data,
                        e.format.with_changes(**changes) if e.operand.data == "lhs" else e.format,
                        e.alignment.data, e.tail.data)
        for e in plan.operands.data
    ]
    return OperatorPlanAttr(plan.candidate.data, plan.dispatch, plan.accumulate.data,
                            plan.amp.data, entries, plan.distinct_pairs)


def test_operand_precision_and_fp8_scale_must_match_the_kernels():
    pr = problem(64, 64, 64, "f8f143", lhs_scale=-2, rhs_scale=1)
    chosen = select_gemm_plan(pr, 4).plan
    assert chosen.candidate.data.startswith("amp_gemm_f8_")
    assert chosen.operand_plan("out").format.precision.data == "f16"  # FP16 partials
    assert chosen.operand_plan("lhs").format.scale.data == -2
    assert validate_gemm_plan(_with_lhs_format(chosen, scale=0), pr, 4, IPU21) == (
        "lhs is stored with FP8 scale 0, the operand has scale -2")
    assert validate_gemm_plan(_with_lhs_format(chosen, precision="f16", scale=0), pr, 4,
                              IPU21) == "lhs is stored f16 but the lhs of these kernels is f8f143"


def test_fit_hint_counts_the_exchange_row_slots():
    """2944x4096 by 4096x4096: on 255 tiles the buffers fit but the 4032 row slots of the
    accumulating exchange (16 bytes each) find no free range; schedule-exchange fails there
    (bench/compile_gemm.py --tiles 255 --shape 2944 4096 4096) and succeeds on 256, which is
    the tile count the hint names."""
    pr = problem(2944, 4096, 4096)
    hinted = {e.candidate.name: e.reason for e in evaluate_candidates(pr, 16, "pad", IPU21)}
    assert hinted["amp_gemm_f16_r16"].endswith("; it fits on 256 tiles")
    plan = build_gemm_plan(F16[0], pr, 255, "pad", IPU21)
    assert validate_gemm_plan(plan, pr, 255, IPU21) == (
        "an output-row tile has no room for the exchange rows: one exchange needs 64512 bytes "
        "of row slots in one range of the code region or of standard memory outside the "
        "exchanged buffers' memory elements; the largest such range left is 31744 bytes"
    )
    assert validate_gemm_plan(build_gemm_plan(F16[0], pr, 256, "pad", IPU21), pr, 256,
                              IPU21) is None


def test_every_gemm_layout_is_one_strategy_with_one_lowering():
    """The dispatch kind is a layout's only tag: the dialect's GEMM kinds, the planning
    strategies and the operator's lowerings are keyed by the same kinds, in one order."""
    from ipu_dialects.mid import GEMM_DISPATCH_KINDS
    from passes.operators.gemm import LOWERINGS
    from planning.gemm_selection import LAYOUTS

    assert tuple(LAYOUTS) == tuple(LOWERINGS) == GEMM_DISPATCH_KINDS
    assert all(layout.dispatch == kind for kind, layout in LAYOUTS.items())
    assert {c.dispatch for c in CATALOG} == set(LAYOUTS)
