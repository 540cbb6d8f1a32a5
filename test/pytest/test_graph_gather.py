"""graph.gather (embedding lookup by i32 indices): the reference against NumPy's indexing,
its input checks, the signature rule for index arguments, and ipu-run's random indices."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser

from interpreters.graph import InterpreterError, find_function, run_function
from tools.registry import make_context
from tools.run_io import random_inputs

EMBED = """
func.func @embed(%table: tensor<10x4xf32>, %ids: tensor<2x3xi32>, %pos: tensor<3x4xf32>)
    -> tensor<2x3x4xf32> {
  %e = graph.gather %table, %ids : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  %s = graph.add %e, %pos : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  func.return %s : tensor<2x3x4xf32>
}
"""


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def test_gather_is_numpy_row_indexing_plus_position_add():
    rng = np.random.default_rng(0)
    table = rng.uniform(-1, 1, (10, 4)).astype(np.float32)
    pos = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    ids = np.array([[9, 0, 3], [3, 3, 7]], np.int64)  # torch's int64 ids are accepted
    (got,) = run_function(parse(EMBED), {"table": table, "ids": ids, "pos": pos})
    want = (table.astype(np.float64)[ids] + pos).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.float32


def test_gather_f16_rows_of_a_rank3_table_by_rank1_indices():
    text = """
    func.func @g(%t: tensor<5x2x3xf16>, %i: tensor<4xi32>) -> tensor<4x2x3xf16> {
      %e = graph.gather %t, %i : (tensor<5x2x3xf16>, tensor<4xi32>) -> tensor<4x2x3xf16>
      func.return %e : tensor<4x2x3xf16>
    }"""
    table = np.arange(30, dtype=np.float16).reshape(5, 2, 3)
    ids = np.array([4, 1, 1, 0], np.int32)
    (got,) = run_function(parse(text), [table, ids])
    np.testing.assert_array_equal(got, table[ids])


@pytest.mark.parametrize("bad, message", [
    (10, "index 10 at [0, 1] of the indices is outside the table's 10 rows"),
    (-1, "index -1 at [0, 1] of the indices is outside the table's 10 rows"),
])
def test_out_of_range_index_is_a_diagnostic(bad, message):
    ids = np.array([[0, bad, 1], [2, 3, 4]])
    inputs = {"table": np.zeros((10, 4), np.float32), "ids": ids,
              "pos": np.zeros((3, 4), np.float32)}
    with pytest.raises(InterpreterError, match=message.replace("[", r"\[").replace("]", r"\]")):
        run_function(parse(EMBED), inputs)


@pytest.mark.parametrize("ids, message", [
    (np.full((2, 3), 0.5), "an i32 argument takes integers, got non-integral values"),
    (np.full((2, 3), 2**31, np.int64), "do not fit in i32"),
])
def test_index_inputs_must_be_i32_integers(ids, message):
    inputs = {"table": np.zeros((10, 4), np.float32), "ids": ids,
              "pos": np.zeros((3, 4), np.float32)}
    with pytest.raises(InterpreterError, match=message):
        run_function(parse(EMBED), inputs)


def test_index_argument_of_another_integer_type_is_refused_by_name():
    text = """
    func.func @sig(%ids: tensor<3xi16>) -> tensor<3xi16> {
      func.return %ids : tensor<3xi16>
    }"""
    with pytest.raises(InterpreterError, match=r"argument %ids has element type i16; graph "
                                               r"tensors are f32, f16 or f8E4M3FNUZ"):
        run_function(parse(text), [np.zeros(3, np.int16)])


def test_random_inputs_draw_indices_within_the_table_rows():
    func = find_function(parse(EMBED))
    assert isinstance(func, FuncOp)
    _, ids, _ = random_inputs(func, seed=3)
    big = random_inputs(func, seed=3)
    assert ids.dtype == np.int32 and ids.shape == (2, 3)
    assert ids.min() >= 0 and ids.max() < 10
    np.testing.assert_array_equal(ids, big[1])  # seeded
    many = np.concatenate([random_inputs(func, seed=s)[1].ravel() for s in range(40)])
    assert set(many.tolist()) == set(range(10))  # every row is drawn, none outside
    run_function(parse(EMBED), random_inputs(func, seed=3))  # and the reference accepts them
