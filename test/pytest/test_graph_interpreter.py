"""The graph reference interpreter against independent formulas, op by op."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.parser import Parser

from frontend.builder import GraphBuilder, f8, f16, f32
from interpreters.graph import InterpreterError, input_names, run_function
from tools.registry import make_context

FP8 = ml_dtypes.float8_e4m3fnuz


def parse(text: str):
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def rand(rng: np.random.Generator, shape, dtype=np.float32) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def matmul_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Batched matmul by explicit broadcasting and a sum over k (no np.matmul)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return (a64[..., :, :, None] * b64[..., None, :, :]).sum(axis=-2)


def softmax_attention_reference(q, k, v, scale, causal):
    """Row by row: weights_j = exp(s_j - max) / sum, masked keys j > i skipped when causal."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    out = np.zeros(q.shape)
    for index in np.ndindex(*q.shape[:-2]):
        for i in range(q.shape[-2]):
            keys = range(i + 1) if causal else range(k.shape[-2])
            logits = [scale * float(np.dot(q[index][i], k[index][j])) for j in keys]
            top = max(logits)
            weights = [math.exp(s - top) for s in logits]
            total = sum(weights)
            out[index][i] = sum(w / total * v[index][j] for w, j in zip(weights, keys))
    return out


def gelu_reference(x: np.ndarray) -> np.ndarray:
    flat = [0.5 * t * (1.0 + math.erf(t / math.sqrt(2.0))) for t in x.astype(np.float64).ravel()]
    return np.array(flat).reshape(x.shape)


# -- gemm -------------------------------------------------------------------------------------


@pytest.mark.parametrize("transpose_lhs", [False, True])
@pytest.mark.parametrize("transpose_rhs", [False, True])
def test_gemm_transposes_and_batch_broadcast(transpose_lhs, transpose_rhs):
    rng = np.random.default_rng(1)
    lhs_shape = (2, 1, 7, 5) if transpose_lhs else (2, 1, 5, 7)  # logical [2,1,M=5,K=7]
    rhs_shape = (3, 4, 7) if transpose_rhs else (3, 7, 4)  # logical [3,K=7,N=4]
    a, b = rand(rng, lhs_shape), rand(rng, rhs_shape)
    g = GraphBuilder("f")
    c = g.gemm(g.input(lhs_shape), g.input(rhs_shape), transpose_lhs, transpose_rhs)
    g.output(c)
    (got,) = run_function(g.build(), [a, b])
    a_logical = np.swapaxes(a, -1, -2) if transpose_lhs else a
    b_logical = np.swapaxes(b, -1, -2) if transpose_rhs else b
    want = matmul_reference(a_logical, b_logical)
    assert got.shape == (2, 3, 5, 4) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_gemm_textual_f16_rounds_result():
    module = parse("""
    func.func @f(%a: tensor<4x8xf16>, %b: tensor<8x3xf16>) -> tensor<4x3xf16> {
      %c = graph.gemm %a, %b : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf16>
      func.return %c : tensor<4x3xf16>
    }""")
    rng = np.random.default_rng(2)
    a, b = rand(rng, (4, 8), np.float16), rand(rng, (8, 3), np.float16)
    (got,) = run_function(module, [a, b])
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, matmul_reference(a, b).astype(np.float16))


