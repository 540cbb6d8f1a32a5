"""GraphBuilder builds verified modules whose text round-trips; bad shapes fail at the call."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import TensorType
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from frontend.builder import GraphBuilder, f8, f16
from ipu_dialects import get_all_dialects
from ipu_dialects.graph import AttentionOp, GemmOp, RepeatOp


def reparse(text: str):
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
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
    op = d.owner
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
    assert isinstance(out.owner, RepeatOp)
    assert str(reparse(text)) == text


def test_attention_builder_default_and_explicit_scale():
    g = GraphBuilder("f")
    q = g.input([2, 16, 8])
    kv = g.input([2, 32, 8])
    plain = g.attention(q, kv, kv)
    scaled = g.attention(q, q, q, causal=True, scale=0.25)
    assert isinstance(plain.owner, AttentionOp) and plain.owner.effective_scale() == pytest.approx(8**-0.5, rel=1e-15)
    assert isinstance(scaled.owner, AttentionOp) and scaled.owner.effective_scale() == 0.25
    with pytest.raises(VerifyException, match="causal attention needs equal sequence lengths"):
        g.attention(q, kv, kv, causal=True)


def test_shape_errors_surface_at_the_call():
    g = GraphBuilder("f")
    a = g.input([4, 8])
    with pytest.raises(VerifyException, match=r"contraction extents differ: lhs \[4, 8\]"):
        g.gemm(a, g.input([6, 4]))
    with pytest.raises(VerifyException, match=r"do not broadcast: extents 8 and 3"):
        g.add(a, g.input([3]))
    with pytest.raises(VerifyException, match="uses a value defined outside the repeat"):
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
    (lambda g: g.input([4], "f32"), BuilderTypeError, "element type must be f32, f16 or f8"),
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
    (lambda g: g.input([4], "f32"), "element type must be f32, f16 or f8, got 'f32'"),
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
