"""The ONNX importer: each mapped op against ONNX's own reference evaluator, the patterns, and
every diagnostic (one clear message naming the node, never a partial graph)."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx_models import attention_model, constant, model, tensor
from xdsl.dialects.func import FuncOp

from frontend.onnx import OnnxImportError, import_onnx
from frontend.onnx.importer import INFERENCE_ELEMENTS, weightless
from frontend.onnx.patterns import causal_mask_kind
from interpreters.graph import input_names, run_function


def run_imported(onnx_model: onnx.ModelProto, feeds: dict[str, np.ndarray], dtype="f32"):
    imported = import_onnx(onnx_model, dtype)
    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    arrays = [feeds[n] if n in feeds else imported.weights[n] for n in input_names(func)]
    return imported, run_function(imported.module, arrays)


def check_against_onnx(onnx_model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol=1e-5):
    imported, got = run_imported(onnx_model, feeds)
    want = ReferenceEvaluator(onnx_model).run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)
    return imported


def ops_of(imported) -> list[str]:
    return [op.name for op in imported.module.walk() if op.name.startswith("graph.")]


RNG = np.random.default_rng(7)


def rand(*shape) -> np.ndarray:
    return RNG.uniform(-1, 1, shape).astype(np.float32)


# -- single ops -----------------------------------------------------------------------------


def test_matmul_and_add_with_initializers_become_named_weights() -> None:
    m = model(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
         helper.make_node("Add", ["h", "b"], ["y"], name="add")],
        [tensor("x", [2, 3, 4])], ["y"], {"w": rand(4, 5), "b": rand(5)},
    )
    imported = check_against_onnx(m, {"x": rand(2, 3, 4)})
    assert ops_of(imported) == ["graph.gemm", "graph.add"]
    assert sorted(imported.weights) == ["b", "w"]


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_on_constants_folds(fmod) -> None:
    """ONNX Mod of constants (the TorchScript export of TransformerEncoderLayer computes a
    head count with it), either sign rule, folds as ONNX's reference evaluates it."""
    a = np.array([[-5.0, 7.0, 3.0], [4.0, -2.0, 9.0]], np.float32)
    b = np.array([3.0, -4.0, 2.0], np.float32)
    m = model([constant("a", a), constant("b", b),
               helper.make_node("Mod", ["a", "b"], ["r"], name="mod", fmod=fmod),
               helper.make_node("Add", ["x", "r"], ["y"], name="add")],
              [tensor("x", [2, 3])], ["y"])
    imported = check_against_onnx(m, {"x": rand(2, 3)})
    assert ops_of(imported) == ["graph.add"]


def test_gemm_transb_of_a_constant_stores_the_weight_transposed() -> None:
    """Gemm(transB=1) by an initializer (how the dynamo exporter writes some projections) is a
    plain gemm by the [K, N] weight, as from_torch stores a linear's: the same graph by both."""
    m = model([helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="gemm", transB=1)],
              [tensor("x", [4, 3])], ["y"], {"w": rand(5, 3), "c": rand(5)})
    imported = check_against_onnx(m, {"x": rand(4, 3)})
    assert "transpose_rhs" not in str(imported.module)
    assert imported.weights["w.t"].shape == (3, 5)


def test_gemm_with_transposes_and_bias() -> None:
    m = model(
        [helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="gemm", transA=1, transB=1)],
        [tensor("x", [4, 3])], ["y"], {"w": rand(5, 4), "c": rand(5)},
    )
    imported = check_against_onnx(m, {"x": rand(4, 3)})
    assert ops_of(imported) == ["graph.gemm", "graph.add"]


def test_layer_norm_with_and_without_bias() -> None:
    m = model(
        [helper.make_node("LayerNormalization", ["x", "s", "b"], ["h"], name="ln1", epsilon=1e-3),
         helper.make_node("LayerNormalization", ["h", "s"], ["y"], name="ln2")],
        [tensor("x", [2, 8])], ["y"], {"s": rand(8) + 1, "b": rand(8)},
    )
    imported = check_against_onnx(m, {"x": rand(2, 8)})
    assert ops_of(imported) == ["graph.layer_norm", "graph.layer_norm"]


