"""graph.layer_norm and the layout ops: builder calls, their errors, and reference semantics."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

from frontend.builder import BuilderTypeError, GraphBuilder, f8, f16, f32
from interpreters.graph import run_function


def run(g: GraphBuilder, *arrays: np.ndarray) -> np.ndarray:
    return run_function(g.build(), list(arrays))[0]


def test_layer_norm_matches_numpy_over_the_last_axis() -> None:
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(2, 5, 16)), rng.normal(size=16), rng.normal(size=16)
    g = GraphBuilder("ln")
    out = g.layer_norm(g.input([2, 5, 16]), g.input([16], name="w"), g.input([16], name="b"), 1e-3)
    g.output(out)
    got = run(g, x, w, b)
    x, w, b = (a.astype(np.float32).astype(np.float64) for a in (x, w, b))
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-3) * w + b
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_layout_ops_match_numpy() -> None:
    x = np.arange(2 * 3 * 8, dtype=np.float32).reshape(2, 3, 8)
    g = GraphBuilder("layout")
    a = g.input([2, 3, 8], name="x")
    r = g.reshape(a, [6, 8])
    t = g.transpose(r, [1, 0])
    s = g.slice(t, [1, 0], [8, 5], [3, 2])
    c = g.concat([s, g.slice(t, [0, 0], [3, 6])], 1)
    g.output(c)
    t_np = x.reshape(6, 8).T
    want = np.concatenate([t_np[1:8:3, 0:5:2], t_np[0:3, 0:6]], axis=1)
    np.testing.assert_array_equal(run(g, x), want)


def test_layout_ops_keep_the_fp8_scale_of_their_input() -> None:
    g = GraphBuilder("fp8")
    x = g.input([4, 4], f8, scale=-3)
    for value in (g.reshape(x, [16]), g.transpose(x, [1, 0]), g.slice(x, [0, 0], [2, 4]),
                  g.concat([x, x], 0)):
        assert value.type.get_element_type() == f8
        assert value.type.encoding == x.type.encoding


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda g, x: g.layer_norm(x, x, x, "tiny"), "layer_norm eps must be a number, got 'tiny'"),
        (lambda g, x: g.reshape(x, "4x8"), "reshape shape must be a sequence of ints, got '4x8'"),
        (lambda g, x: g.transpose(x, [1.0, 0]), "transpose permutation must be a sequence of ints"),
        (lambda g, x: g.slice(x, [0, 0], 8), "slice ends must be a sequence of ints, got 8"),
        (lambda g, x: g.slice(x, [0, 0], [4, 8], [True, 1]), "slice steps must be a sequence"),
        (lambda g, x: g.concat(x, 0), "concat values must be a list or tuple of values, got"),
        (lambda g, x: g.concat([x], 0.0), "concat axis must be an int, got 0.0"),
        (lambda g, x: g.concat([x, [1]], 0), "concat input #1 must be a value returned by"),
    ],
)
def test_builder_type_errors_name_the_argument(call, message) -> None:
    g = GraphBuilder("bad")
    x = g.input([4, 8])
    with pytest.raises(BuilderTypeError, match=message):
        call(g, x)


def test_builder_value_errors_are_the_verifier_messages() -> None:
    g = GraphBuilder("bad")
    x = g.input([4, 8], f16)
    with pytest.raises(VerifyException, match=r"result shape \[5\] holds 5 elements"):
        g.reshape(x, [5])
    with pytest.raises(VerifyException, match="is not a permutation of the 2 axes"):
        g.transpose(x, [0, 0])
    with pytest.raises(VerifyException, match=r"axis 1 takes \[0, 9\) of extent 8"):
        g.slice(x, [0, 0], [4, 9])
    with pytest.raises(VerifyException, match="only the concatenation axis 0 may differ"):
        g.concat([x, g.input([4, 7], f16)], 0)
    w = g.input([8], f32)
    with pytest.raises(VerifyException, match="weight element type f32 differs"):
        g.layer_norm(x, w, w)
    g.output(g.layer_norm(x, g.input([8], f16), g.input([8], f16)))
    g.build()  # the rejected calls left the graph valid
