"""Regressions found by `bench/robustness.py`'s wider corpus (issue 25, second pass): each was a
traceback, and is now a diagnostic that names what is wrong."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from frontend.onnx import OnnxImportError, import_onnx  # noqa: E402
from tools.output_files import check_output_directory  # noqa: E402
from tools.usage import UsageError  # noqa: E402


def matmul_model(weight: onnx.TensorProto) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def weight() -> onnx.TensorProto:
    return numpy_helper.from_array(np.ones((8, 16), np.float32), "w")


def test_an_initializer_whose_data_does_not_fill_its_dims_is_a_diagnostic():
    """The checker does not compare raw_data's length with the dims: numpy's reshape did."""
    tensor = weight()
    tensor.dims[:] = [8, 15]
    with pytest.raises(OnnxImportError, match=r"initializer 'w': its data does not hold a "
                       r"tensor of dims \[8, 15\] and type FLOAT"):
        import_onnx(matmul_model(tensor))


def test_an_initializer_of_a_data_type_onnx_has_no_name_for_is_a_diagnostic():
    """data_type is an open enum: the checker lets 2**31 - 1 through, ONNX has no name for it."""
    tensor = weight()
    tensor.data_type = 2**31 - 1
    with pytest.raises(OnnxImportError, match=r"initializer 'w': .* type data type 2147483647"):
        import_onnx(matmul_model(tensor))


def test_ipu_import_words_an_overfull_initializer_without_a_traceback(tmp_path):
    """Data too short for the dims is the checker's; data too long was numpy's reshape error."""
    from tools.ipu_import import app

    tensor = weight()
    tensor.dims[:] = [8, 15]
    model = tmp_path / "m.onnx"
    model.write_bytes(matmul_model(tensor).SerializeToString())
    result = CliRunner().invoke(app, [str(model), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "its data does not hold a tensor of dims [8, 15]" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("path", ["/proc/ipu-robust/out", "/sys/ipu-robust"])
def test_an_output_directory_nothing_can_be_created_in_is_refused_before_the_work(path):
    """os.access says yes to root under /proc and /sys; a probe directory says no."""
    with pytest.raises(UsageError, match="as an output directory: cannot create anything in"):
        check_output_directory("--save-outputs", path)


def test_ipu_run_save_outputs_under_proc_is_a_usage_error(tmp_path):
    from tools.ipu_run import app

    source = tmp_path / "g.mlir"
    source.write_text("func.func @g(%a: tensor<16x16xf16>) -> tensor<16x16xf16> {\n"
                      "  %b = graph.gelu %a : tensor<16x16xf16> -> tensor<16x16xf16>\n"
                      "  func.return %b : tensor<16x16xf16>\n}\n")
    for option in ("--save-outputs", "--report", "--package"):
        result = CliRunner().invoke(app, [str(source), "--tiles", "2", option,
                                          "/proc/ipu-robust/out", "--quiet"])
        assert result.exit_code == 2, (option, result.output)
        assert "cannot create anything in '/proc'" in result.output, option


def exchange_level_gemm() -> str:
    """A 64x128x64 f16 GEMM after the whole pipeline on 2 tiles, as ipu-opt prints it."""
    return lowered_gemm(6)


def test_an_unknown_kernel_symbol_in_tile_ir_is_a_diagnostic_of_the_listing(tmp_path, capsys):
    """The tile verifier leaves an unknown symbol to the passes; `-t ipu-asm` (and the package
    writer, which formats the listing) raised UnknownKernelError from the listing."""
    from tools.ipu_opt import IpuOptMain

    text = exchange_level_gemm()
    symbol = next(s for s in ("amp_gemm_f16_init", "amp_gemm_f16p32_init") if f"@{s}(" in text)
    path = tmp_path / "unknown.mlir"
    path.write_text(text.replace(f"@{symbol}(", "@to(", 1))
    with pytest.raises(SystemExit) as done:
        IpuOptMain(args=[str(path), "-t", "ipu-asm"]).run()
    assert done.value.code not in (0, None)
    err = capsys.readouterr()
    assert "no listing for the kernel step of graph.gemm %c" in err.out + err.err
    assert "unknown kernel symbol 'to'" in err.out + err.err


def lowered_gemm(stages: int) -> str:
    """A 64x128x64 f16 GEMM after the pipeline's first `stages` stages on 2 tiles."""
    import io

    from xdsl.printer import Printer

    from passes.ipu_pipeline import IpuPipelinePass
    from tools.registry import make_context
    from tools.source_locations import parse_located_module

    t = "tensor<64x128xf16>, tensor<128x64xf16>"
    text = (f"func.func @gemm(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) -> tensor<64x64xf16> {{\n"
            f"  %c = graph.gemm %a, %b : ({t}) -> tensor<64x64xf16>\n"
            "  func.return %c : tensor<64x64xf16>\n}\n")
    ctx = make_context()
    module = parse_located_module(ctx, text, "gemm")
    for stage in IpuPipelinePass(tiles=2).stage_passes()[:stages]:
        stage.apply(ctx, module)
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue() + "\n"


