"""Diagnostics on untrusted input files, output paths, ONNX models and model configs, each
driven by the input a user would give and pinned by its text (test_diagnostics_pinned.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tools import ipu_run

GEMM = (
    "func.func @gemm(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) -> tensor<64x64xf16> {\n"
    "  %c = graph.gemm %a, %b : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16>\n"
    "  func.return %c : tensor<64x64xf16>\n}\n")
A_HEADER = {"descr": "<f2", "fortran_order": False, "shape": (64, 128)}
A_BYTES = 64 * 128 * 2


def run_cli(*args) -> tuple[int, str]:
    result = CliRunner().invoke(ipu_run.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.fixture
def gemm(tmp_path) -> Path:
    path = tmp_path / "gemm.mlir"
    path.write_text(GEMM)
    return path


def npy_bytes(header: dict, data: bytes) -> bytes:
    import io

    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, header)
    return stream.getvalue() + data


# ---- tools/input_files.py -----------------------------------------------------------------


def test_a_directory_as_an_input_file(gemm, tmp_path):
    status, output = run_cli(gemm, "--reference", "--input", f"a={tmp_path}")
    assert status == 2, output
    assert ("not a regular file (a directory, FIFO or device is never read)" in output), output


def test_an_input_file_larger_than_the_limit(gemm, tmp_path, monkeypatch):
    # the real limit is hundreds of MiB; a lower one keeps the file small
    monkeypatch.setattr("tools.input_files.MAX_INPUT_FILE_BYTES", 1000)
    np.save(tmp_path / "a.npy", np.zeros((64, 128), np.float16))
    status, output = run_cli(gemm, "--reference", "--input", f"a={tmp_path / 'a.npy'}")
    assert status == 2, output
    assert "has 16512 bytes (at most 1000: MAX_INPUT_FILE_BYTES, device/limits.py)" in output, output


def test_a_pickled_npy_is_never_unpickled(gemm, tmp_path):
    np.save(tmp_path / "a.npy", np.empty((64, 128), dtype=object), allow_pickle=True)
    status, output = run_cli(gemm, "--reference", "--input", f"a={tmp_path / 'a.npy'}")
    assert status == 2, output
    assert ("holds Python objects (a pickled array), which are never unpickled "
            "(allow_pickle=False)") in output, output


def test_an_npy_with_truncated_data(gemm, tmp_path):
    (tmp_path / "a.npy").write_bytes(npy_bytes(A_HEADER, bytes(100)))
    status, output = run_cli(gemm, "--reference", "--input", f"a={tmp_path / 'a.npy'}")
    assert status == 2, output
    assert f"100 bytes of data where its header needs {A_BYTES}" in output, output


def test_an_npz_member_whose_data_fail_their_checksum(gemm, tmp_path):
    """A stored member with one data byte flipped: the header reads, the data's CRC fails."""
    member = npy_bytes(A_HEADER, bytes(A_BYTES))
    archive_path = tmp_path / "in.npz"
    with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("a.npy", member)
    raw = bytearray(archive_path.read_bytes())
    last_data_byte = raw.index(member) + len(member) - 1
    raw[last_data_byte] ^= 0xFF
    archive_path.write_bytes(bytes(raw))
    status, output = run_cli(gemm, "--reference", "--inputs", archive_path)
    assert status == 2, output
    assert "array 'a': cannot read its data: Bad CRC-32" in output, output


def test_an_npz_member_that_is_not_npy(gemm, tmp_path):
    with zipfile.ZipFile(tmp_path / "in.npz", "w") as archive:
        archive.writestr("a.txt", "not an array")
    status, output = run_cli(gemm, "--reference", "--inputs", tmp_path / "in.npz")
    assert status == 2, output
    assert "array 'a.txt': not an .npy member (or encrypted)" in output, output


