"""Regression tests for the input and IR defects of issue 13: each is a clean diagnostic with
the documented exit status, never a traceback or click's bare "Aborted."."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from e2e_support import ROW_PLANS
from typer.testing import CliRunner
from xdsl.printer import Printer

from passes.ipu_pipeline import IpuPipelinePass
from tools import ipu_run
from tools.ipu_opt import IpuOptMain
from tools.ipu_run import make_context
from tools.source_locations import parse_located_module

GEMM = (
    "func.func @gemm(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) -> tensor<64x64xf16> {\n"
    "  %c = graph.gemm %a, %b : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16>\n"
    "  func.return %c : tensor<64x64xf16>\n}\n")


@pytest.fixture(scope="module")
def scheduled() -> str:
    """The GEMM at the tile and exchange levels, as ipu-opt prints it (the row plan)."""
    return scheduled_text(ROW_PLANS)


@pytest.fixture(scope="module")
def scheduled_grid() -> str:
    """The same GEMM with the grid plan: grouped exchanges and home views."""
    return scheduled_text(("amp_gemm_f16_grid",))


def scheduled_text(catalog: tuple[str, ...]) -> str:
    module = parse_located_module(make_context(), GEMM, "gemm.mlir")
    IpuPipelinePass(tiles=2, catalog=catalog).apply(make_context(), module)
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


def ipu_opt(capsys, path, *args) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        IpuOptMain(args=[str(path), *args]).run()
    return exited.value.code, capsys.readouterr().err


def run_cli(*args) -> tuple[int, str]:
    result = CliRunner().invoke(ipu_run.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.fixture
def gemm_file(tmp_path):
    path = tmp_path / "gemm.mlir"
    path.write_text(GEMM)
    return path


def test_input_npz_archive_is_a_usage_error(gemm_file, tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros((64, 128), np.float16))
    status, output = run_cli(gemm_file, "--input", f"a={tmp_path / 'x.npz'}")
    assert status == 2
    assert f"ipu-run: error: --input a: '{tmp_path / 'x.npz'}' is an .npz archive; give one " \
           "array as .npy (np.save)" in output


def test_empty_npy_is_a_usage_error_not_aborted(gemm_file, tmp_path):
    (tmp_path / "empty.npy").write_bytes(b"")
    status, output = run_cli(gemm_file, "--input", f"a={tmp_path / 'empty.npy'}")
    assert status == 2
    assert f"--input a: '{tmp_path / 'empty.npy'}' is empty, not an .npy array" in output
    assert "Aborted" not in output


def test_pickled_input_is_not_unpickled(gemm_file, tmp_path):
    np.save(tmp_path / "obj.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    status, output = run_cli(gemm_file, "--input", f"a={tmp_path / 'obj.npy'}")
    assert status == 2 and "cannot read" in output and "allow_pickle=False" in output


HUGE = "99999999999999999999"


@pytest.mark.parametrize("old, new", [
    ("shard [32, 128]", f"shard [{HUGE}, 128]"),
    ("scalars [32]", f"scalars [{HUGE}]"),
    ("placed = [src 0x5c000", f"placed = [src {HUGE}"),
    ("placed = [src 0x5c000, dst 0x5e000]", f"placed = [src 0x5c000, dst -{HUGE}]"),
    ("%j = 0 to 1", f"%j = 0 to {HUGE}"),
    ("address 0x54000", f"address {HUGE}"),
    ("row_address = 0x4c000", f"row_address = {HUGE}"),
    ("tile.exchange 2048 words", f"tile.exchange {HUGE} words"),
    ("align 32 tail 16", f"align {HUGE} tail 16"),
], ids=["shard", "scalars", "placed", "placed-negative", "loop", "address", "row_address",
        "words", "align"])
def test_integers_beyond_i64_in_tile_text(scheduled, tmp_path, capsys, old, new):
    assert old in scheduled
    path = tmp_path / "t.mlir"
    path.write_text(scheduled.replace(old, new, 1))
    status, err = ipu_opt(capsys, path)
    assert status == 1
    assert "does not fit in 64 bits (i64)" in err and "Traceback" not in err


@pytest.mark.parametrize("pattern, new", [
    (r" groups \d+ shift", f" groups {HUGE} shift"),
    (r" home \[\d+:", f" home [{HUGE}:"),
], ids=["groups", "home-pointer"])
def test_integers_beyond_i64_in_grid_text(scheduled_grid, tmp_path, capsys, pattern, new):
    assert re.search(pattern, scheduled_grid)
    path = tmp_path / "t.mlir"
    path.write_text(re.sub(pattern, new, scheduled_grid, count=1))
    status, err = ipu_opt(capsys, path)
    assert status == 1
    assert "does not fit in 64 bits (i64)" in err and "Traceback" not in err


@pytest.mark.parametrize("old, new", [
    ("(d0) -> ((d0 * 4096))", f"(d0) -> ((d0 * {HUGE}))"),
    ("%c_rhs_slot[(d0) -> (0)]", f"%c_rhs_slot[(d0) -> ({HUGE})]"),
    ("(d0) -> ((d0 * 4096))", "(d0) -> ((d0 * 4611686018427387904 + 4611686018427387904))"),
], ids=["product", "constant", "sum"])
def test_huge_constants_in_a_view_map(scheduled, tmp_path, capsys, old, new):
    assert old in scheduled
    path = tmp_path / "t.mlir"
    path.write_text(scheduled.replace(old, new, 1))
    status, err = ipu_opt(capsys, path)
    assert status == 1
    assert "can exceed 64-bit integers over the loop bounds" in err and "Traceback" not in err


def test_largest_i64_is_still_an_integer_of_the_text(scheduled, tmp_path, capsys):
    """The bound is i64's own: 2**63 - 1 parses, and the verifier then judges the value."""
    path = tmp_path / "t.mlir"
    path.write_text(scheduled.replace("address 0x54000", f"address {2**63 - 1}", 1))
    status, err = ipu_opt(capsys, path)
    assert status == 1 and "does not fit in 64 bits" not in err and "Traceback" not in err


def test_unterminated_string_does_not_hang(tmp_path, capsys):
    """xDSL 0.74's string-literal pattern backtracks exponentially on this line."""
    path = tmp_path / "t.mlir"
    path.write_text(GEMM.replace("(tensor<64x128xf16>, tensor", "(tensor<64x128xf16>, \"tensor"))
    status, err = ipu_opt(capsys, path)
    assert status == 1 and "End of file reached before closing string literal" in err


def test_string_literals_lex_as_before():
    from xdsl.utils.mlir_lexer import MLIRLexer

    from tools.source_locations import STRING_LITERAL

    for text in ['"abc"', '"a\\"b"', '"a\\0Ab"', '"x\\q"', '"', '"abc\n"', '""', '"\\n\\t\\\\"',
                 '"é"']:
        old = MLIRLexer._unescaped_characters_regex.match(text)
        new = STRING_LITERAL.match(text)
        assert (old and old.group()) == (new and new.group()), text