def test_gelu_op_and_both_erf_forms() -> None:
    sqrt2 = np.float32(math.sqrt(2.0))
    nodes = [
        helper.make_node("Gelu", ["x"], ["g0"], name="gelu"),
        # (x * (1 + erf(x / sqrt2))) * 0.5, as torch.onnx.export writes it
        constant("sqrt2", sqrt2), constant("one", np.float32(1)), constant("half", np.float32(.5)),
        helper.make_node("Div", ["g0", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["a"]),
        helper.make_node("Mul", ["g0", "a"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["g1"]),
        # (x * 0.5) * (1 + erf(x * (1 / sqrt2)))
        constant("inv", np.float32(1 / math.sqrt(2.0))),
        helper.make_node("Mul", ["g1", "inv"], ["d2"]),
        helper.make_node("Erf", ["d2"], ["e2"]),
        helper.make_node("Add", ["one", "e2"], ["a2"]),
        helper.make_node("Mul", ["half", "g1"], ["h2"]),
        helper.make_node("Mul", ["h2", "a2"], ["y"]),
    ]
    m = model(nodes, [tensor("x", [3, 8])], ["y"], opset=20)
    imported = check_against_onnx(m, {"x": rand(3, 8) * 3})
    assert ops_of(imported) == ["graph.gelu", "graph.gelu", "graph.gelu"]


def test_layout_ops() -> None:
    nodes = [
        constant("shape", np.array([0, -1, 2], np.int64)),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),  # [2, 12] -> [2, 6, 2]
        helper.make_node("Transpose", ["r"], ["t"]),  # default: reversed axes -> [2, 6, 2]
        constant("split", np.array([2, 4], np.int64)),
        helper.make_node("Split", ["t", "split"], ["s0", "s1"], axis=1),
        constant("starts", np.array([-3, 0], np.int64)),
        constant("ends", np.array([100, 2], np.int64)),
        constant("axes", np.array([1, -1], np.int64)),
        constant("steps", np.array([2, 1], np.int64)),
        helper.make_node("Slice", ["s1", "starts", "ends", "axes", "steps"], ["sl"]),
        helper.make_node("Concat", ["s0", "sl", "s0"], ["c"], axis=-2),
        helper.make_node("Identity", ["c"], ["i"]),
        helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT),
    ]
    m = model(nodes, [tensor("x", [2, 12])], ["y"])
    imported = check_against_onnx(m, {"x": rand(2, 12)}, rtol=0)
    assert "graph.concat" in ops_of(imported) and "graph.reshape" in ops_of(imported)


def test_split_into_equal_parts_by_output_count() -> None:
    m = model([helper.make_node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3)],
              [tensor("x", [7, 2])], ["a", "b", "c"], opset=18)
    check_against_onnx(m, {"x": rand(7, 2)}, rtol=0)


def test_f16_import_converts_weights_and_types() -> None:
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"])], [tensor("x", [2, 4])], ["y"],
              {"w": rand(4, 3)})
    imported, (y,) = run_imported(m, {"x": rand(2, 4)}, dtype="f16")
    assert imported.weights["w"].dtype == np.float16 and y.dtype == np.float16
    assert "tensor<2x4xf16>" in str(imported.module)


def test_constant_feeding_a_graph_op_becomes_a_weight_named_after_its_value() -> None:
    m = model([constant("c", rand(4)), helper.make_node("Add", ["x", "c"], ["y"])],
              [tensor("x", [2, 4])], ["y"])
    imported = check_against_onnx(m, {"x": rand(2, 4)})
    assert list(imported.weights) == ["c"]


# -- attention -------------------------------------------------------------------------------


