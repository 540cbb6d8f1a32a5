"""Issue 25, untrusted input (second pass): one test per defect, each a wrong verdict, a
traceback, a resource bomb or an unsafe output that the tools must now refuse or handle.

Packages are built once per module (an FP16 GEMM on 4 tiles, the FP8 MLP example on 4
tiles) and copied where a test changes them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tools import ipu_run
from tools.ipu_run import run_main

ROOT = Path(__file__).resolve().parents[2]
GEMM = (
    "func.func @gemm(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) -> tensor<64x64xf16> {\n"
    "  %c = graph.gemm %a, %b : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16>\n"
    "  func.return %c : tensor<64x64xf16>\n}\n")


def run_cli(*args) -> tuple[int, str]:
    result = CliRunner().invoke(ipu_run.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def gemm_base(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("gemm")
    source = directory / "gemm.mlir"
    source.write_text(GEMM)
    assert run_main(source, tiles=4, package_dir=directory / "pkg") == 0
    return directory / "pkg"


@pytest.fixture
def gemm_package(gemm_base, tmp_path) -> Path:
    copy = tmp_path / "pkg"
    shutil.copytree(gemm_base, copy)
    return copy


# ---- 1: a package run honours --inputs, and refuses what it cannot honour ---------------------


def test_package_run_reads_inputs_archive(gemm_package, tmp_path):
    archive = tmp_path / "inputs.npz"
    np.savez(archive, a=np.zeros((64, 128), np.float16))
    status, output = run_cli(gemm_package, "--inputs", archive, "--save-outputs", tmp_path / "out")
    assert status == 0, output
    result = np.load(tmp_path / "out" / "result0.npy", allow_pickle=False)
    assert not result.any()  # a @ b with a = 0: the archive's array was used


def test_package_run_with_a_bogus_inputs_file_is_a_usage_error(gemm_package, tmp_path):
    bogus = tmp_path / "bogus.npz"
    bogus.write_bytes(b"not an archive")
    status, output = run_cli(gemm_package, "--inputs", bogus)
    assert status == 2 and "--inputs: cannot read" in output
    np.savez(bogus, nosuch=np.zeros(3))
    status, output = run_cli(gemm_package, "--inputs", bogus)
    assert status == 2 and "the function has no argument 'nosuch'" in output


@pytest.mark.parametrize("option", [["--report", "REPORT"], ["--tiles", "16"], ["--quiet", "--reference"],
                                    ["--indivisible", "pad"], ["--gemm-partials", "f32"]])
def test_package_run_refuses_options_it_cannot_honour(gemm_package, tmp_path, option):
    """Even at their default values: a flag given is a flag the user expects to matter."""
    args = [str(tmp_path / a) if a == "REPORT" else a for a in option]
    status, output = run_cli(gemm_package, *args)
    assert status == 2, output
    assert "only for a .mlir file; a package is already compiled" in output
    assert not (tmp_path / "REPORT").exists()


# ---- 2: an FP8 package is fed values and judged on q, as its .mlir run is ----------------------


@pytest.fixture(scope="module")
def fp8_base(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("fp8")
    assert run_main(ROOT / "examples" / "fp8_mlp.mlir", tiles=4, package_dir=directory / "pkg") == 0
    return directory / "pkg"


def test_an_fp8_package_passes_as_its_source_does(fp8_base, tmp_path):
    status, output = run_cli(fp8_base, "--save-outputs", tmp_path / "pkg")
    assert status == 0 and "check: PASS" in output, output
    assert run_main(ROOT / "examples" / "fp8_mlp.mlir", tiles=4, save_dir=tmp_path / "mlir") == 0
    np.testing.assert_array_equal(np.load(tmp_path / "pkg" / "result0.npy"),
                                  np.load(tmp_path / "mlir" / "result0.npy"))


# ---- 6: the package check reads the element types the package holds -----------------------------


def test_a_source_naming_another_element_type_is_refused(tmp_path):
    """An f32 package whose source.mlir says f16 would be judged with f16's tolerance."""
    source = tmp_path / "gemm32.mlir"
    source.write_text(GEMM.replace("f16", "f32"))
    assert run_main(source, tiles=4, package_dir=tmp_path / "pkg") == 0
    (tmp_path / "pkg" / "source.mlir").write_text(GEMM)
    status, output = run_cli(tmp_path / "pkg")
    assert status == 2, output
    assert "inputs[0].precision: 'f32' is not the source function's f16" in output


def test_a_source_naming_another_fp8_scale_is_refused(fp8_base, tmp_path):
    shutil.copytree(fp8_base, tmp_path / "pkg")
    source = tmp_path / "pkg" / "source.mlir"
    source.write_text(source.read_text().replace("#graph.fp8_scale<-3>", "#graph.fp8_scale<-2>"))
    status, output = run_cli(tmp_path / "pkg")
    assert status == 2, output
    assert "outputs[0].scale: -3 is not the source function's FP8 scale -2" in output


def test_every_example_package_matches_its_source(tmp_path):
    from tools.run_package import load_checked

    for example in ("gemm_f16", "gemm_f32_batched", "mlp_f16", "fp8_mlp", "nested_repeat_f16"):
        assert run_main(ROOT / "examples" / f"{example}.mlir", tiles=4,
                        package_dir=tmp_path / example, reference=False) == 0
        load_checked(tmp_path / example)
