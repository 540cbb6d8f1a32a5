"""The Python conveniences: `x @ w` and `x + y` on builder values, NumPy dtypes and names as
element types, `run_function` with inputs by name, and `frontend.run.compile_and_run`."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import f16, f32
from xdsl.ir import BlockArgument, OpResult

from frontend.builder import (
    BuilderTypeError,
    BuilderValueError,
    GraphBuilder,
    GraphValue,
    as_element_type,
    f8,
)
from frontend.run import compile_and_run
from interpreters.graph import InterpreterError, run_function
from tools.ipu_run import parse_module, run_main

ROOT = Path(__file__).resolve().parents[2]


def gemm_add(use_operators: bool) -> str:
    g = GraphBuilder("f")
    x = g.input([4, 8], f32, name="x")
    w = g.input([8, 4], f32, name="w")
    b = g.input([4, 4], f32, name="b")
    g.output(x @ w + b if use_operators else g.add(g.gemm(x, w), b))
    return str(g.build())


def test_operators_build_the_same_graph_as_the_methods():
    assert gemm_add(True) == gemm_add(False)
    assert "graph.gemm %x, %w" in gemm_add(True) and "graph.add %gemm1, %b" in gemm_add(True)


def test_builder_values_wrap_unaltered_xdsl_values():
    g = GraphBuilder("f")
    x = g.input([2, 2], f32, name="x")
    y = x @ x
    assert isinstance(x, GraphValue) and isinstance(y, GraphValue)
    assert type(x.value) is BlockArgument and type(y.value) is OpResult  # xDSL's own classes
    assert y.value.owner.operands[0] is x.value
    assert (x.type, x.shape, y.name_hint) == (x.value.type, (2, 2), "gemm1")
    assert g.input([2, 2], f32, name="z") != x and GraphValue(x.value, g) == x


def test_operators_take_a_plain_xdsl_value_on_either_side():
    g = GraphBuilder("f")
    x = g.input([2, 2], f32, name="x")
    w = g.input([2, 2], f32, name="w")
    left, right = x.value @ w, x @ w.value
    total = x.value + left
    assert left.value.owner.operands[0] is x.value and right.value.owner.operands[1] is w.value
    assert list(total.value.owner.operands) == [x.value, left.value]


def test_operators_inside_a_repeat_body():
    g = GraphBuilder("f")
    x = g.input([4, 4], f32, name="x")
    w = g.input([3, 4, 4], f32, name="w")
    (out,) = g.repeat(3, lambda c, i, s: [c[0] @ s[0] + c[0]], carried=[x], sequence=[w])
    g.output(out)
    module = g.build()
    rng = np.random.default_rng(1)
    xs, ws = rng.standard_normal((4, 4)), rng.standard_normal((3, 4, 4))
    expected = xs.astype(np.float32)
    for k in range(3):
        expected = (expected.astype(np.float64) @ ws[k].astype(np.float32) + expected).astype(
            np.float32)
    (got,) = run_function(module, {"x": xs, "w": ws})
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_operator_errors_are_the_builders():
    g = GraphBuilder("f")
    x = g.input([2, 2], f32, name="x")
    with pytest.raises(BuilderTypeError, match="gemm rhs must be a value returned by input"):
        x @ np.ones((2, 2))
    with pytest.raises(BuilderTypeError, match="add rhs must be a value returned by input"):
        x + 1.0
    g.output(x)
    module = g.build()
    del g
    gc.collect()
    (arg,) = module.ops.first.body.block.args  # xDSL's values have no operators of ours
    with pytest.raises(TypeError, match="unsupported operand type"):
        arg @ arg
    with pytest.raises(BuilderTypeError, match="graph @f was already built: no ops can be added"):
        x @ x  # a value of a built graph


@pytest.mark.parametrize(("spec", "expected"), [
    (np.float32, f32), (np.dtype("float16"), f16), ("f16", f16), ("float32", f32),
    (ml_dtypes.float8_e4m3fnuz, f8), ("f8", f8), ("f8E4M3FNUZ", f8), (f16, f16),
])
def test_element_types_from_numpy_and_names(spec, expected):
    assert as_element_type(spec) == expected
    g = GraphBuilder("f")
    assert g.input([2], spec).type.get_element_type() == expected


@pytest.mark.parametrize(("spec", "error", "message"), [
    ("int8", BuilderValueError,
     "element type 'int8' is not one of f32, float32, f16, float16, f8, f8E4M3FNUZ, "
     "float8_e4m3fnuz"),
    (np.int32, BuilderValueError,
     "NumPy dtype int32 has no graph element type (float32, float16 or float8_e4m3fnuz)"),
])
def test_unknown_element_types_are_named(spec, error, message):
    with pytest.raises(error) as info:
        GraphBuilder("f").input([2], spec)
    assert str(info.value) == message


def test_run_function_takes_inputs_by_name():
    module = parse_module(ROOT / "examples" / "gemm_f16.mlir")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((256, 320)), rng.standard_normal((320, 192))
    (by_order,) = run_function(module, [a, b])
    (by_name,) = run_function(module, {"b": b, "a": a})
    np.testing.assert_array_equal(by_order, by_name)
    with pytest.raises(InterpreterError) as info:
        run_function(module, {"a": a, "b": b, "c": a})
    assert str(info.value) == "@gemm has no argument named c (arguments: a, b)"
    with pytest.raises(InterpreterError) as info:
        run_function(module, {"a": a})
    assert str(info.value) == "@gemm: no input for argument b (given: a)"


def test_compile_and_run_is_ipu_run_from_python(capsys):
    """Same inputs (seed 0), same device run: the numbers ipu-run --json prints."""
    module = parse_module(ROOT / "examples" / "gemm_f16.mlir")
    text_before = str(module)
    run = compile_and_run(module, tiles=4)
    assert str(module) == text_before  # the caller's module is not lowered in place
    assert run_main(ROOT / "examples" / "gemm_f16.mlir", tiles=4, json_output=True) == 0
    summary = json.loads(capsys.readouterr().out)
    assert run.passed and summary["check"] == "PASS"
    total = summary["modeled_cycles"]["total"]
    assert run.cycles == total == run.summary["modeled_cycles"]["total"]
    assert run.max_abs_error == summary["max_abs_error"]
    np.testing.assert_allclose(run.outputs["result0"].astype(np.float64),
                               run.reference["result0"].astype(np.float64),
                               atol=1e-2 * np.abs(run.reference["result0"]).max())


def test_compile_and_run_inputs_by_name_and_in_order():
    g = GraphBuilder("proj")
    x = g.input([64, 128], np.float32, name="x")
    w = g.input([128, 64], np.float32, name="w")
    g.output(x @ w)
    module = g.build()
    rng = np.random.default_rng(2)
    xs, ws = rng.standard_normal((64, 128)), rng.standard_normal((128, 64))
    named = compile_and_run(module, tiles=2, inputs={"w": ws, "x": xs})
    ordered = compile_and_run(module, tiles=2, inputs=[xs, ws])
    assert named.passed and ordered.passed
    np.testing.assert_array_equal(named.outputs["result0"], ordered.outputs["result0"])
    np.testing.assert_allclose(named.outputs["result0"], xs.astype(np.float32) @ ws.astype(
        np.float32), rtol=1e-4, atol=1e-4)
    with pytest.raises(InterpreterError, match="@proj has no argument named y"):
        compile_and_run(module, tiles=2, inputs={"y": xs})
    with pytest.raises(InterpreterError) as info:
        compile_and_run(module, tiles=2, inputs=[xs])
    assert str(info.value) == "@proj takes 2 inputs (x, w), got 1"
