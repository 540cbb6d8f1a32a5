"""One ONNX node -> graph ops: the handlers of the nodes that no pattern consumed.

Each handler takes the importer (for its values, constants and builder), the node's index and
the node, and returns the graph values of the node's outputs.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import onnx

from frontend.builder import GraphBuilder, GraphValue
from frontend.imported import matrix_product, shape_of
from frontend.onnx.folding import attributes, normalized_axis, reshape_target, slice_indices
from ipu_dialects.graph import INDEX_ELEMENT_TYPE, ReshapeOp


class Importer(Protocol):
    """What a handler uses of the importer (`frontend.onnx.importer.Importer`), which calls
    the handlers: the model, its values and constants, and the graph builder."""

    graph: onnx.GraphProto
    nodes: list[onnx.NodeProto]
    constants: dict[str, np.ndarray]
    env: dict[str, GraphValue]  # ONNX value -> its graph value, once made
    builder: GraphBuilder
    # an index tensor under another shape: ONNX value -> (the i32 argument, the shape); the
    # graph has no integer reshape, so graph.gather reads the argument and reshapes its rows
    index_views: dict[str, tuple[GraphValue, tuple[int, ...]]]

    def value(self, name: str, at: str) -> GraphValue: ...

    def constant(self, name: str, at: str, what: str) -> np.ndarray: ...

FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16}
INDEX_TYPES = {onnx.TensorProto.INT32, onnx.TensorProto.INT64}  # token ids: graph.gather's i32


class OnnxImportError(Exception):
    """The model has something the importer cannot map; the message names the node or input."""


def data_type_name(data_type: int) -> str:
    """ONNX's name of a data type, or the number when ONNX has none (the checker lets some
    through: `data_type` is an open enum)."""
    try:
        return onnx.TensorProto.DataType.Name(data_type)
    except ValueError:
        return f"data type {data_type}"


def where(index: int, node: onnx.NodeProto) -> str:
    """How a diagnostic names a node: its index in the graph, its name and its op type."""
    return f"node #{index} '{node.name}' ({node.op_type})" if node.name else (
        f"node #{index} ({node.op_type})")


# -- single nodes -------------------------------------------------------------------------


def operands(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    return [importer.value(name, where(index, node)) for name in node.input if name]


def matmul(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    a, b = operands(importer, index, node)
    for what, v in (("A", a), ("B", b)):
        if len(shape_of(v)) < 2:
            raise OnnxImportError(
                f"{where(index, node)}: input {what} has rank {len(shape_of(v))}; "
                "graph.gemm multiplies matrices (rank >= 2)"
            )
    return [matrix_product(importer.builder, a, b)]


def gemm(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    attrs = attributes(node)
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    if alpha != 1.0 or (len(node.input) > 2 and node.input[2] and beta != 1.0):
        raise OnnxImportError(
            f"{where(index, node)}: alpha = {alpha}, beta = {beta}; only alpha = beta = 1 "
            "maps to graph.gemm and graph.add"
        )
    transpose_b = bool(attrs.get("transB", 0))
    inputs = list(node.input)
    if transpose_b and inputs[1] in importer.constants and inputs[1] not in importer.env:
        # a constant [N, K] weight is stored transposed, [K, N], as from_torch stores a
        # linear's: the same plain gemm by both routes (and so the same plans and cycles)
        transposed = f"{inputs[1]}.t"
        importer.constants[transposed] = np.ascontiguousarray(importer.constants[inputs[1]].T)
        inputs[1], transpose_b = transposed, False
    values = [importer.value(name, where(index, node)) for name in inputs if name]
    product = importer.builder.gemm(values[0], values[1], bool(attrs.get("transA", 0)),
                                    transpose_b)
    return [importer.builder.add(product, values[2]) if len(values) > 2 else product]


def add(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    a, b = operands(importer, index, node)
    if len(shape_of(a)) < len(shape_of(b)):
        a, b = b, a  # the broadcast operand second (a bias after its GEMM), as from_torch has it
    return [importer.builder.add(a, b)]


def layer_norm(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    attrs = attributes(node)
    x, weight = (importer.value(n, where(index, node)) for n in node.input[:2])
    rank = len(shape_of(x))
    axis = attrs.get("axis", -1)
    if normalized_axis(axis, rank) != rank - 1:
        raise OnnxImportError(
            f"{where(index, node)}: normalizes from axis {axis} of a rank-{rank} input; "
            "graph.layer_norm normalizes the last axis only"
        )
    if any(used(importer, name) for name in node.output[1:]):
        raise OnnxImportError(
            f"{where(index, node)}: its Mean or InvStdDev output is used; graph.layer_norm "
            "gives the normalized tensor only"
        )
    if len(node.input) > 2 and node.input[2]:
        bias = importer.value(node.input[2], where(index, node))
    else:
        zeros = f"{node.output[0]}.bias"
        importer.constants[zeros] = np.zeros(shape_of(x)[-1:], np.float32)
        bias = importer.value(zeros, where(index, node))
    return [importer.builder.layer_norm(x, weight, bias, float(attrs.get("epsilon", 1e-5)))]


def used(importer: Importer, name: str) -> bool:
    return bool(name) and (any(name in n.input for n in importer.nodes)
                           or name in {o.name for o in importer.graph.output})


def gelu(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    approximate = attributes(node).get("approximate", b"none")
    text = approximate.decode() if isinstance(approximate, bytes) else str(approximate)
    if text not in ("none", "tanh"):
        raise OnnxImportError(
            f"{where(index, node)}: approximate = '{text}'; graph.gelu is the exact (erf) "
            "GeLU ('none') or its tanh form ('tanh')"
        )
    return [importer.builder.gelu(*operands(importer, index, node),
                                  approximate=None if text == "none" else text)]


def is_index(value: GraphValue) -> bool:
    return value.type.get_element_type() == INDEX_ELEMENT_TYPE


def viewed_shape(importer: Importer, name: str, value: GraphValue) -> tuple[int, ...]:
    """The shape of an ONNX value: an index view's own, else its graph value's."""
    return importer.index_views[name][1] if name in importer.index_views else shape_of(value)


def reshaped(importer: Importer, node: onnx.NodeProto, x: GraphValue,
             shape: Sequence[int]) -> list[GraphValue]:
    """`x` under `shape`: a graph.reshape, or for token ids (i32, which graph.reshape does not
    take) a view that graph.gather resolves (`index_views`)."""
    if not is_index(x):
        if isinstance(x.value.owner, ReshapeOp):  # a view of a view: one reshape (as from_torch)
            x = GraphValue(x.value.owner.operands[0], importer.builder)
        if tuple(shape) == shape_of(x):
            return [x]
        return [importer.builder.reshape(x, shape)]
    source = importer.index_views.get(node.input[0], (x, shape_of(x)))[0]
    importer.index_views[node.output[0]] = (source, tuple(shape))
    return [source]


def reshape(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    x = importer.value(node.input[0], where(index, node))
    target = importer.constant(node.input[1], where(index, node), "shape")
    shape = reshape_target(viewed_shape(importer, node.input[0], x), target.tolist(),
                           attributes(node).get("allowzero", 0))
    return reshaped(importer, node, x, shape)


def transpose(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    x = importer.value(node.input[0], where(index, node))
    rank = len(shape_of(x))
    permutation = attributes(node).get("perm", list(reversed(range(rank))))
    return [importer.builder.transpose(x, permutation)]


def split(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    attrs = attributes(node)
    x = importer.value(node.input[0], where(index, node))
    shape = list(shape_of(x))
    axis = normalized_axis(attrs.get("axis", 0), len(shape))
    if len(node.input) > 1 and node.input[1]:
        sizes = importer.constant(node.input[1], where(index, node), "split").tolist()
    elif "split" in attrs:
        sizes = list(attrs["split"])
    else:  # equal parts, the last one smaller (opset 18's num_outputs)
        parts = len(node.output)
        chunk = -(-shape[axis] // parts)
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(parts)]
    results, start = [], 0
    for size in sizes:
        starts = [0] * len(shape)
        ends = list(shape)
        starts[axis], ends[axis] = start, start + size
        results.append(importer.builder.slice(x, starts, ends))
        start += size
    return results


def slice(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    at = where(index, node)
    x = importer.value(node.input[0], at)
    shape = list(shape_of(x))
    starts, ends, axes, steps = (
        importer.constant(name, at, what).tolist() if name else None
        for name, what in zip([*node.input[1:], "", "", ""][:4],
                              ("starts", "ends", "axes", "steps"))
    )
    # absent starts or ends (required since opset 10): slice_indices raises a TypeError, which
    # the importer reports as a malformed node
    bounds = slice_indices(shape, typing.cast(list[int], starts), typing.cast(list[int], ends), axes,
                           steps)
    full = [(0, extent, 1) for extent in shape]
    for axis, (start, end, step) in bounds.items():
        if step < 1:
            raise OnnxImportError(
                f"{at}: step {step} at axis {axis} reverses the axis; graph.slice takes "
                "steps >= 1"
            )
        if start >= end:
            raise OnnxImportError(
                f"{at}: axis {axis} becomes empty ([{start}, {end}) of extent "
                f"{shape[axis]}); graph tensors have extents >= 1"
            )
        full[axis] = (start, end, step)
    return [importer.builder.slice(x, *([list(b) for b in zip(*full)]))]


def concat(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    values = operands(importer, index, node)
    axis = normalized_axis(attributes(node)["axis"], len(shape_of(values[0])))
    return [importer.builder.concat(values, axis)]


def identity(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    return [importer.value(node.input[0], where(index, node))]


def cast(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    to = attributes(node)["to"]
    if to not in FLOAT_TYPES:
        raise OnnxImportError(
            f"{where(index, node)}: casts a tensor to {data_type_name(to)}; "
            "graph tensors stay floating point"
        )
    return identity(importer, index, node)  # one element type for the whole graph (--dtype)


def softmax(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    raise OnnxImportError(
        f"{where(index, node)}: a Softmax is imported only as part of attention, "
        "softmax(scale * Q @ K^T [+ causal mask]) @ V over the last axis, and this one "
        "does not fit that pattern"
    )


def erf(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    raise OnnxImportError(
        f"{where(index, node)}: an Erf is imported only as part of the exact GeLU, "
        "x * 0.5 * (1 + erf(x / sqrt(2))), and this one does not fit that pattern"
    )


def axes_input(importer: Importer, index: int, node: onnx.NodeProto) -> list[int] | None:
    """Unsqueeze's or Squeeze's axes: the second input since opset 13, an attribute before."""
    if len(node.input) > 1 and node.input[1]:
        return [int(a) for a in
                importer.constant(node.input[1], where(index, node), "axes").reshape(-1)]
    axes = attributes(node).get("axes")
    return None if axes is None else list(axes)


def unsqueeze(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    x = importer.value(node.input[0], where(index, node))
    axes = axes_input(importer, index, node) or []  # required: the ONNX checker sees to it
    shape = list(viewed_shape(importer, node.input[0], x))
    for axis in sorted(normalized_axis(a, len(shape) + len(axes)) for a in axes):
        shape.insert(axis, 1)
    return reshaped(importer, node, x, shape)


def squeeze(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    x = importer.value(node.input[0], where(index, node))
    shape = list(viewed_shape(importer, node.input[0], x))
    axes = axes_input(importer, index, node)
    dropped = ({normalized_axis(a, len(shape)) for a in axes} if axes is not None
               else {a for a, extent in enumerate(shape) if extent == 1})
    wide = [a for a in sorted(dropped) if shape[a] != 1]
    if wide:
        raise OnnxImportError(f"{where(index, node)}: squeezes axis {wide[0]} of extent "
                              f"{shape[wide[0]]}; only extent-1 axes can be squeezed")
    kept = [extent for a, extent in enumerate(shape) if a not in dropped]
    return reshaped(importer, node, x, kept or [1])


def gather(importer: Importer, index: int, node: onnx.NodeProto) -> list[GraphValue]:
    """Gather of a computed tensor by constant indices: a scalar index is a slice of one
    position with its axis dropped (torch's `select`, as `TransformerEncoderLayer` splits its
    fused Q, K, V), a 1-D index a concatenation of such slices. Indices computed at run time
    (an embedding lookup) have no graph op here."""
    at = where(index, node)
    if node.input[1] not in importer.constants:
        return [embedding(importer, index, node)]
    x = importer.value(node.input[0], at)
    shape = list(shape_of(x))
    axis = normalized_axis(attributes(node).get("axis", 0), len(shape))
    indices = importer.constant(node.input[1], at, "indices")
    if indices.ndim > 1:
        raise OnnxImportError(f"{at}: indices of rank {indices.ndim}; ipu-import maps a Gather "
                              "by a scalar or a 1-D constant index")
    picks = []
    for position in indices.reshape(-1).tolist():
        position = position + shape[axis] if position < 0 else position
        if not 0 <= position < shape[axis]:
            raise OnnxImportError(f"{at}: index {position} is outside axis {axis} of extent "
                                  f"{shape[axis]}")
        starts, ends = [0] * len(shape), list(shape)
        starts[axis], ends[axis] = position, position + 1
        picks.append(importer.builder.slice(x, starts, ends))
    if indices.ndim == 1:
        return [picks[0] if len(picks) == 1 else importer.builder.concat(picks, axis)]
    return [importer.builder.reshape(picks[0], shape[:axis] + shape[axis + 1:] or [1])]


def embedding(importer: Importer, index: int, node: onnx.NodeProto) -> GraphValue:
    """Gather of rows of a constant table by token ids computed at run time (graph inputs):
    one graph.gather, its rows reshaped to the ids' view (`index_views`)."""
    at = where(index, node)
    if node.input[0] not in importer.constants:
        raise OnnxImportError(f"{at}: gathers from '{node.input[0]}', a tensor computed at run "
                              "time, by indices computed at run time; graph.gather looks up rows "
                              "of a constant table (an embedding)")
    if normalized_axis(attributes(node).get("axis", 0), importer.constants[node.input[0]].ndim):
        raise OnnxImportError(f"{at}: gathers along axis {attributes(node)['axis']}; an "
                              "embedding lookup (graph.gather) takes rows, axis 0")
    table = importer.value(node.input[0], at)
    ids = importer.value(node.input[1], at)
    if not is_index(ids):
        raise OnnxImportError(f"{at}: indices '{node.input[1]}' are a floating-point tensor "
                              "computed at run time; graph.gather's indices are token ids, an "
                              "integer graph input")
    rows = importer.builder.gather(table, ids)
    view = viewed_shape(importer, node.input[1], ids)
    if view == shape_of(ids):
        return rows
    return importer.builder.reshape(rows, [*view, *shape_of(table)[1:]])