@settings(max_examples=25, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), max_size=3),
    ones_lhs=st.lists(st.booleans(), min_size=3, max_size=3),
    ones_rhs=st.lists(st.booleans(), min_size=3, max_size=3),
    drop_lhs=st.integers(0, 3),
    drop_rhs=st.integers(0, 3),
    mkn=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
    transposes=st.tuples(st.booleans(), st.booleans()),
    seed=st.integers(0, 2**16),
)
def test_gemm_random_shapes(batch, ones_lhs, ones_rhs, drop_lhs, drop_rhs, mkn, transposes, seed):
    """Random batch shapes where each operand may drop leading axes or hold extent 1."""
    m, k, n = mkn
    lhs_batch = [1 if one else d for d, one in zip(batch, ones_lhs)][min(drop_lhs, len(batch)):]
    rhs_batch = [1 if one else d for d, one in zip(batch, ones_rhs)][min(drop_rhs, len(batch)):]
    tl, tr = transposes
    lhs_shape = (*lhs_batch, *((k, m) if tl else (m, k)))
    rhs_shape = (*rhs_batch, *((n, k) if tr else (k, n)))
    rng = np.random.default_rng(seed)
    a, b = rand(rng, lhs_shape), rand(rng, rhs_shape)
    g = GraphBuilder("f")
    g.output(g.gemm(g.input(lhs_shape), g.input(rhs_shape), tl, tr))
    (got,) = run_function(g.build(), [a, b])
    want = np.matmul(np.swapaxes(a, -1, -2) if tl else a, np.swapaxes(b, -1, -2) if tr else b)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# -- add ---------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), max_size=4),
    ones_lhs=st.lists(st.booleans(), min_size=4, max_size=4),
    ones_rhs=st.lists(st.booleans(), min_size=4, max_size=4),
    drop=st.tuples(st.integers(0, 4), st.integers(0, 4)),
    seed=st.integers(0, 2**16),
)
def test_add_broadcasts_like_numpy(shape, ones_lhs, ones_rhs, drop, seed):
    lhs_shape = [1 if one else d for d, one in zip(shape, ones_lhs)][min(drop[0], len(shape)):]
    rhs_shape = [1 if one else d for d, one in zip(shape, ones_rhs)][min(drop[1], len(shape)):]
    rng = np.random.default_rng(seed)
    a, b = rand(rng, lhs_shape), rand(rng, rhs_shape)
    g = GraphBuilder("f")
    g.output(g.add(g.input(lhs_shape), g.input(rhs_shape)))
    (got,) = run_function(g.build(), [a, b])
    want = a.astype(np.float64) + b.astype(np.float64)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_add_fp8_applies_scales():
    """value = q * 2**scale on both inputs and the result; the result is q_out."""
    module = parse("""
    func.func @f(%a: tensor<16xf8E4M3FNUZ, #graph.fp8_scale<-2>>, %b: tensor<16xf8E4M3FNUZ, #graph.fp8_scale<1>>) -> tensor<16xf8E4M3FNUZ, #graph.fp8_scale<2>> {
      %s = graph.add %a, %b : (tensor<16xf8E4M3FNUZ, #graph.fp8_scale<-2>>, tensor<16xf8E4M3FNUZ, #graph.fp8_scale<1>>) -> tensor<16xf8E4M3FNUZ, #graph.fp8_scale<2>>
      func.return %s : tensor<16xf8E4M3FNUZ, #graph.fp8_scale<2>>
    }""")
    rng = np.random.default_rng(3)
    qa, qb = rand(rng, 16, np.float32).astype(FP8), rand(rng, 16, np.float32).astype(FP8)
    (got,) = run_function(module, [qa, qb])
    assert got.dtype == FP8
    value = qa.astype(np.float64) * 2.0**-2 + qb.astype(np.float64) * 2.0**1
    np.testing.assert_array_equal(got, (value / 2.0**2).astype(FP8))


def test_fp8_builder_input_and_saturation():
    """Builder FP8 inputs carry the scale; results beyond 240 * 2**scale saturate, not NaN."""
    g = GraphBuilder("f")
    a = g.input([4], f8, scale=3)
    g.output(g.add(a, a))  # result type: f8E4M3FNUZ without scale (scale 0)
    q = np.array([1.0, -2.0, 20.0, -30.0], np.float32).astype(FP8)
    (got,) = run_function(g.build(), [q])
    # values 2*q*8 = 16, -32, 320 -> 240 (saturated), -480 -> -240
    np.testing.assert_array_equal(got.astype(np.float64), [16.0, -32.0, 240.0, -240.0])


