"""The examples' reference results, recomputed with plain NumPy written from the dialect's
documented semantics (not from interpreters/graph.py): explicit softmax, `math.erf` GeLU,
`np.matmul`, float64 arithmetic with every op's result rounded to its declared type."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from xdsl.parser import Parser

from interpreters.graph import find_function, run_function
from tools.ipu_run import random_inputs
from tools.registry import make_context

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str):
    ctx = make_context()
    module = Parser(ctx, (EXAMPLES / name).read_text(), name).parse_module()
    module.verify()
    return module


def gelu(x: np.ndarray) -> np.ndarray:
    erf = np.array([math.erf(v / math.sqrt(2.0)) for v in x.ravel()]).reshape(x.shape)
    return 0.5 * x * (1.0 + erf)


def causal_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    seq, head_dim = q.shape[-2], q.shape[-1]
    logits = np.matmul(q, np.swapaxes(k, -1, -2)) / math.sqrt(head_dim)
    out = np.empty_like(q)
    for i in range(seq):  # query i sees keys 0..i
        row = logits[..., i, : i + 1]
        weights = np.exp(row - row.max(axis=-1, keepdims=True))
        weights = weights / weights.sum(axis=-1, keepdims=True)
        out[..., i, :] = np.matmul(weights[..., None, :], v[..., : i + 1, :])[..., 0, :]
    return out


def test_transformer_block_matches_numpy():
    module = load("transformer_block.mlir")
    inputs = random_inputs(find_function(module), seed=11)
    (got,) = run_function(module, inputs)

    def h16(v):  # every graph value is stored as f16
        return np.asarray(v, np.float64).astype(np.float16).astype(np.float64)

    x, wq0, wk0, wv0, wo0, wq1, wk1, wv1, wo1, bo, w1, b1, w2, b2 = (
        np.asarray(a, np.float64) for a in inputs)
    heads = []
    for wq, wk, wv, wo in ((wq0, wk0, wv0, wo0), (wq1, wk1, wv1, wo1)):
        q, k, v = h16(np.matmul(x, wq)), h16(np.matmul(x, wk)), h16(np.matmul(x, wv))
        heads.append(h16(np.matmul(h16(causal_attention(q, k, v)), wo)))
    attn = h16(h16(heads[0] + heads[1]) + bo)
    h = h16(x + attn)
    act = h16(gelu(h16(h16(np.matmul(h, w1)) + b1)))
    want = h16(h + h16(h16(np.matmul(act, w2)) + b2))

    assert got.dtype == np.float16 and got.shape == (1, 64, 128)
    # same rounding points; only float64 summation order differs, which can move an
    # intermediate by one f16 ulp
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=1e-2 * np.abs(want).max())
    assert np.abs(want).max() > 0.1


def test_repeat_layers_matches_numpy():
    module = load("repeat_layers.mlir")
    inputs = random_inputs(find_function(module), seed=12)
    (got,) = run_function(module, inputs)

    def r32(v):
        return np.asarray(v, np.float64).astype(np.float32).astype(np.float64)

    x, bias, ws = (np.asarray(a, np.float64) for a in inputs)
    for i in range(4):  # x <- x + gelu(x @ W_i + b)
        y = r32(np.matmul(x, ws[i]))
        x = r32(x + r32(gelu(r32(y + bias))))

    assert got.dtype == np.float32 and got.shape == (64, 128)
    np.testing.assert_allclose(got.astype(np.float64), x, rtol=1e-5, atol=1e-5)
    # four layers changed the input: the loop ran, not just the first iteration
    assert not np.allclose(x, np.asarray(inputs[0], np.float64), atol=1e-3)
