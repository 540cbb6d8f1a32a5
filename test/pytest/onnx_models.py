"""Small ONNX models built with onnx.helper for the importer's tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT


def tensor(name: str, shape: Sequence[int | str | None], elem_type: int = FLOAT):
    return helper.make_tensor_value_info(name, elem_type, shape)


def model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[onnx.ValueInfoProto],
    outputs: Sequence[str],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        "test",
        list(inputs),
        [helper.make_tensor_value_info(name, FLOAT, None) for name in outputs],
        [numpy_helper.from_array(np.asarray(a), name) for name, a in (initializers or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def constant(name: str, value) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(value)))


def attention_model(mask: np.ndarray | None, scale: float = 0.125, heads: int = 2,
                    seq: int = 8, dim: int = 4, softmax_axis: int = -1,
                    opset: int = 17) -> onnx.ModelProto:
    """softmax(Q @ Kᵀ * scale [+ mask]) @ V, the way a hand-written exporter spells it."""
    shape = [1, heads, seq, dim]
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"], name="qk"),
        constant("scale", np.float32(scale)),
        helper.make_node("Mul", ["qk", "scale"], ["scaled"], name="scaled"),
    ]
    logits = "scaled"
    if mask is not None:
        nodes += [constant("mask", mask.astype(np.float32)),
                  helper.make_node("Add", ["scaled", "mask"], ["masked"], name="masked")]
        logits = "masked"
    nodes += [helper.make_node("Softmax", [logits], ["p"], name="softmax", axis=softmax_axis),
              helper.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    return model(nodes, [tensor(n, shape) for n in "qkv"], ["y"], opset=opset)
