"""The GEMM cost model is the device model: for a sample of shapes and every valid candidate,
`estimate_cycles` equals the cycles `run_package` charges for the package built from that
candidate (compiled with `graph-to-mid{catalog=<the candidate>}`)."""

import numpy as np
import pytest
from gemm_support import gemm_text, run_gemm
from xdsl.parser import Parser

from device.target import IPU21
from planning.gemm_problem import GemmProblem, catalog_entries
from planning.gemm_selection import evaluate_candidates
from tools.ipu_run import make_context


def modeled_cycles(text: str, tiles: int, candidate: str) -> int:
    run = run_gemm(text, tiles, seed=1, catalog=(candidate,))
    package, result = run.package, run.outcome
    # the plan's own work; an FP8 result's cast to its declared storage is a conversion
    executed = list(package.executed())  # a kept loop (a broadcast batch axis) unrolled
    own = [c for step, c in zip(executed, result.cycles_by_step, strict=True)
           if step.provenance.startswith("graph.gemm %c %")]
    assert len(own) < len(executed) or not text.count("f8E4M3FNUZ")
    return sum(own)


SHAPES = [
    # (lhs, rhs, out, element, flags, tiles)
    ((96, 200), (200, 70), (96, 70), "f16", "", 4),
    ((64, 64), (64, 64), (64, 64), "f16", "", 1),
    ((40, 130), (130, 128), (40, 128), "f32", "", 3),
    ((2, 48, 128), (128, 96), (2, 48, 96), "f16", "", 5),
    ((130, 48), (70, 130), (48, 70), "f16", "transpose_lhs transpose_rhs ", 2),
    ((32, 192), (192, 64), (32, 64), "f8E4M3FNUZ", "", 8),
    # grids with both broadcasts, several panels per tile, padding on every axis
    ((200, 300), (300, 330), (200, 330), "f16", "", 16),
    ((96, 256), (256, 200), (96, 200), "f32", "", 12),
    ((128, 320), (320, 256), (128, 256), "f8E4M3FNUZ", "", 16),
    # K-splits: pairs on A (C even), one grid column (pairs on B), one grid row (no B phase),
    # an odd C, padding
    ((256, 256), (256, 256), (256, 256), "f16", "", 16),
    ((512, 256), (256, 64), (512, 64), "f16", "", 16),
    ((96, 128), (128, 64), (96, 64), "f16", "", 6),  # one column, an odd row count: no pairs
    ((32, 256), (256, 256), (32, 256), "f16", "", 8),
    ((200, 384), (384, 330), (200, 330), "f32", "", 30),
    # batched GEMMs of one B, folded (planning/gemm_fold.py): rows, grid and K-split plans
    ((4, 40, 96), (96, 80), (4, 40, 80), "f16", "", 16),
    ((2, 3, 32, 130), (1, 130, 70), (2, 3, 32, 70), "f32", "", 12),
    ((4, 64, 256), (256, 128), (4, 64, 128), "f16", "", 32),
    # a fold refitted to the plan's rows (40-row slices padded to 96 for the K-split)
    ((4, 40, 96), (96, 80), (4, 40, 80), "f16", "", 4),
    # 3-D grids: four layers of 4 x 2 (pairs on A), ten of 1 x 2 in f32
    ((64, 1024), (1024, 128), (64, 128), "f16", "", 32),
    ((40, 640), (640, 100), (40, 100), "f32", "", 24),
]


