"""GraphBuilder builds verified modules whose text round-trips; bad shapes fail at the call."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import TensorType
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from frontend.builder import GraphBuilder, f8, f16
from ipu_dialects.graph import AttentionOp, GemmOp, RepeatOp
from tools.registry import make_context


def reparse(text: str):
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def test_block_example_from_docstring():
    g = GraphBuilder("block")
    x = g.input([128, 768], f16, name="x")
    w = g.input([768, 768], f16, name="w")
    y = g.gelu(g.gemm(x, w))
    g.output(y)
    module = g.build()
    text = str(module)
    assert "func.func @block(%x: tensor<128x768xf16>, %w: tensor<768x768xf16>) -> tensor<128x768xf16>" in text
    assert "graph.gemm %x, %w : (tensor<128x768xf16>, tensor<768x768xf16>) -> tensor<128x768xf16>" in text
    assert str(reparse(text)) == text


def test_gemm_builder_infers_broadcast_result_and_flags():
    g = GraphBuilder("f")
    a = g.input([2, 1, 128, 64])
    e = g.input([3, 32, 64])
    d = g.gemm(a, e, transpose_rhs=True)
    assert isinstance(d.type, TensorType) and d.type.get_shape() == (2, 3, 128, 32)
    op = d.value.owner
    assert isinstance(op, GemmOp)
    assert op.transpose_rhs is not None and op.transpose_lhs is None


def test_fp8_scale_and_repeat_round_trip():
    g = GraphBuilder("layers")
    x = g.input([4, 8], f8, name="x", scale=-3)
    ws = g.input([3, 8, 8], f8, name="ws", scale=-3)
    b = g.input([8], f8, name="b", scale=-3)

    assert str(x.type) == "tensor<4x8xf8E4M3FNUZ, #graph.fp8_scale<-3>>"

    def layer(carried, invariants, slices):
        (h,), (bias,), (w,) = carried, invariants, slices
        return [g.add(g.gemm(h, w), bias)]  # inferred result type has scale 0, not -3

    with pytest.raises(VerifyException, match="graph.yield value #0 has type"):
        g.repeat(3, layer, carried=[x], invariant=[b], sequence=[ws])

    g2 = GraphBuilder("layers")
    x = g2.input([4, 8], name="x")
    ws = g2.input([3, 8, 8], name="ws")
    (out,) = g2.repeat(3, lambda c, i, s: [g2.gemm(c[0], s[0])], carried=[x], sequence=[ws])
    g2.output(out)
    text = str(g2.build())
    assert "graph.repeat 3 carried(%x_1 = %x : tensor<4x8xf32>) sequence(%ws_1 = %ws : tensor<3x8x8xf32>)" in text
    assert isinstance(out.value.owner, RepeatOp)
    assert str(reparse(text)) == text


def test_attention_builder_default_and_explicit_scale():
    g = GraphBuilder("f")
    q = g.input([2, 16, 8])
    kv = g.input([2, 32, 8])
    plain = g.attention(q, kv, kv)
    scaled = g.attention(q, q, q, causal=True, scale=0.25)
    assert isinstance(plain.value.owner, AttentionOp) and plain.value.owner.effective_scale() == pytest.approx(8**-0.5, rel=1e-15)
    assert isinstance(scaled.value.owner, AttentionOp) and scaled.value.owner.effective_scale() == 0.25
    with pytest.raises(VerifyException, match="causal attention needs equal sequence lengths"):
        g.attention(q, kv, kv, causal=True)


def test_shape_errors_surface_at_the_call():
    g = GraphBuilder("f")
    a = g.input([4, 8])
    with pytest.raises(VerifyException, match=r"contraction extents differ: lhs \[4, 8\]"):
        g.gemm(a, g.input([6, 4]))
    with pytest.raises(VerifyException, match=r"do not broadcast: extents 8 and 3"):
        g.add(a, g.input([3]))
    with pytest.raises(BuilderTypeError, match="add rhs %arg0 cannot be used here: it was "
                                               "defined outside this repeat body"):
        g.repeat(2, lambda c, i, s: [g.add(c[0], a)], carried=[a])
    with pytest.raises(VerifyException, match="has no outputs"):
        g.build()


# ---- bad builder calls fail at the call, naming what is wrong --------------------------------

from xdsl.dialects.builtin import f32, i32  # noqa: E402

from frontend.builder import BuilderTypeError  # noqa: E402


@pytest.mark.parametrize("call,error,message", [
    (lambda g: g.input([-1, 4]), VerifyException, r"shape \[-1, 4\]: every extent must be >= 1"),
    (lambda g: g.input([0, 4]), VerifyException, r"shape \[0, 4\]: every extent must be >= 1"),
    (lambda g: g.input([4], i32, name="n"), VerifyException,
     "GraphBuilder.input: input n has element type i32; graph tensors are f32, f16 or f8E4M3FNUZ"),
    (lambda g: g.input([4], f16, name="h", scale=2), VerifyException,
     "input h has an FP8 scale but element type f16; only f8E4M3FNUZ tensors are scaled"),
    (lambda g: g.input([4], f8, scale=99), VerifyException,
     r"#graph.fp8_scale: exponent 99 is outside -31..31"),
    (lambda g: g.input([2.5]), BuilderTypeError, r"shape must be a sequence of ints, got \[2.5\]"),
    (lambda g: g.input([4], object()), BuilderTypeError, "element type must be f32, f16 or f8"),
])
def test_bad_input_is_rejected_at_the_call(call, error, message):
    g = GraphBuilder("f")
    with pytest.raises(error, match=message):
        call(g)
    assert not g.entry.args  # nothing was added


@pytest.mark.parametrize("op", ["gemm", "add"])
def test_mixed_element_types_are_rejected_at_the_call(op):
    g = GraphBuilder("f")
    a, b = g.input([4, 4], f32), g.input([4, 4], f16)
    with pytest.raises(VerifyException, match=f"graph.{op}: rhs element type f16 differs from "
                                              "lhs element type f32"):
        getattr(g, op)(a, b)
    assert not g.entry.ops  # the rejected op was not inserted
    assert not a.value.uses and not b.value.uses  # nor left as a use of its operands


def test_non_value_operands_are_type_errors():
    g = GraphBuilder("f")
    x = g.input([4])
    with pytest.raises(BuilderTypeError, match=r"gelu input must be a value .* got \[1, 2\]"):
        g.gelu([1, 2])
    with pytest.raises(BuilderTypeError, match="add rhs must be a value .* got 3"):
        g.add(x, 3)
    with pytest.raises(BuilderTypeError, match="output #0 must be a value .* got 'x'"):
        g.output("x")


def test_repeat_count_and_body_result_are_checked():
    g = GraphBuilder("f")
    x = g.input([4])
    with pytest.raises(BuilderTypeError, match="repeat count must be an int, got 2.5"):
        g.repeat(2.5, lambda c, i, s: c, carried=[x])
    with pytest.raises(BuilderTypeError, match="a repeat body must return a list of the next "
                                               "carried values, got None"):
        g.repeat(2, lambda c, i, s: None, carried=[x])
    with pytest.raises(VerifyException, match="graph.repeat: iteration count must be at least 1"):
        g.repeat(0, lambda c, i, s: list(c), carried=[x])
    assert not g.entry.ops and len(g.blocks) == 1  # failed repeats leave the graph unchanged
    (y,) = g.repeat(2, lambda c, i, s: [g.gelu(c[0])], carried=[x])
    g.output(y)
    assert "graph.repeat 2 carried" in str(g.build())


def test_build_twice_is_an_error():
    g = GraphBuilder("f")
    g.output(g.gelu(g.input([4])))
    g.build()
    with pytest.raises(BuilderTypeError, match="graph @f was already built"):
        g.build()
    with pytest.raises(BuilderTypeError, match="graph @f was already built"):
        g.gelu(g.entry.args[0])


def test_op_constructor_on_a_non_tensor_names_the_operand():
    """The ops' own builders check operand types before xDSL's constraints do."""
    from xdsl.ir import Block

    block = Block(arg_types=[f32, TensorType(f32, [4, 4])])
    with pytest.raises(VerifyException, match="graph.gemm: lhs must be a ranked tensor, got f32"):
        GemmOp(block.args[0], block.args[1])


def built(g: GraphBuilder) -> GraphBuilder:
    x = g.input([4], f32)
    g.output(g.gelu(x))
    g.build()
    return g


@pytest.mark.parametrize("call,message", [
    (lambda g: g.input([4], 3),
     "element type must be f32, f16 or f8 (an xDSL type, NumPy dtype or name), got 3"),
    (lambda g: g.input([4], f8, scale=1.5), "scale must be an int exponent, got 1.5"),
    (lambda g: g.gelu([1, 2]),
     "gelu input must be a value returned by input() or an op method, got [1, 2]"),
    (lambda g: built(g).build(), "graph @f was already built: build() once per builder"),
    (lambda g: built(g).gelu(g.entry.args[0]), "graph @f was already built: no ops can be added"),
])
def test_builder_type_errors_say_what_to_pass(call, message):
    with pytest.raises(BuilderTypeError) as info:
        call(GraphBuilder("f"))
    assert str(info.value) == message


# ---- scoping: a value is usable only in the region that defines it ---------------------------


def test_a_repeat_body_value_cannot_be_used_after_the_repeat():
    """It used to build a 'verified' module that the interpreter then failed on (KeyError)."""
    g = GraphBuilder("f")
    x = g.input([2])
    leaked = []

    def body(carried, invariants, slices):
        leaked.append(g.gelu(carried[0]))
        return [leaked[-1]]

    (r,) = g.repeat(2, body, carried=[x])
    with pytest.raises(BuilderTypeError) as info:
        g.add(r, leaked[0])
    assert str(info.value) == (
        "add rhs %gelu1 cannot be used here: it was defined inside the body of graph.repeat "
        "%repeat2; it exists only there: return it as a carried value to use it after the repeat"
    )
    with pytest.raises(BuilderTypeError, match="output #0 %gelu1 cannot be used here"):
        g.output(leaked[0])
    g.output(g.add(r, r))  # the repeat's own result is fine
    assert "graph.repeat" in str(g.build())


def test_a_value_of_another_builder_is_rejected_at_the_call():
    g, h = GraphBuilder("f"), GraphBuilder("h")
    x, y = g.input([2]), h.input([2], name="y")
    with pytest.raises(BuilderTypeError) as info:
        g.add(x, y)
    assert str(info.value) == (
        "add rhs %y cannot be used here: it was defined by another GraphBuilder or in a repeat "
        "body that failed to build"
    )
    h.output(y)
    h.build()
    with pytest.raises(BuilderTypeError, match="gelu input %y cannot be used here: it was "
                                               "defined in another function, @h"):
        g.gelu(y)


# ---- argument checking: every bad argument is named at the call -------------------------------


from frontend.builder import BuilderValueError  # noqa: E402


def one_value(g: GraphBuilder, shape=(1, 2, 2)):
    return g.input(list(shape))


@pytest.mark.parametrize("call,error,message", [
    (lambda g: g.attention(*[one_value(g)] * 3, scale="0.5"), BuilderTypeError,
     "attention scale must be a number (or None for 1/sqrt(head_dim)), got '0.5'"),
    (lambda g: g.attention(*[one_value(g)] * 3, causal="yes"), BuilderTypeError,
     "attention causal must be True or False, got 'yes'"),
    (lambda g: g.gemm(one_value(g, [2, 2]), one_value(g, [2, 2]), transpose_lhs="no"),
     BuilderTypeError, "gemm transpose_lhs must be True or False, got 'no'"),
    (lambda g: g.gemm(one_value(g, [2, 2]), one_value(g, [2, 2]), transpose_rhs=1),
     BuilderTypeError, "gemm transpose_rhs must be True or False, got 1"),
    (lambda g: g.repeat(2, lambda c, i, s: list(c), carried=g.input([2], name="x")),
     BuilderTypeError, "repeat carried must be a list or tuple of values, got "
                       "<GraphValue %x: tensor<2xf32>>"),
    (lambda g: g.repeat(2, lambda c, i, s: [], invariant="x"), BuilderTypeError,
     "repeat invariant must be a list or tuple of values, got 'x'"),
    (lambda g: g.repeat(2, "notcallable", carried=[g.input([2])]), BuilderTypeError,
     "repeat body must be a function (carried, invariants, slices) -> next carried, "
     "got 'notcallable'"),
    (lambda g: g.input([2], name="1 bad"), BuilderValueError,
     "input name '1 bad' is not an SSA value name: use letters, digits and _$.- and do not "
     "start with a digit"),
    (lambda g: g.input([2], name=7), BuilderTypeError, "input name must be a str, got 7"),
])
def test_bad_arguments_are_named_at_the_call(call, error, message):
    g = GraphBuilder("f")
    with pytest.raises(error) as info:
        call(g)
    assert str(info.value) == message
    assert not g.entry.ops and len(g.blocks) == 1  # nothing was added


def test_an_invalid_input_name_adds_no_argument():
    g = GraphBuilder("f")
    with pytest.raises(BuilderValueError):
        g.input([2], name="has space")
    assert not g.entry.args


def test_attention_scale_accepts_ints_and_floats():
    g = GraphBuilder("f")
    q = one_value(g)
    op = g.attention(q, q, q, scale=2).value.owner
    assert isinstance(op, AttentionOp) and op.effective_scale() == 2.0


@pytest.mark.parametrize("name,error,message", [
    (3, BuilderTypeError, "GraphBuilder function name must be a str, got 3"),
    ("", BuilderValueError, "GraphBuilder function name must not be empty"),
])
def test_the_function_name_is_checked_at_construction(name, error, message):
    with pytest.raises(error) as info:
        GraphBuilder(name)
    assert str(info.value) == message


# ---- FP8 result scales ------------------------------------------------------------------------


def test_fp8_results_take_a_declared_scale():
    from ipu_dialects.graph import fp8_scale

    g = GraphBuilder("f")
    a, b = g.input([4], f8, scale=-3), g.input([4], f8, scale=4)
    m, n = g.input([2, 2], f8), g.input([2, 2], f8)
    q = g.input([1, 2, 2], f8)
    results = {
        "add": (g.add(a, b, scale=2), 2),
        "gelu": (g.gelu(a, scale=-5), -5),
        "gemm": (g.gemm(m, n, transpose_rhs=True, scale=1), 1),
        "attention": (g.attention(q, q, q, causal=True, result_scale=-2), -2),
        "unscaled": (g.add(a, b), 0),
    }
    for what, (value, scale) in results.items():
        assert fp8_scale(value.type) == scale, what
    assert results["gemm"][0].value.owner.transpose_rhs is not None  # properties kept
    assert len(list(a.value.uses)) == 3 and len(list(b.value.uses)) == 2  # the unscaled first build left no uses
    g.output(*(v for v, _ in results.values()))
    text = str(g.build())
    assert "-> tensor<4xf8E4M3FNUZ, #graph.fp8_scale<2>>" in text
    assert "graph.gemm %arg2, %arg3 transpose_rhs" in text
    reparse(text)


@pytest.mark.parametrize("call,error,message", [
    (lambda g, x: g.add(x, x, scale=2), VerifyException,
     "graph.add: result has an FP8 scale but element type f32; only f8E4M3FNUZ tensors are "
     "scaled"),
    (lambda g, x: g.gelu(g.input([2], f16), scale=1), VerifyException,
     "graph.gelu: result has an FP8 scale but element type f16; only f8E4M3FNUZ tensors are "
     "scaled"),
    (lambda g, x: g.gelu(g.input([2], f8), scale=1.5), BuilderTypeError,
     "graph.gelu scale must be an int exponent, got 1.5"),
    (lambda g, x: g.gelu(g.input([2], f8), scale=40), VerifyException,
     "#graph.fp8_scale: exponent 40 is outside -31..31"),
])
def test_a_result_scale_is_checked(call, error, message):
    g = GraphBuilder("f")
    x = g.input([2])
    with pytest.raises(error) as info:
        call(g, x)
    assert message in str(info.value)
    assert not g.entry.ops and not x.value.uses


def test_the_interpreter_rounds_a_scaled_fp8_result_to_its_scale():
    """add of scale -3 and scale 4 operands into a scale-3 result: the sum ~1000 saturates at
    240 unscaled but is representable with scale 3 (stored q = value / 8)."""
    import numpy as np

    from device.layouts import round_to_fp8
    from interpreters.graph import FP8, run_function

    g = GraphBuilder("f")
    a, b = g.input([4], f8, scale=-3), g.input([4], f8, scale=4)
    g.output(g.add(a, b, scale=3), g.add(a, b))
    module = g.build()
    qa = np.array([1.0, -3.0, 0.5, 7.0]).astype(FP8)
    qb = np.array([60.0, -56.0, 0.0, 1.0]).astype(FP8)
    scaled, unscaled = run_function(module, [qa, qb])
    values = qa.astype(np.float64) * 2.0**-3 + qb.astype(np.float64) * 2.0**4
    assert scaled.dtype == FP8
    np.testing.assert_array_equal(scaled.astype(np.float64),
                                  round_to_fp8(values / 2.0**3).astype(np.float64))
    assert scaled.astype(np.float64)[0] * 8 > 900  # ~960 held, where unscaled saturates
    assert unscaled.astype(np.float64)[0] == 240.0