def test_an_npz_member_larger_than_its_shape_needs(gemm, tmp_path):
    # 64x128 at float64 at most, plus a header: 1 MiB is more than any such member needs
    with zipfile.ZipFile(tmp_path / "in.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.npy", npy_bytes(A_HEADER, bytes(1 << 20)))
    status, output = run_cli(gemm, "--reference", "--inputs", tmp_path / "in.npz")
    assert status == 2, output
    assert "bytes exceed what an array of shape (64, 128) needs" in output, output


# ---- tools/output_files.py ----------------------------------------------------------------


def test_a_file_where_an_output_directory_must_go(gemm, tmp_path):
    (tmp_path / "out").write_text("a file")
    status, output = run_cli(gemm, "--reference", "--save-outputs", tmp_path / "out")
    assert status == 2, output
    assert "as an output directory: it is a file" in output, output
    assert (tmp_path / "out").read_text() == "a file"


def test_an_output_directory_that_is_a_symlink(gemm, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    status, output = run_cli(gemm, "--reference", "--save-outputs", tmp_path / "linked")
    assert status == 2, output
    assert ("is a symbolic link; an output directory is never followed through one"
            in output), output
    assert not any((tmp_path / "real").iterdir())


def test_ipu_import_output_directory_that_is_a_symlink(tmp_path, capsys):
    """ipu-import checks its -o when it writes (staged_directory), after the import."""
    import onnx

    from tools.ipu_import import import_main

    path = tmp_path / "m.onnx"
    onnx.save(transpose_model(), str(path))
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    assert import_main(path, tmp_path / "linked") == 2
    err = capsys.readouterr().err
    assert ("is a symbolic link; an output directory is never followed through one" in err), err
    assert not any((tmp_path / "real").iterdir())


# ---- tools/ipu_import.py and frontend/onnx/importer.py -------------------------------------------


def transpose_model(nodes: int = 1):
    from onnx import TensorProto, helper

    names = ["x", *(f"h{i}" for i in range(nodes - 1)), "y"]
    graph = helper.make_graph(
        [helper.make_node("Transpose", [a], [b], perm=[1, 0]) for a, b in zip(names, names[1:])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def import_model(tmp_path, capsys, model) -> str:
    import onnx

    from tools.ipu_import import import_main

    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    assert import_main(path, tmp_path / "out") == 2
    assert not (tmp_path / "out").exists()
    return capsys.readouterr().err


def test_an_onnx_file_larger_than_the_limit(tmp_path, capsys, monkeypatch):
    # the real limit is protobuf's 2 GiB; a lower one keeps the file small
    monkeypatch.setattr("device.limits.MAX_ONNX_BYTES", 10)
    size = len(transpose_model().SerializeToString())
    err = import_model(tmp_path, capsys, transpose_model())
    assert f"{size} bytes (at most 10: MAX_ONNX_BYTES, device/limits.py)" in err, err


def test_an_onnx_model_with_more_nodes_than_the_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("device.limits.MAX_ONNX_NODES", 3)
    err = import_model(tmp_path, capsys, transpose_model(nodes=4))
    assert "4 nodes (at most 3: MAX_ONNX_NODES, device/limits.py)" in err, err


def test_an_onnx_node_with_a_malformed_attribute(tmp_path, capsys):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Split", ["x"], ["y"], axis=7)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    err = import_model(tmp_path, capsys, helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert ("node #0 (Split): cannot import it (a required attribute or input is missing or "
            "malformed") in err, err


# ---- frontend/models.py ---------------------------------------------------------------------


@pytest.mark.parametrize("field", ["seq", "d_model", "heads", "mlp", "batch", "layers"])
def test_a_model_config_with_a_size_below_one(field):
    from frontend.models import TransformerConfig

    sizes = dict(seq=8, d_model=16, heads=2, mlp=32, batch=1, layers=1) | {field: 0}
    with pytest.raises(ValueError, match=r"^tiny: every size must be >= 1$"):
        TransformerConfig(name="tiny", causal=False, norm="pre", **sizes)