@pytest.mark.parametrize("lhs,rhs,out,element,flags,tiles", SHAPES)
def test_estimate_equals_modeled_cycles(lhs, rhs, out, element, flags, tiles):
    from xdsl.dialects.builtin import TensorType

    from ipu_dialects.graph import GemmOp

    text = gemm_text(lhs, rhs, out, element, flags)
    module = Parser(make_context(), text).parse_module()
    module.verify()
    op = next(o for o in module.walk() if isinstance(o, GemmOp))
    assert isinstance(op.lhs.type, TensorType) and isinstance(op.rhs.type, TensorType)
    assert isinstance(op.result.type, TensorType)
    problem = GemmProblem.from_types(op.lhs.type, op.rhs.type, op.result.type,
                                     op.transpose_lhs is not None, op.transpose_rhs is not None)
    catalog = catalog_entries([c.name for c in catalog_entries(None)] + [
        f"amp_gemm_f16_r{rb}_p16" for rb in (16, 32, 64)] + ["amp_gemm_f16_grid_p16",
                                                            "amp_gemm_f16_grid3d",
                                                            "amp_gemm_f32_grid3d"])
    valid = [e for e in evaluate_candidates(problem, tiles, "pad", IPU21, catalog)
             if e.reason is None]
    assert valid, "the sample must exercise at least one plan"
    for evaluation in valid:
        assert evaluation.cycles == modeled_cycles(text, tiles, evaluation.candidate.name), \
            evaluation.candidate.name


def test_f32_partials_cost_more_than_f16_partials_by_the_rounding():
    """Same shape, same tiles: the FP32-partials plan adds one convert per column block."""
    problem = GemmProblem((64, 256), (256, 128), (64, 128), "f16")
    catalog = catalog_entries(["amp_gemm_f16_r16", "amp_gemm_f16_r16_p16"])
    wide, narrow = evaluate_candidates(problem, 4, "pad", IPU21, catalog)
    assert wide.cycles is not None and narrow.cycles is not None
    assert wide.cycles > narrow.cycles
    assert np.isclose(wide.cycles - narrow.cycles, 2 * (IPU21.kernel_call_cycles + 16 * 64 * 4 // 8))


def test_ipu_run_explain_lists_candidates_and_the_chosen_cost_is_the_modeled_one(tmp_path,
                                                                                 capsys):
    from tools.ipu_run import EXIT_PASS, run_main

    path = tmp_path / "g.mlir"
    path.write_text(gemm_text((96, 200), (200, 70), (96, 70), "f16"))
    assert run_main(path, tiles=4, explain=True, quiet=True) == EXIT_PASS
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert lines[0] == ("explain: graph.gemm %c on 4 tiles (* = chosen; cycles as the device "
                        "model charges them):")
    chosen = [line for line in lines if line.startswith("* ")]
    assert len(chosen) == 1
    estimated = int(chosen[0].split()[2].replace(",", ""))
    assert f"modeled cycles: {estimated}\n" in out
    # 96 x 70 on 4 tiles: the K-split (two layers of 1 x 2 blocks) is the cheapest
    assert "amp_gemm_f16_ksplit" in chosen[0] and "bytes per K-split tile" in chosen[0]
    assert "reduction" in chosen[0]
    assert any("amp_gemm_f16_grid" in line and "bytes per grid tile" in line
               for line in lines)
    assert any("amp_gemm_f16_r16" in line and "bytes per output-row tile" in line
               for line in lines)
    assert any(line.endswith("rejected: init kernel @amp_gemm_f32_init does not run f16 "
                             "operands") for line in lines)
    assert not any("_p16" in line for line in lines)  # FP16 partials only when asked
    assert run_main(path, tiles=4, explain=True, quiet=True, gemm_partials="f16") == EXIT_PASS
    out, err = capsys.readouterr()
    # the FP16-partials candidates are offered now; the K-split, FP32 partials and all, is
    # still cheaper than the cheapest of them here
    lines = err.splitlines()
    narrow = [line for line in lines if "_p16 " in line and "rejected" not in line]
    chosen = [line for line in lines if line.startswith("* ")]
    assert narrow and len(chosen) == 1 and "amp_gemm_f16_ksplit" in chosen[0]

    def cycles(line: str) -> int:
        return int(line.split()[2 if line.startswith("* ") else 1].replace(",", ""))

    assert all(cycles(chosen[0]) < cycles(line) for line in narrow)
    assert f"modeled cycles: {cycles(chosen[0])}\n" in out