HANDLERS: dict[str, Callable[[Importer, int, onnx.NodeProto], list[GraphValue]]] = {
    "MatMul": matmul,
    "Gemm": gemm,
    "Add": add,
    "LayerNormalization": layer_norm,
    "Gelu": gelu,
    "Reshape": reshape,
    "Transpose": transpose,
    "Split": split,
    "Slice": slice,
    "Concat": concat,
    "Identity": identity,
    "Unsqueeze": unsqueeze,
    "Squeeze": squeeze,
    "Gather": gather,
    "Cast": cast,
    "Softmax": softmax,
    "Erf": erf,
}


def unsupported(index: int, node: onnx.NodeProto, constants: dict[str, np.ndarray]) -> str:
    """Why a node has no graph op, in the user's terms: a node whose inputs are all constants
    is one the importer cannot evaluate, not a computation on run-time tensors."""
    op = f"{node.domain}.{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
    present = [name for name in node.input if name]
    if present and all(name in constants for name in present):
        return (
            f"{where(index, node)}: ONNX {op} on constants only "
            f"({', '.join(repr(n) for n in present)}), which ipu-import cannot evaluate: it "
            "folds shape arithmetic (Shape, Gather, Slice, Concat, Unsqueeze, Expand, Where, "
            "Trilu, ...) and elementwise Add, Sub, Mul, Div, Mod, Sqrt, Pow on constants"
        )
    return (
        f"{where(index, node)}: no graph op for ONNX {op} on tensors computed at run time; "
        "ipu-import maps MatMul, Gemm, Add, LayerNormalization, Gelu (and its Erf form), "
        "Reshape, Transpose, Split, Slice, Concat, Unsqueeze, Squeeze, Gather by constant "
        "indices and attention, and folds shape arithmetic on constants"
    )
