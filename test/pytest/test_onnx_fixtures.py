"""Imported GPT-2-style models (examples/onnx, made by make_fixtures.py from torch) match torch
under `ipu-run --reference`; the `ipu-import` and `ipu-run --inputs` command lines. Device-model
runs of the imported block: test_e2e_layout.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_models import model, tensor

from tools.ipu_import import import_main
from tools.ipu_run import RELATIVE_TOLERANCE, run_main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "onnx"


def import_fixture(name: str, dtype: str, directory: Path) -> Path:
    assert import_main(EXAMPLES / f"{name}.onnx", directory, dtype) == 0
    return directory


@pytest.mark.parametrize("name", ["gpt2_block", "gpt2_stack4"])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_imported_model_matches_torch(name, dtype, tmp_path, capsys) -> None:
    out = import_fixture(name, dtype, tmp_path / "model")
    io = np.load(EXAMPLES / f"{name}.io.npz")
    np.save(tmp_path / "x.npy", io["x"])
    status = run_main(out / "model.mlir", inputs=[f"x={tmp_path / 'x.npy'}"], reference=True,
                      save_dir=tmp_path / "results", archive=str(out / "weights.npz"))
    assert status == 0, capsys.readouterr().err
    got = np.load(tmp_path / "results" / "result0.npy").astype(np.float64)
    want = io["y"].astype(np.float64)
    relative = np.abs(got - want).max() / np.abs(want).max()
    # measured: f32 4e-7 (block) and 7e-7 (stack); f16 9e-4 and 1.3e-3, every op rounding to f16
    assert relative <= RELATIVE_TOLERANCE[dtype], relative


def test_imported_block_structure(tmp_path) -> None:
    out = import_fixture("gpt2_block", "f32", tmp_path)
    text = (out / "model.mlir").read_text()
    counts = {op: text.count(f"= graph.{op} ") for op in
              ("attention", "layer_norm", "gelu", "gemm", "add", "slice", "reshape", "transpose")}
    assert counts == {"attention": 1, "layer_norm": 2, "gelu": 1, "gemm": 4, "add": 6,
                      "slice": 3, "reshape": 4, "transpose": 4}
    assert "graph.attention %transpose8, %transpose14, %transpose12 causal :" in text
    weights = np.load(out / "weights.npz")
    assert sorted(weights.files)[:3] == ["fc.bias", "fc_out.bias", "ln_1.bias"]
    assert all(f"%{name}: tensor<" in text for name in weights.files)


def test_stack_has_one_attention_per_layer(tmp_path) -> None:
    text = (import_fixture("gpt2_stack4", "f32", tmp_path) / "model.mlir").read_text()
    assert text.count("graph.attention") == 4 and text.count("graph.layer_norm") == 8


def test_import_diagnostic_exits_2_and_writes_nothing(tmp_path, capsys) -> None:
    path = tmp_path / "relu.onnx"
    onnx.save(model([helper.make_node("Relu", ["x"], ["y"], name="act")], [tensor("x", [4])],
                    ["y"]), path)
    assert import_main(path, tmp_path / "out") == 2
    assert capsys.readouterr().err.startswith(
        f"ipu-import: error: {path}: node #0 'act' (Relu): no graph op for ONNX Relu")
    assert not (tmp_path / "out").exists()


def test_import_unreadable_model_and_unwritable_directory(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_text("not a model")
    assert import_main(bad, tmp_path / "out") == 2
    assert f"ipu-import: error: cannot read '{bad}' as an ONNX model" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert import_main(EXAMPLES / "gpt2_block.onnx", blocker) == 2
    assert f"ipu-import: error: cannot write to '{blocker}'" in capsys.readouterr().err


def test_import_without_the_onnx_package(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)
    assert import_main(EXAMPLES / "gpt2_block.onnx", tmp_path) == 2
    assert "install the extra: pip install -e '.[onnx]'" in capsys.readouterr().err


# -- ipu-run --inputs -------------------------------------------------------------------------

GEMM = """func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %c = graph.gemm %a, %b : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %c : tensor<2x2xf32>
}
"""


@pytest.fixture
def gemm_file(tmp_path) -> Path:
    path = tmp_path / "gemm.mlir"
    path.write_text(GEMM)
    return path


def test_inputs_archive_gives_a_subset_of_the_arguments(gemm_file, tmp_path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.savez(tmp_path / "in.npz", a=a)
    assert run_main(gemm_file, reference=True, archive=str(tmp_path / "in.npz"),
                    save_dir=tmp_path / "r", seed=3) == 0
    got = np.load(tmp_path / "r" / "result0.npy")
    rng = np.random.default_rng(3)
    rng.uniform(-1, 1, (2, 3))  # a's random values, replaced by the archive
    b = rng.uniform(-1, 1, (3, 2)).astype(np.float32)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-6)


@pytest.mark.parametrize(
    ("arrays", "extra", "message"),
    [
        ({"y": np.zeros(2)}, [], "--inputs {npz}: array 'y': the function has no argument 'y' "
                                 "(arguments: a, b)"),
        ({"a": np.zeros((3, 2))}, [], "--inputs {npz}: array 'a': shape (3, 2) does not match "
                                      "the argument's (2, 3)"),
        ({"a": np.zeros((2, 3), np.int32)}, [], "--inputs {npz}: array 'a': dtype int32 is not a "
                                                "floating-point type"),
        ({"a": np.zeros((2, 3))}, ["a={npy}"], "--input a: given more than once"),
    ],
)
def test_inputs_archive_diagnostics(arrays, extra, message, gemm_file, tmp_path, capsys) -> None:
    npz, npy = tmp_path / "in.npz", tmp_path / "a.npy"
    np.savez(npz, **arrays)
    np.save(npy, np.zeros((2, 3)))
    extra = [e.format(npy=npy) for e in extra]
    assert run_main(gemm_file, inputs=extra, reference=True, archive=str(npz)) == 2
    assert capsys.readouterr().err.startswith(f"ipu-run: error: {message.format(npz=npz)}")


def test_inputs_archive_that_is_not_one(gemm_file, tmp_path, capsys) -> None:
    np.save(tmp_path / "a.npy", np.zeros((2, 3)))
    assert run_main(gemm_file, reference=True, archive=str(tmp_path / "a.npy")) == 2
    assert (f"--inputs: '{tmp_path / 'a.npy'}' is a single array, not an .npz archive of named "
            "arrays (use --input NAME=PATH.npy)") in capsys.readouterr().err
    assert run_main(gemm_file, reference=True, archive=str(tmp_path / "none.npz")) == 2
    assert f"--inputs: cannot read '{tmp_path / 'none.npz'}'" in capsys.readouterr().err
    np.savez(tmp_path / "obj.npz", a=np.array([{"x": 1}], dtype=object))
    assert run_main(gemm_file, reference=True, archive=str(tmp_path / "obj.npz")) == 2
    assert f"--inputs: cannot read '{tmp_path / 'obj.npz'}'" in capsys.readouterr().err


def test_checked_in_import_of_the_block_is_current(tmp_path) -> None:
    """examples/onnx/gpt2_block/model.mlir (shown in the README) is what ipu-import writes."""
    out = import_fixture("gpt2_block", "f32", tmp_path)
    assert (out / "model.mlir").read_text() == (EXAMPLES / "gpt2_block" / "model.mlir").read_text()


def test_imported_block_in_f16_runs_on_one_tile(tmp_path, capsys) -> None:
    """The f16 block on one tile (the f32 weights alone, 772 KiB, exceed its 624 KiB): peak live
    bytes 507 KiB with the code region; placed in program order, first fit left no contiguous
    128 KiB for the fc_out weight, so place-memory places the longest-lived buffers first."""
    out = import_fixture("gpt2_block", "f16", tmp_path / "model")
    io = np.load(EXAMPLES / "gpt2_block.io.npz")
    np.save(tmp_path / "x.npy", io["x"])
    status = run_main(out / "model.mlir", tiles=1, inputs=[f"x={tmp_path / 'x.npy'}"],
                      save_dir=tmp_path / "results", archive=str(out / "weights.npz"))
    printed = capsys.readouterr().out
    assert status == 0 and "check: PASS" in printed and "tiles used: 1 of 1" in printed
    got = np.load(tmp_path / "results" / "result0.npy").astype(np.float64)
    want = io["y"].astype(np.float64)
    assert np.abs(got - want).max() / np.abs(want).max() <= RELATIVE_TOLERANCE["f16"]


def all_padding_shards(package: Path) -> list[str]:
    """The inputs and outputs of a saved package with a shard that starts past the tensor's
    extent along some axis (it holds padding alone)."""
    program = np.load(package / "program.npz")
    metadata = json.loads((package / "metadata.json").read_text())
    found = []
    for role in ("inputs", "outputs"):
        for index, stored in enumerate(metadata[role]):
            origins = program.get(f"{role}{index}_origins")
            if origins is None or not origins.size:
                continue
            origins = origins.reshape(len(origins), -1)
            extents = np.array(stored["shape"][-origins.shape[1]:])
            if (origins >= extents).any():
                found.append(stored["name"])
    return found


def test_saved_block_package_with_an_all_padding_shard_runs_again(tmp_path, capsys) -> None:
    """On 4 tiles two of the block's weights are cut into more partitions than their extent
    fills: a shard holds padding alone (its origin past the extent). The saved package must
    load and run (`ipu-run DIR`)."""
    out = import_fixture("gpt2_block", "f16", tmp_path / "model")
    arrays = dict(np.load(out / "weights.npz"))
    arrays["x"] = np.load(EXAMPLES / "gpt2_block.io.npz")["x"]
    np.savez(tmp_path / "all.npz", **arrays)
    assert run_main(out / "model.mlir", tiles=4, archive=str(tmp_path / "all.npz"),
                    package_dir=tmp_path / "pkg") == 0
    assert all_padding_shards(tmp_path / "pkg")  # the package holds a shard of padding alone
    capsys.readouterr()
    from tools.run_package import run_package_main

    assert run_package_main(tmp_path / "pkg") == 0, capsys.readouterr().err  # seeded inputs
    assert "check: PASS" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("dtype,tiles", [("f32", 16), ("f32", 64), ("f16", 16), ("f16", 64)])
def test_imported_block_matches_torch_on_the_device_model(dtype, tiles, tmp_path, capsys) -> None:
    """The block as imported (no repeat), compiled and run on the device model."""
    out = import_fixture("gpt2_block", dtype, tmp_path / "model")
    io = np.load(EXAMPLES / "gpt2_block.io.npz")
    np.save(tmp_path / "x.npy", io["x"])
    status = run_main(out / "model.mlir", tiles=tiles, inputs=[f"x={tmp_path / 'x.npy'}"],
                      save_dir=tmp_path / "results", archive=str(out / "weights.npz"))
    assert status == 0 and "check: PASS" in capsys.readouterr().out
    got = np.load(tmp_path / "results" / "result0.npy").astype(np.float64)
    want = io["y"].astype(np.float64)
    assert np.abs(got - want).max() / np.abs(want).max() <= RELATIVE_TOLERANCE[dtype]


def test_imported_block_in_f32_on_one_tile_is_a_diagnostic(tmp_path, capsys) -> None:
    """772 KiB of f32 weights cannot fit in one tile's 624 KiB: a diagnostic at the GEMM that
    does not fit, naming the tile count that would, not a wrong or partial run."""
    out = import_fixture("gpt2_block", "f32", tmp_path / "model")
    assert run_main(out / "model.mlir", tiles=1, archive=str(out / "weights.npz")) == 2
    err = capsys.readouterr().err
    assert "model.mlir:25:5: error: graph.gemm %gemm25: no valid operator plan" in err
    assert "an output-row tile needs one free range of 262144 bytes" in err
    assert "it fits on 2 tiles" in err