def test_attention_with_causal_mask() -> None:
    mask = np.triu(np.full((8, 8), -np.inf, np.float32), k=1)
    imported = check_against_onnx(attention_model(mask), {n: rand(1, 2, 8, 4) for n in "qkv"})
    (attention,) = [op for op in imported.module.walk() if op.name == "graph.attention"]
    assert attention.causal is not None and attention.scale is not None  # 0.125 != 1/sqrt(4)
    assert ops_of(imported) == ["graph.attention"]  # Kᵀ's transpose folded into K


def test_attention_without_mask_and_with_zero_mask_and_default_scale() -> None:
    feeds = {n: rand(1, 2, 8, 4) for n in "qkv"}
    for mask in (None, np.zeros((8, 8))):
        imported = check_against_onnx(attention_model(mask, scale=0.5), feeds)
        (attention,) = [op for op in imported.module.walk() if op.name == "graph.attention"]
        assert attention.causal is None and attention.scale is None  # 0.5 = 1/sqrt(4)


def test_causal_mask_kinds_without_broadcasting_the_leading_axes() -> None:
    logits = (2, 3, 8, 8)
    causal = np.triu(np.full((8, 8), -np.inf, np.float32), k=1)
    assert causal_mask_kind(causal, logits) == "causal"
    assert causal_mask_kind(np.stack([causal, causal])[:, None], logits) == "causal"
    assert causal_mask_kind(np.zeros((1, 1, 8, 8)), logits) == "none"
    other = causal.copy()
    other[0, 1] = 0.0  # one batch's mask lets the first query see a future key
    assert causal_mask_kind(np.stack([causal, other])[:, None], logits) == "general"
    assert causal_mask_kind(np.zeros((3, 8, 8)) + causal, logits) == "causal"  # 3 = heads
    assert causal_mask_kind(np.zeros((4, 8, 8)) + causal, logits) == "general"  # not 1, not 3
    assert causal_mask_kind(np.zeros((2, 3, 1, 8, 8)) + causal, logits) == "general"  # rank 5
    assert causal_mask_kind(causal[:1], logits) == "general"  # [1, 8]: the same row for each query


def test_shape_inference_sees_the_shapes_of_large_weights_only() -> None:
    """A Shape of a product by a large weight folds: the weight is a typed graph input of the
    model shape inference runs on (which holds no large initializer), its shape known."""
    width = INFERENCE_ELEMENTS // 16 + 1  # [16, width]: one element more than the bound
    nodes = [helper.make_node("MatMul", ["x", "a"], ["h"]),
             helper.make_node("MatMul", ["h", "b"], ["g"]),
             helper.make_node("Shape", ["g"], ["s"]),
             helper.make_node("Reshape", ["g", "s"], ["y"])]
    m = model(nodes, [tensor("x", [4, 16])], ["y"], {"a": rand(16, 16), "b": rand(16, width)})
    inferred = weightless(m)
    assert [t.name for t in inferred.graph.initializer] == ["a"]
    (b,) = [i for i in inferred.graph.input if i.name == "b"]
    assert [d.dim_value for d in b.type.tensor_type.shape.dim] == [16, width]
    imported = check_against_onnx(m, {"x": rand(4, 16)}, rtol=1e-4)
    # the Reshape to the folded Shape of its own input is the identity: no graph.reshape (an
    # unfolded Shape would make the Reshape's target a run-time tensor, which is refused)
    assert set(imported.weights) == {"a", "b"} and ops_of(imported).count("graph.reshape") == 0
    small = model(nodes, [tensor("x", [4, 16])], ["y"], {"a": rand(16, 16), "b": rand(16, 8)})
    assert weightless(small) is small  # nothing large: the model itself


# -- diagnostics -----------------------------------------------------------------------------


def import_error(onnx_model: onnx.ModelProto) -> str:
    with pytest.raises(OnnxImportError) as info:
        import_onnx(onnx_model)
    return str(info.value)