# -- gelu --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,element", [(np.float32, f32), (np.float16, f16)])
def test_gelu_is_exact_erf_form(dtype, element):
    rng = np.random.default_rng(4)
    x = (rng.uniform(-6, 6, size=(3, 17))).astype(dtype)
    g = GraphBuilder("f")
    g.output(g.gelu(g.input([3, 17], element)))
    (got,) = run_function(g.build(), [x])
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, gelu_reference(x).astype(dtype))


# -- attention ---------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_explicit_softmax(causal):
    rng = np.random.default_rng(5)
    q, k, v = (rand(rng, (2, 2, 6, 4)) for _ in range(3))
    g = GraphBuilder("f")
    args = [g.input([2, 2, 6, 4]) for _ in range(3)]
    g.output(g.attention(*args, causal=causal))
    (got,) = run_function(g.build(), [q, k, v])
    want = softmax_attention_reference(q, k, v, 1 / math.sqrt(4), causal)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_causal_first_row_is_first_value():
    """Query 0 may only attend to key 0, so its output is exactly value row 0."""
    rng = np.random.default_rng(6)
    q, k, v = (rand(rng, (1, 5, 3)) for _ in range(3))
    g = GraphBuilder("f")
    args = [g.input([1, 5, 3]) for _ in range(3)]
    g.output(g.attention(*args, causal=True))
    (got,) = run_function(g.build(), [q, k, v])
    np.testing.assert_allclose(got[0, 0], v[0, 0], rtol=1e-6)


def test_attention_unmasked_different_lengths_and_explicit_scale():
    rng = np.random.default_rng(7)
    q, k, v = rand(rng, (3, 5, 4)), rand(rng, (3, 9, 4)), rand(rng, (3, 9, 4))
    module = parse("""
    func.func @f(%q: tensor<3x5x4xf32>, %k: tensor<3x9x4xf32>, %v: tensor<3x9x4xf32>) -> tensor<3x5x4xf32> {
      %o = graph.attention %q, %k, %v scale 0.75 : (tensor<3x5x4xf32>, tensor<3x9x4xf32>, tensor<3x9x4xf32>) -> tensor<3x5x4xf32>
      func.return %o : tensor<3x5x4xf32>
    }""")
    (got,) = run_function(module, [q, k, v])
    want = softmax_attention_reference(q, k, v, 0.75, causal=False)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# -- repeat ------------------------------------------------------------------------------------


def test_repeat_with_carried_invariant_and_sequence():
    rng = np.random.default_rng(8)
    x0, bias, ws, y0 = rand(rng, (4, 6)), rand(rng, (6,)), rand(rng, (3, 6, 6)), rand(rng, (4, 6))
    g = GraphBuilder("f")
    x_in, b_in, w_in, y_in = g.input([4, 6]), g.input([6]), g.input([3, 6, 6]), g.input([4, 6])

    def layer(carried, invariants, slices):
        (x, y), (b,), (w,) = carried, invariants, slices
        return [g.gelu(g.add(g.gemm(x, w), b)), g.add(y, x)]

    x_out, y_out = g.repeat(3, layer, carried=[x_in, y_in], invariant=[b_in], sequence=[w_in])
    g.output(x_out, y_out)
    got_x, got_y = run_function(g.build(), [x0, bias, ws, y0])

    x, y = x0.astype(np.float64), y0.astype(np.float64)
    for i in range(3):  # round each op's result to f32, as the graph's types say
        h = (matmul_reference(x, ws[i]).astype(np.float32) + bias).astype(np.float32)
        x, y = gelu_reference(h).astype(np.float32), (y + x).astype(np.float32)
    np.testing.assert_allclose(got_x, x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_y, y, rtol=1e-6, atol=1e-6)


