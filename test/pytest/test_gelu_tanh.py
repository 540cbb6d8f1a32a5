"""GeLU's tanh form (`graph.gelu approximate tanh`): the shared definition against the formula
and torch, the `gelu_tanh` kernel on the device model, its cycles, the builder's diagnostic,
and whole programs on 16 tiles checked against an independent formula (not the reference the
compiler shares the definition with), for f16 and f32."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from kernels_support import (
    T,
    descriptors,
    fmt,
)
from xdsl.utils.exceptions import VerifyException

from device.kernels import KERNELS, kernel_cycles
from device.numerics import GeluApproximation, gelu, gelu_function, gelu_tanh
from frontend.builder import GraphBuilder
from frontend.run import compile_and_run
from interpreters.graph import run_function
from ipu_dialects import graph


def require_torch():
    """torch, or a skip without it; a failure where CI requires it (`IPU_REQUIRE_TORCH=1`, as
    test/pytest/test_torch_import.py)."""
    if os.environ.get("IPU_REQUIRE_TORCH"):
        import torch
        return torch
    return pytest.importorskip("torch")


RNG = np.random.default_rng(2026)


def formula(x: np.ndarray) -> np.ndarray:
    """Element by element with math.tanh (independent of device.numerics' vectorization)."""
    c = math.sqrt(2.0 / math.pi)
    flat = [0.5 * v * (1.0 + math.tanh(c * (v + 0.044715 * v ** 3))) for v in x.reshape(-1).tolist()]
    return np.asarray(flat).reshape(x.shape)


# ---- the definition the reference and the kernel share ---------------------------------------

def test_tanh_gelu_is_the_formula_and_not_the_exact_gelu():
    x = np.concatenate([np.linspace(-8, 8, 4001), RNG.normal(0, 3, 1000)])
    # the textbook form cancels in 1 + tanh for negative x: absolute agreement there
    np.testing.assert_allclose(gelu_tanh(x), formula(x), rtol=1e-13, atol=1e-14)
    # the two forms differ by up to about 4.7e-4 (near |x| = 2): far above f32 rounding
    gap = np.max(np.abs(gelu_tanh(x) - gelu(x)))
    assert 1e-4 < gap < 1e-3


def test_tanh_gelu_matches_torch():
    torch = require_torch()
    x = RNG.normal(0, 4, (64, 33))
    want = torch.nn.functional.gelu(torch.from_numpy(x), approximate="tanh").numpy()
    np.testing.assert_allclose(gelu_tanh(x), want, rtol=1e-13, atol=1e-14)


def test_tanh_gelu_limits_and_large_values():
    x = np.array([-np.inf, np.inf, -1e30, 1e30, -3.4e38, 3.4e38, 0.0, np.nan])
    y = gelu_tanh(x)
    np.testing.assert_array_equal(y[:7], [0.0, np.inf, -0.0, 1e30, -0.0, 3.4e38, 0.0])
    assert np.isnan(y[7])


def test_gelu_function_names_each_form():
    assert gelu_function(None) is gelu
    assert gelu_function(GeluApproximation.TANH) is gelu_tanh


# ---- the reference interpreter and the builder -------------------------------------------------

def tanh_gelu_module(shape, dtype, approximate="tanh"):
    g = GraphBuilder("f")
    x = g.input(shape, dtype, name="x")
    g.output(g.gelu(x, approximate=approximate))
    return g.build()


@pytest.mark.parametrize("dtype,np_dtype", [("f32", np.float32), ("f16", np.float16)])
def test_reference_interpreter_computes_the_tanh_form_rounded_once(dtype, np_dtype):
    x = (RNG.normal(0, 3, (6, 40))).astype(np_dtype)
    (got,) = run_function(tanh_gelu_module([6, 40], dtype), [x])
    assert got.dtype == np_dtype
    np.testing.assert_array_equal(got, gelu_tanh(x.astype(np.float64)).astype(np_dtype))
    ulp = np.finfo(np_dtype).eps
    # absolute slack: the storage's smallest step, and the textbook form's cancellation
    tiny = max(float(np.finfo(np_dtype).smallest_subnormal), 1e-14)
    np.testing.assert_allclose(got, formula(x.astype(np.float64)), rtol=ulp, atol=tiny)


def test_builder_exact_by_default_and_none_is_exact():
    for approximate in (None, "none"):
        op = next(o for o in tanh_gelu_module([4], "f32", approximate).walk()
                  if isinstance(o, graph.GeluOp))
        assert op.approximate is None and op.approximation is None
    op = next(o for o in tanh_gelu_module([4], "f32").walk() if isinstance(o, graph.GeluOp))
    assert op.approximation == GeluApproximation.TANH


def test_builder_refuses_an_unknown_approximation():
    with pytest.raises(VerifyException) as info:
        tanh_gelu_module([4], "f32", "sigmoid")
    assert str(info.value) == ("graph.gelu: approximate must be 'tanh' or None (the exact erf "
                               "GeLU), not 'sigmoid'")


# ---- the gelu_tanh kernel on the device model ---------------------------------------------------

# the kernel against its definition, rounded once: test_kernels_pointwise.py
# (`test_gelu_kernels_are_their_definition_rounded_once`, beside the exact form's)


def test_gelu_tanh_has_gelus_abi():
    tanh, exact = KERNELS["gelu_tanh"], KERNELS["gelu"]
    assert (tanh.pointers, tanh.scalars, tanh.returns, tanh.status) == (
        exact.pointers, exact.scalars, exact.returns, exact.status)


def test_gelu_tanh_cycles_come_from_the_target_rates():
    out = fmt((16, 64), (4, 64), (4, 1), "f16")
    src = fmt((16, 64), (4, 64), (4, 1), "f32")
    elements = 4 * 64
    moved = -(-elements * 4 // T.vector_bytes_per_cycle)  # the wider (f32) width
    passes = -(-T.tanh_gelu_f32_passes * elements // T.vector_f32_lanes)
    expected = (T.kernel_call_cycles + moved + elements * T.tanh_cycles_per_element + passes)
    assert kernel_cycles("gelu_tanh", descriptors(out, src), 1, T) == expected
    assert kernel_cycles("gelu_tanh", descriptors(out, src), 1, T) != kernel_cycles(
        "gelu", descriptors(out, src), 1, T)


# ---- whole programs on 16 tiles -------------------------------------------------------------------

@pytest.mark.parametrize("dtype,np_dtype,tolerance", [("f32", np.float32, 1e-4),
                                                      ("f16", np.float16, 1e-2)])
def test_tanh_gelu_after_a_gemm_on_16_tiles(dtype, np_dtype, tolerance):
    g = GraphBuilder("mlp")
    x = g.input([64, 96], dtype, name="x")
    w = g.input([96, 64], dtype, name="w")
    g.output(g.gelu(x @ w, approximate="tanh"))
    xs = RNG.normal(0, 0.3, (64, 96)).astype(np_dtype)
    ws = RNG.normal(0, 0.3, (96, 64)).astype(np_dtype)
    result = compile_and_run(g.build(), tiles=16, inputs={"x": xs, "w": ws})
    assert result.passed, (result.max_abs_error, result.max_rel_error)
    assert result.summary["modeled_cycles"]["by_kernel"]["gelu_tanh"] > 0
    assert "gelu" not in result.summary["modeled_cycles"]["by_kernel"]
    got = result.outputs["result0"].astype(np.float64)
    product = xs.astype(np.float64) @ ws.astype(np.float64)
    want = formula(product)
    scale = np.max(np.abs(want))
    assert np.max(np.abs(got - want)) <= tolerance * scale
    if dtype == "f32":  # f32 resolves the two forms: the tanh form is what ran
        assert np.max(np.abs(got - gelu(product))) > 10 * np.max(np.abs(got - want))