def test_unsupported_op_names_node_index_and_type() -> None:
    m = model([helper.make_node("MatMul", ["x", "x"], ["h"], name="mm"),
               helper.make_node("Relu", ["h"], ["y"], name="act")], [tensor("x", [4, 4])], ["y"])
    assert import_error(m) == (
        "node #1 'act' (Relu): no graph op for ONNX Relu on tensors computed at run time; "
        "ipu-import maps MatMul, Gemm, Add, LayerNormalization, Gelu (and its Erf form), Reshape, "
        "Transpose, Split, Slice, Concat, Unsqueeze, Squeeze, Gather by constant indices and "
        "attention, and folds shape arithmetic on constants"
    )


def test_a_node_on_initializers_is_not_called_run_time() -> None:
    """A node reading only initializers that the importer cannot evaluate says so, rather than
    calling its inputs computed at run time."""
    m = model([helper.make_node("Cos", ["table"], ["g"], name="cos"),
               helper.make_node("Add", ["x", "g"], ["y"], name="add")],
              [tensor("x", [2, 3])], ["y"],
              {"table": np.arange(6, dtype=np.float32).reshape(2, 3)})
    message = import_error(m)
    assert message.startswith("node #0 'cos' (Cos): ONNX Cos on constants only ('table'), which "
                              "ipu-import cannot evaluate")
    assert "run time" not in message


def test_gather_elements_on_initializers_folds() -> None:
    """BertModel's token type ids, GatherElements of two initializers, fold to a constant."""
    table = np.arange(6, dtype=np.float32).reshape(2, 3)
    ids = np.array([[1, 0, 1], [0, 0, 1]], np.int64)
    m = model([helper.make_node("GatherElements", ["table", "ids"], ["g"], name="ge", axis=0),
               helper.make_node("Add", ["x", "g"], ["y"], name="add")],
              [tensor("x", [2, 3])], ["y"], {"table": table, "ids": ids})
    imported = check_against_onnx(m, {"x": rand(2, 3)})
    assert ops_of(imported) == ["graph.add"]