def test_nested_repeats():
    module = parse("""
    func.func @f(%x0: tensor<2x3xf32>, %d: tensor<3xf32>, %seq: tensor<4x3xf32>) -> tensor<2x3xf32> {
      %r = graph.repeat 4 carried(%x = %x0 : tensor<2x3xf32>) invariant(%dd = %d : tensor<3xf32>) sequence(%s = %seq : tensor<4x3xf32>) {
        %inner = graph.repeat 3 carried(%y = %x : tensor<2x3xf32>) invariant(%e = %dd : tensor<3xf32>) {
          %z = graph.add %y, %e : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
          graph.yield %z : tensor<2x3xf32>
        } -> tensor<2x3xf32>
        %w = graph.add %inner, %s : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
        graph.yield %w : tensor<2x3xf32>
      } -> tensor<2x3xf32>
      func.return %r : tensor<2x3xf32>
    }""")
    rng = np.random.default_rng(9)
    x0, d, seq = rand(rng, (2, 3)), rand(rng, (3,)), rand(rng, (4, 3))
    (got,) = run_function(module, [x0, d, seq])
    x = x0.copy()
    for i in range(4):
        for _ in range(3):
            x = (x + d).astype(np.float32)
        x = (x + seq[i]).astype(np.float32)
    np.testing.assert_array_equal(got, x)


# -- API ---------------------------------------------------------------------------------------


def test_input_names_and_function_selection():
    module = parse("""
    func.func @first(%a: tensor<2xf32>, %1: tensor<2xf32>) -> tensor<2xf32> {
      %s = graph.add %a, %1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      func.return %s : tensor<2xf32>
    }
    func.func @second(%b: tensor<2xf32>) -> tensor<2xf32> {
      %g = graph.gelu %b : tensor<2xf32> -> tensor<2xf32>
      func.return %g : tensor<2xf32>
    }""")
    funcs = list(module.ops)
    assert input_names(funcs[0]) == ["a", "arg1"]
    x = np.array([0.5, -1.0], np.float32)
    (first,) = run_function(module, [x, x])
    np.testing.assert_array_equal(first, 2 * x)
    (second,) = run_function(module, [x], "second")
    np.testing.assert_array_equal(second, gelu_reference(x).astype(np.float32))


def test_wrong_inputs_are_reported():
    g = GraphBuilder("f")
    g.output(g.gelu(g.input([2, 3], name="x")))
    module = g.build()
    with pytest.raises(InterpreterError, match="takes 1 inputs"):
        run_function(module, [])
    with pytest.raises(InterpreterError, match=r"input x: shape \(3, 2\)"):
        run_function(module, [np.zeros((3, 2), np.float32)])
    with pytest.raises(InterpreterError, match="no func.func @g"):
        run_function(module, [np.zeros((2, 3), np.float32)], "g")


def test_examples_run_quickly_and_finite():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "examples"
    for name in ["transformer_block.mlir", "repeat_layers.mlir"]:
        module = parse((root / name).read_text())
        func = next(iter(module.ops))
        rng = np.random.default_rng(0)
        inputs = [rand(rng, t.get_shape(), np.float16 if "f16" in str(t) else np.float32)
                  for t in func.function_type.inputs.data]
        outputs = run_function(module, inputs)
        assert all(np.isfinite(o.astype(np.float64)).all() for o in outputs)


# ---- robustness: limits, non-numeric inputs, tensors too large to evaluate --------------------


@pytest.mark.parametrize("element,dtype", [(f32, np.float32), (f16, np.float16)])
def test_gelu_at_infinity_is_its_limit(element, dtype):
    import warnings

    g = GraphBuilder("f")
    g.output(g.gelu(g.input([4], element)))
    module = g.build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from -inf * 0
        (y,) = run_function(module, [np.array([-np.inf, np.inf, np.nan, -2.0], dtype)])
    assert y[0] == 0.0 and y[1] == np.inf and np.isnan(y[2])  # NaN stays NaN
    assert y[3] == dtype(gelu_reference(np.array([-2.0]))[0])


def test_gelu_of_an_f16_overflow_to_minus_infinity_is_zero():
    g = GraphBuilder("f")
    x = g.input([2], f16)
    g.output(g.gelu(g.add(x, x)))  # -60000 * 2 rounds to -inf in f16
    (y,) = run_function(g.build(), [np.array([-60000.0, 60000.0], np.float16)])
    assert list(y) == [0.0, np.inf]