def test_a_shard_of_2_63_elements_is_place_memorys_out_of_memory_not_an_overflow(tmp_path, capsys):
    """The tile verifier leaves a buffer too big for its tiles to place-memory, whose live-byte
    table was int64 (OverflowError)."""
    import re

    from tools.ipu_opt import IpuOptMain

    text, count = re.subn(r"(tile\.buffer @\w+_slot scratch on \S+ \S+ \S+ shard \[)\d+",
                          rf"\g<1>{2**63 - 1}", lowered_gemm(4), count=1)
    assert count == 1
    path = tmp_path / "huge.mlir"
    path.write_text(text)
    with pytest.raises(SystemExit) as done:
        IpuOptMain(args=[str(path), "-p", "place-memory"]).run()
    assert done.value.code not in (0, None)
    err = capsys.readouterr()
    assert re.search(r"error: Out of memory on tile 0: \d{20,} bytes needed", err.out + err.err)


def test_an_npy_header_with_an_unclosed_bracket_is_a_usage_error(tmp_path):
    """numpy tokenizes the header's literal: an unclosed bracket raised tokenize.TokenError."""
    from tools.ipu_run import app

    header = "{'descr': '<f2', 'fortran_order': False, 'shape': ((64, 128), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    bad = tmp_path / "a.npy"
    bad.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
                    + bytes(64 * 128 * 2))
    source = tmp_path / "g.mlir"
    source.write_text("func.func @g(%a: tensor<64x128xf16>) -> tensor<64x128xf16> {\n"
                      "  %b = graph.gelu %a : tensor<64x128xf16> -> tensor<64x128xf16>\n"
                      "  func.return %b : tensor<64x128xf16>\n}\n")
    result = CliRunner().invoke(app, [str(source), "--reference", "--input", f"a={bad}"])
    assert result.exit_code == 2, result.output
    assert "not a readable .npy array" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_tile_buffer_whose_tensor_outgrows_the_device_is_a_verifier_error(tmp_path, capsys):
    """The shard geometry of a `from tensor<2**64 x ...>` overflowed int64 in the package
    writer (OverflowError under -t ipu-asm and -t ipu-rows); the verifier bounds the tensor as
    the package schema bounds a host tensor."""
    import re

    from tools.ipu_opt import IpuOptMain

    text, count = re.subn(r"(tile\.buffer @c output 0 .* from tensor<)64x", rf"\g<1>{2**64}x",
                          exchange_level_gemm(), count=1)
    assert count == 1
    path = tmp_path / "huge.mlir"
    path.write_text(text)
    with pytest.raises(SystemExit) as done:
        IpuOptMain(args=[str(path), "-t", "ipu-rows"]).run()
    assert done.value.code not in (0, None)
    err = capsys.readouterr()
    assert "has more elements than the 940572672 bytes of the whole device" in err.out + err.err