def test_unsqueeze_squeeze_and_constant_gather_on_computed_tensors() -> None:
    """The ops torch's dynamo exporter writes around TransformerEncoderLayer's fused Q, K, V:
    Unsqueeze, Squeeze and a Gather by a constant scalar index (torch's select)."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Unsqueeze", ["h", "axes0"], ["u"]),
             helper.make_node("Transpose", ["u"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Squeeze", ["t", "axes1"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["y"], axis=0),
             helper.make_node("Gather", ["s", "pair"], ["z"], axis=1)]
    m = model(nodes, [tensor("x", [3, 4]), tensor("w", [4, 5])], ["y", "z"],
              {"axes0": np.array([0], np.int64), "axes1": np.array([1], np.int64),
               "one": np.array(2, np.int64), "pair": np.array([4, 0], np.int64)})
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    imported = check_against_onnx(m, {"x": x, "w": w})
    assert set(ops_of(imported)) == {"graph.gemm", "graph.reshape", "graph.transpose",
                                     "graph.slice", "graph.concat"}


def test_a_batch_of_one_row_products_is_one_gemm() -> None:
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"])], [tensor("x", [6, 1, 4])], ["y"],
              {"w": np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)})
    x = np.random.default_rng(3).standard_normal((6, 1, 4)).astype(np.float32)
    imported = check_against_onnx(m, {"x": x})
    gemm = next(op for op in imported.module.walk() if op.name == "graph.gemm")
    assert gemm.operands[0].type.get_shape() == (6, 4)


@pytest.mark.parametrize(("node", "constants", "message"), [
    (helper.make_node("Squeeze", ["x", "a"], ["y"], name="s"), {"a": np.array([0], np.int64)},
     "node #0 's' (Squeeze): squeezes axis 0 of extent 4; only extent-1 axes can be squeezed"),
    (helper.make_node("Gather", ["x", "i"], ["y"], name="g"), {"i": np.zeros((1, 1), np.int64)},
     "node #0 'g' (Gather): indices of rank 2; ipu-import maps a Gather by a scalar or a 1-D "
     "constant index"),
    (helper.make_node("Gather", ["x", "i"], ["y"], name="g"), {"i": np.array(7, np.int64)},
     "node #0 'g' (Gather): index 7 is outside axis 0 of extent 4"),
])
def test_layout_node_refusals(node, constants, message) -> None:
    m = model([node], [tensor("x", [4, 3])], ["y"], constants, opset=13)
    assert import_error(m) == message


def test_expect_file_that_is_not_an_archive(tmp_path, capsys) -> None:
    from tools.ipu_run import run_main

    source = tmp_path / "g.mlir"
    source.write_text("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  func.return %x : tensor<4xf32>\n}\n")
    (tmp_path / "bad.npz").write_text("not an archive")
    assert run_main(source, reference=True, expect=tmp_path / "bad.npz", quiet=True) == 2
    assert f"--expect: cannot read '{tmp_path / 'bad.npz'}' as an .npz archive" in (
        capsys.readouterr().err)


def test_gather_by_computed_indices_is_refused_by_name() -> None:
    m = model([helper.make_node("Gather", ["x", "ids"], ["y"], name="embed")],
              [tensor("x", [4, 3]), tensor("ids", [2], TensorProto.INT64)], ["y"])
    with pytest.raises(OnnxImportError) as info:
        import_onnx(m)
    assert str(info.value) == (
        "node #0 'embed' (Gather): gathers from 'x', a tensor computed at run time, by indices "
        "computed at run time; graph.gather looks up rows of a constant table (an embedding)")


def test_op_of_another_domain_and_unnamed_node() -> None:
    m = model([helper.make_node("FusedThing", ["x"], ["y"], domain="com.example")],
              [tensor("x", [4])], ["y"])
    # the ONNX checker runs first (issue 25): a domain without an opset import is its to refuse
    assert import_error(m) == ("the ONNX checker refuses the model: No opset import for "
                               "domain 'com.example'")
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    assert import_error(m).startswith(
        "node #0 (FusedThing): no graph op for ONNX com.example.FusedThing")


@pytest.mark.parametrize(("dim", "shown"), [("batch", "('batch')"), (None, "(unknown)")])
def test_dynamic_input_shape(dim, shown) -> None:
    m = model([helper.make_node("Identity", ["x"], ["y"])], [tensor("x", [dim, 4])], ["y"])
    assert import_error(m) == (
        f"graph input 'x' has a dynamic extent {shown} at axis 0; ipu-import needs static "
        "shapes: export the model with fixed input sizes"
    )


def test_input_without_shape_or_of_integers() -> None:
    m = model([helper.make_node("Identity", ["x"], ["y"])],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)], ["y"])
    assert import_error(m) == (
        "graph input 'x' has no shape; ipu-import needs static shapes: export the model with "
        "fixed input sizes"
    )
    m = model([helper.make_node("Identity", ["x"], ["y"])], [tensor("x", [4], TensorProto.INT16)],
              ["y"])
    assert import_error(m) == (
        "graph input 'x' has element type INT16; graph tensors are floating point (f32 or f16), "
        "and integer inputs (INT32, INT64) are the indices of an embedding lookup"
    )


def test_reshape_to_a_shape_computed_at_run_time() -> None:
    m = model([helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
              [tensor("x", [4]), tensor("s", [1], TensorProto.INT64)], ["y"])
    assert import_error(m) == (  # an integer input is an index tensor, not a shape
        "node #0 'r' (Reshape): the shape input 's' is computed at run time, not a constant "
        "(a dynamic shape); ipu-import needs static shapes"
    )
    m = model([helper.make_node("Shape", ["x"], ["s0"]),
               helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT64, name="cast"),
               helper.make_node("Reshape", ["x", "xi"], ["y"], name="r")],
              [tensor("x", [4])], ["y"])
    assert import_error(m) == (
        "node #1 'cast' (Cast): casts a tensor to INT64; graph tensors stay floating point"
    )


def test_reshape_shape_not_constant() -> None:
    m = model([helper.make_node("Add", ["x", "x"], ["s"]),
               helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
              [tensor("x", [2])], ["y"])
    assert import_error(m) == (
        "node #1 'r' (Reshape): the shape input 's' is computed at run time, not a constant "
        "(a dynamic shape); ipu-import needs static shapes"
    )


def test_attention_with_a_general_mask() -> None:
    mask = np.where(RNG.uniform(size=(8, 8)) < 0.3, -np.inf, 0.0)
    assert import_error(attention_model(mask)) == (
        "node #6 'softmax' (Softmax): the attention's additive mask of shape [8, 8] is neither "
        "causal (-inf above the diagonal, 0 elsewhere) nor zero; graph.attention supports "
        "causal masking only"
    )


def test_attention_softmax_over_another_axis() -> None:
    assert import_error(attention_model(None, softmax_axis=2)) == (
        "node #4 'softmax' (Softmax): softmax over axis 2 of rank-4 logits; attention's softmax "
        "runs over the key axis (the last)"
    )
    feeds = {n: rand(1, 2, 8, 4) for n in "qkv"}  # opset 11: axis 3 of 4 is the last axis
    check_against_onnx(attention_model(None, softmax_axis=3, opset=11), feeds)


def test_softmax_and_erf_outside_their_patterns() -> None:
    m = model([helper.make_node("Softmax", ["x"], ["y"], name="sm")], [tensor("x", [2, 4])], ["y"])
    assert import_error(m) == (
        "node #0 'sm' (Softmax): a Softmax is imported only as part of attention, "
        "softmax(scale * Q @ K^T [+ causal mask]) @ V over the last axis, and this one does not "
        "fit that pattern"
    )
    m = model([helper.make_node("Erf", ["x"], ["y"], name="erf")], [tensor("x", [2, 4])], ["y"])
    assert import_error(m) == (
        "node #0 'erf' (Erf): an Erf is imported only as part of the exact GeLU, "
        "x * 0.5 * (1 + erf(x / sqrt(2))), and this one does not fit that pattern"
    )


def test_attention_on_rank_two_operands() -> None:
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], name="sm", axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    m = model(nodes, [tensor(n, [8, 4]) for n in "qkv"], ["y"])
    assert import_error(m) == (
        "node #2 'sm' (Softmax): attention over query [8, 4] and transposed key [4, 8]: "
        "graph.attention needs [..., heads, seq, head_dim] operands of one rank >= 3"
    )


@pytest.mark.parametrize(
    ("nodes", "inputs", "initializers", "message"),
    [
        ([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [[4]], {"w": rand(4, 2)},
         "node #0 'mm' (MatMul): input A has rank 1; graph.gemm multiplies matrices (rank >= 2)"),
        ([helper.make_node("Gemm", ["x", "w"], ["y"], name="g", alpha=2.0)], [[2, 4]],
         {"w": rand(4, 2)},
         "node #0 'g' (Gemm): alpha = 2.0, beta = 1.0; only alpha = beta = 1 maps to graph.gemm "
         "and graph.add"),
        ([helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln", axis=0)], [[2, 4]],
         {"s": rand(2, 4)},
         "node #0 'ln' (LayerNormalization): normalizes from axis 0 of a rank-2 input; "
         "graph.layer_norm normalizes the last axis only"),
        ([helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean"], name="ln"),
          helper.make_node("Add", ["y", "mean"], ["z"])], [[2, 4]], {"s": rand(4)},
         "node #0 'ln' (LayerNormalization): its Mean or InvStdDev output is used; "
         "graph.layer_norm gives the normalized tensor only"),
        ([helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln")], [[2, 4]],
         {"s": rand(2)},
         "node #0 'ln' (LayerNormalization): graph.layer_norm: weight has shape [2], expected [4]"),
        ([helper.make_node("Gelu", ["x"], ["y"], name="g", approximate="tanh")], [[4]], {},
         "the ONNX checker refuses the model: No Op registered for Gelu with domain_version of 17"),
        ([constant("st", np.array([3])), constant("en", np.array([0])),
          constant("ax", np.array([0])), constant("sp", np.array([-1])),
          helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="s")], [[4]], {},
         "node #4 's' (Slice): step -1 at axis 0 reverses the axis; graph.slice takes steps >= 1"),
        ([constant("st", np.array([5])), constant("en", np.array([9])),
          helper.make_node("Slice", ["x", "st", "en"], ["y"], name="s")], [[4]], {},
         "node #2 's' (Slice): axis 0 becomes empty ([4, 4) of extent 4); graph tensors have "
         "extents >= 1"),
        ([helper.make_node("Concat", ["x", "w"], ["y"], name="c", axis=0)], [[2, 4]],
         {"w": rand(2, 3)},
         "node #0 'c' (Concat): graph.concat: input #1 [2, 3] differs from input #0 [2, 4] at "
         "axis 1; only the concatenation axis 0 may differ"),
        ([helper.make_node("Add", ["x", "n"], ["y"], name="a")], [[4]],
         {"n": np.arange(4, dtype=np.int64)},
         "node #0 'a' (Add): input 'n' is a constant of dtype int64 used as a tensor; graph "
         "tensors are floating point"),
        ([helper.make_node("Add", ["x", "ghost"], ["y"], name="a")], [[4]], {},
         "the ONNX checker refuses the model: Nodes in a graph must be topologically sorted, "
         "however input 'ghost' of node"),
        ([helper.make_node("Constant", [], ["c"], name="c", value_string="no"),
          helper.make_node("Add", ["x", "c"], ["y"])], [[4]], {},
         "node #0 'c' (Constant): cannot evaluate it on its constant inputs: a Constant without "
         "a value the importer reads (value, value_float(s), value_int(s))"),
    ],
)
def test_node_diagnostics(nodes, inputs, initializers, message) -> None:
    m = model(nodes, [tensor("x", shape) for shape in inputs], ["y"], initializers)
    assert import_error(m).startswith(message)


def test_empty_constant_output() -> None:
    m = model([constant("y", np.zeros((0, 2), np.float32))], [tensor("x", [2])], ["y"])
    assert import_error(m) == (
        "graph output 'y': shape [0, 2]: every extent must be >= 1"
    )


def test_malformed_node() -> None:
    m = model([helper.make_node("Concat", ["x", "x"], ["y"], name="c")], [tensor("x", [2])], ["y"])
    assert import_error(m) == "the ONNX checker refuses the model: Required attribute 'axis' is missing."


def test_unknown_dtype() -> None:
    m = model([helper.make_node("Identity", ["x"], ["y"])], [tensor("x", [4])], ["y"])
    with pytest.raises(OnnxImportError, match="dtype 'f64' is not one of f32, f16"):
        import_onnx(m, "f64")


@pytest.mark.parametrize(("axis", "ids_type", "message"), [
    (1, TensorProto.INT64, "node #0 'embed' (Gather): gathers along axis 1; an embedding lookup "
     "(graph.gather) takes rows, axis 0"),
    (0, TensorProto.FLOAT, "node #0 'embed' (Gather): indices 'ids' are a floating-point tensor computed at "
     "run time; graph.gather's indices are token ids, an integer graph input"),
])
def test_embedding_lookups_graph_gather_cannot_take(axis, ids_type, message) -> None:
    m = model([helper.make_node("Gather", ["table", "ids"], ["y"], name="embed", axis=axis)],
              [tensor("ids", [2], ids_type)], ["y"], {"table": rand(4, 3)})
    assert import_error(m) == message