@pytest.mark.parametrize("array,dtype", [
    (np.array(["a", "b"]), "<U1"),
    (np.array([1 + 2j, 3j]), "complex128"),
    (np.array([True, False]), "bool"),
    (np.array([1.0, None]), "object"),
])
def test_non_numeric_inputs_are_named(array, dtype):
    g = GraphBuilder("f")
    g.output(g.gelu(g.input([2], name="x")))
    with pytest.raises(InterpreterError) as info:
        run_function(g.build(), [array])
    assert str(info.value) == (
        f"input x: dtype {dtype} is not a numeric type; inputs are integer or floating-point "
        "arrays (FP8 arguments as float8_e4m3fnuz)"
    )


def test_integer_inputs_are_accepted():
    g = GraphBuilder("f")
    x = g.input([2], name="x")
    g.output(g.add(x, x))
    (y,) = run_function(g.build(), [np.array([1, -3])])
    assert list(y) == [2.0, -6.0]


def test_an_op_result_too_large_for_the_device_is_refused_before_allocating():
    """A gemm of small operands whose result alone exceeds the device (100000 x 100000 f32)."""
    from device.target import IPU21

    module = parse("""func.func @f(%a: tensor<100000x1xf32>, %b: tensor<1x100000xf32>) -> tensor<1x1xf32> {
  %c = graph.gemm %a, %b : (tensor<100000x1xf32>, tensor<1x100000xf32>) -> tensor<100000x100000xf32>
  %d = graph.gemm %b, %a : (tensor<1x100000xf32>, tensor<100000x1xf32>) -> tensor<1x1xf32>
  func.return %d : tensor<1x1xf32>
}""")
    with pytest.raises(InterpreterError) as info:
        run_function(module, [np.zeros((100000, 1)), np.zeros((1, 100000))])
    device_bytes = IPU21.tiles * IPU21.sram_bytes
    assert str(info.value) == (
        "%c tensor<100000x100000xf32> has 10000000000 elements (40000000000 bytes), more than "
        f"the whole ipu21 memory ({IPU21.tiles} tiles x {IPU21.sram_bytes} bytes = "
        f"{device_bytes} bytes): it can never run on the device"
    )
    assert info.value.op is not None and info.value.op.name == "graph.gemm"


def test_a_tensor_too_large_for_float64_evaluation_is_refused():
    """2**28 + 1 FP8 elements fit the device (~256 MiB) but not the reference's float64 budget;
    the refusal comes before the inputs are even looked at."""
    n = 2**28 + 1
    module = parse(f"""func.func @f(%a: tensor<{n}xf8E4M3FNUZ>) -> tensor<{n}xf8E4M3FNUZ> {{
  func.return %a : tensor<{n}xf8E4M3FNUZ>
}}""")
    with pytest.raises(InterpreterError) as info:
        run_function(module, [np.zeros(1)])
    assert str(info.value) == (
        f"argument %a tensor<{n}xf8E4M3FNUZ> has {n} elements; the reference interpreter "
        "evaluates in float64 and refuses tensors of more than 2**28 = 268435456 elements "
        "(2 GiB each)"
    )


def test_attention_logits_count_against_the_float64_budget():
    s = 2**14 + 1  # [1, s, s] logits > 2**28 elements, while q, k, v and the result are small
    module = parse(f"""func.func @f(%q: tensor<1x{s}x2xf32>) -> tensor<1x{s}x2xf32> {{
  %o = graph.attention %q, %q, %q : (tensor<1x{s}x2xf32>, tensor<1x{s}x2xf32>, tensor<1x{s}x2xf32>) -> tensor<1x{s}x2xf32>
  func.return %o : tensor<1x{s}x2xf32>
}}""")
    with pytest.raises(InterpreterError, match=rf"the float64 logits \[1x{s}x{s}\] of this "
                                               rf"attention has {s * s} elements"):
        run_function(module, [np.zeros((1, s, 2))])
