"""graph.gather (embedding lookup) compiled and run on the device model: the rows come back
bit-exactly for seeded, repeated and boundary indices; a gather feeding a position add and a
GEMM passes; a GPT-2-sized table is spread over the chip; bad indices at run time stop the
host or the model by name, never a silent row."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from xdsl.parser import Parser

from device.model import ModelError, run_package
from frontend.run import compile_and_run
from tools.ipu_run import compile_module
from tools.registry import make_context


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def embed(ids: str, rows: int, width: int, element: str) -> str:
    out = f"{ids}x{width}x{element}"
    return f"""
func.func @embed(%ids: tensor<{ids}xi32>, %wte: tensor<{rows}x{width}x{element}>)
    -> tensor<{out}> {{
  %e = graph.gather %wte, %ids : (tensor<{rows}x{width}x{element}>, tensor<{ids}xi32>)
      -> tensor<{out}>
  func.return %e : tensor<{out}>
}}"""


@pytest.mark.parametrize("ids_shape, rows, width, element, tiles", [
    ((8,), 50, 16, "f16", 16),
    ((2, 4), 50, 16, "f32", 16),
    ((3, 5), 37, 70, "f16", 16),   # more columns than tiles: 5-column shards, one padded
    ((6,), 11, 3, "f32", 4),       # fewer columns than tiles: 3 of the 4 tiles used
])
def test_rows_come_back_bit_exactly(ids_shape, rows, width, element, tiles):
    module = parse(embed("x".join(map(str, ids_shape)), rows, width, element))
    rng = np.random.default_rng(1)
    table = rng.uniform(-1, 1, (rows, width)).astype(np.float16 if element == "f16" else np.float32)
    ids = rng.integers(0, rows, ids_shape).astype(np.int32)
    flat = ids.reshape(-1)
    flat[:4] = [0, rows - 1, rows - 1, 0]  # both boundaries, repeated
    run = compile_and_run(module, tiles, {"ids": ids, "wte": table})
    assert run.passed
    np.testing.assert_array_equal(run.outputs["result0"], table[ids])


def test_seeded_indices_pass_through_ipu_run(tmp_path):
    path = tmp_path / "embed.mlir"
    path.write_text(embed("8", 50, 16, "f16"))
    done = subprocess.run([sys.executable, "-m", "tools.ipu_run", str(path), "--tiles", "16",
                           "--quiet", "--seed", "5"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "check: PASS" in done.stdout and "max abs error: 0 " in done.stdout


POSITION_GEMM = """
func.func @embed(%ids: tensor<2x8xi32>, %wte: tensor<100x64xf16>, %wpe: tensor<8x64xf16>,
                 %w: tensor<64x32xf16>) -> tensor<2x8x32xf16> {
  %e = graph.gather %wte, %ids : (tensor<100x64xf16>, tensor<2x8xi32>) -> tensor<2x8x64xf16>
  %h = graph.add %e, %wpe : (tensor<2x8x64xf16>, tensor<8x64xf16>) -> tensor<2x8x64xf16>
  %y = graph.gemm %h, %w : (tensor<2x8x64xf16>, tensor<64x32xf16>) -> tensor<2x8x32xf16>
  func.return %y : tensor<2x8x32xf16>
}"""


@pytest.mark.parametrize("tiles", [4, 16])
def test_gather_then_position_add_then_gemm(tiles):
    run = compile_and_run(parse(POSITION_GEMM), tiles, seed=2)
    assert run.passed, (run.max_abs_error, run.max_rel_error)


@pytest.mark.slow
def test_gpt2_table_is_spread_over_the_chip():
    text = embed("2x8", 50257, 768, "f16")
    run = compile_and_run(parse(text), 1472, seed=0)
    assert run.passed and run.max_abs_error == 0
    table = next(t for t in run.package.inputs if t.name == "wte")
    # one column of all 50257 rows per tile (100 KB), on 768 tiles: no tile holds the table
    assert table.shard_count() == 768 and list(table.padded) == [50257, 1]


def package_of(text: str, tiles: int):
    from xdsl.dialects.builtin import ModuleOp

    module = parse(text)
    return compile_module(ModuleOp([module.ops.first.clone()]), tiles, "pad")


@pytest.mark.parametrize("bad", [50, -1])
def test_out_of_range_index_stops_the_model_by_name(bad):
    package = package_of(embed("8", 50, 16, "f16"), 16)
    ids = np.array([0, 1, 2, bad, 4, 5, 6, 7], np.int32)
    with pytest.raises(ModelError, match=rf"kernel gather_rows on tile 0: index {bad} at \[3\] "
                                         r"of the indices is outside the table's 50 rows"):
        run_package(package, {"ids": ids, "wte": np.zeros((50, 16), np.float16)})


def test_non_integer_index_input_is_refused_by_the_host():
    package = package_of(embed("8", 50, 16, "f16"), 16)
    ids = np.array([0, 1, 2, 3.5, 4, 5, 6, 7])
    with pytest.raises(ModelError) as info:
        run_package(package, {"ids": ids, "wte": np.zeros((50, 16), np.float16)})
    assert str(info.value) == ("input 'ids': element [3] = 3.5 is not an i32 integer (an index "
                               "input holds integers)")


def test_ipu_run_refuses_an_out_of_range_index_input_by_name(tmp_path):
    path = tmp_path / "embed.mlir"
    path.write_text(embed("8", 50, 16, "f16"))
    ids = tmp_path / "ids.npy"
    np.save(ids, np.array([0, 1, 2, 50, 4, 5, 6, 7], np.int32))
    done = subprocess.run([sys.executable, "-m", "tools.ipu_run", str(path), "--tiles", "16",
                           "--quiet", "--input", f"ids={ids}"], capture_output=True, text=True)
    assert done.returncode != 0 and "check: PASS" not in done.stdout
    assert "index 50 at [3] of the indices is outside the table's 50 rows" in done.stderr


def test_index_inputs_survive_a_saved_package(tmp_path):
    # the package's host metadata carries the i32 input; `ipu-run DIR` writes the given ids
    # exactly (both boundaries) and refuses one outside the table by name
    path = tmp_path / "embed.mlir"
    path.write_text(embed("2x4", 50, 16, "f32"))
    package = tmp_path / "package"
    base = [sys.executable, "-m", "tools.ipu_run"]
    done = subprocess.run([*base, str(path), "--tiles", "16", "--quiet", "--package",
                           str(package)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for ids, code, text in (([[0, 49, 3, 3], [49, 0, 1, 2]], 0, "check: PASS"),
                            ([[0, 50, 3, 3], [49, 0, 1, 2]], 2, "index 50 at [0, 1] of the "
                             "indices is outside the table's 50 rows")):
        np.save(tmp_path / "ids.npy", np.array(ids, np.int32))
        done = subprocess.run([*base, str(package), "--quiet", "--input",
                               f"ids={tmp_path / 'ids.npy'}"], capture_output=True, text=True)
        assert done.returncode == code and text in done.stdout + done.stderr


def test_one_index_input_for_two_tables():
    # the second gather wants the ids replicated on 8 tiles, not 16: a conversion of the i32
    # tensor (a local repack), exact
    text = """
    func.func @two(%ids: tensor<6xi32>, %a: tensor<20x16xf32>, %b: tensor<30x8xf32>)
        -> (tensor<6x16xf32>, tensor<6x8xf32>) {
      %x = graph.gather %a, %ids : (tensor<20x16xf32>, tensor<6xi32>) -> tensor<6x16xf32>
      %y = graph.gather %b, %ids : (tensor<30x8xf32>, tensor<6xi32>) -> tensor<6x8xf32>
      func.return %x, %y : tensor<6x16xf32>, tensor<6x8xf32>
    }"""
    ids = np.array([19, 0, 7, 7, 19, 0], np.int32)
    run = compile_and_run(parse(text), 16, {"ids": ids})
    assert run.passed and run.max_abs_error == 0
    np.testing.assert_array_equal(run.outputs["result1"], run.reference["result1"])
