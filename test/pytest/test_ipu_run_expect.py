"""`ipu-run --expect FILE.npz`: the results held against a reference set saved elsewhere, with
the tolerance printed; a FAIL there fails the run; a file that does not fit is a usage error."""

from __future__ import annotations

import numpy as np

from tools.ipu_run import RELATIVE_TOLERANCE, run_main
from tools.run_io import EXIT_DIAGNOSTIC, EXIT_FAIL, EXIT_PASS

GRAPH = """func.func @main(%x: tensor<16x32xf32>, %w: tensor<32x16xf32>) -> tensor<16x16xf32> {
  %y = graph.gemm %x, %w : (tensor<16x32xf32>, tensor<32x16xf32>) -> tensor<16x16xf32>
  func.return %y : tensor<16x16xf32>
}
"""


def setup(tmp_path):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((32, 16))
    np.savez(tmp_path / "in.npz", x=x, w=w.astype(np.float32))
    source = tmp_path / "g.mlir"
    source.write_text(GRAPH)
    return source, x.astype(np.float64) @ w


def run(source, tmp_path, expect, reference=False):
    return run_main(source, tiles=4, archive=str(tmp_path / "in.npz"), expect=expect,
                    reference=reference, quiet=True)


def test_expect_passes_against_the_right_outputs(tmp_path, capsys) -> None:
    source, want = setup(tmp_path)
    np.savez(tmp_path / "torch.npz", y=want)  # one result: any name
    for reference in (False, True):
        assert run(source, tmp_path, tmp_path / "torch.npz", reference) == EXIT_PASS
        out = capsys.readouterr().out
        assert f"expect ({tmp_path / 'torch.npz'}): PASS" in out
        assert f"(tolerance: f32 {RELATIVE_TOLERANCE['f32']:g} of the largest expected" in out


def test_expect_fails_the_run_when_the_outputs_differ(tmp_path, capsys) -> None:
    source, want = setup(tmp_path)
    wrong = want.copy()
    wrong[3, 5] += 1e-2 * np.abs(want).max()  # 100x the f32 tolerance, in one element
    np.savez(tmp_path / "torch.npz", result0=wrong)
    assert run(source, tmp_path, tmp_path / "torch.npz") == EXIT_FAIL
    out = capsys.readouterr().out
    assert "check: PASS" in out  # the device agrees with the reference; the file does not
    assert f"expect ({tmp_path / 'torch.npz'}): FAIL" in out


def test_expect_file_of_the_wrong_shape_or_names(tmp_path, capsys) -> None:
    source, want = setup(tmp_path)
    np.savez(tmp_path / "bad.npz", y=want[:8])
    assert run(source, tmp_path, tmp_path / "bad.npz") == EXIT_DIAGNOSTIC
    err = capsys.readouterr().err
    assert "--expect" in err and "result0 is float64 [8, 16]; the result is [16, 16]" in err
    np.savez(tmp_path / "two.npz", a=want, b=want)
    assert run(source, tmp_path, tmp_path / "two.npz") == EXIT_DIAGNOSTIC
    assert "it needs one array per result, named result0" in capsys.readouterr().err
