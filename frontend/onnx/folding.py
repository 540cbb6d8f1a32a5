"""Constant folding of ONNX nodes whose inputs are all known (NumPy, before any matching).

Exporters wrap the computation in shape arithmetic: `torch.onnx.export` builds attention's scale
from `Shape -> Slice -> Cast -> Sqrt -> Div` and its causal mask from `Shape -> Concat -> Expand
-> Trilu -> Equal -> Where`. With static shapes all of it is constant; folding it leaves the
graph the patterns (frontend/onnx/patterns.py) recognize. `fold` returns None for a node it
cannot evaluate, and the importer then treats the node as computation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

# A folder's inputs: the node's input arrays, None for an absent optional input (`fold` calls a
# folder only when every present input is known, which the types cannot say: hence Any).
Folder = Callable[[onnx.NodeProto, list[Any], dict], list[np.ndarray]]


def attributes(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def normalized_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def slice_indices(
    shape: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int] | None,
    steps: Sequence[int] | None,
) -> dict[int, tuple[int, int, int]]:
    """ONNX Slice's clamping rules: per sliced axis, (start, end, step) with start and end
    clamped into the extent (end may be -1 for a reversed slice that reaches index 0)."""
    if axes is None:
        axes = list(range(len(starts)))
    axes = [normalized_axis(a, len(shape)) for a in axes]
    steps = [1] * len(starts) if steps is None else list(steps)
    bounds = {}
    for axis, start, end, step in zip(axes, starts, ends, steps):
        extent = shape[axis]
        start = start + extent if start < 0 else start
        end = end + extent if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), extent), min(max(end, 0), extent)
        else:
            start, end = min(max(start, 0), extent - 1), min(max(end, -1), extent - 1)
        bounds[axis] = (int(start), int(end), int(step))
    return bounds


def constant_value(node: onnx.NodeProto) -> np.ndarray:
    attrs = attributes(node)
    if "value" in attrs:
        return numpy_helper.to_array(attrs["value"])
    for name, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                        ("value_int", np.int64), ("value_ints", np.int64)):
        if name in attrs:
            return np.array(attrs[name], dtype)
    raise ValueError(
        "a Constant without a value the importer reads (value, value_float(s), value_int(s))"
    )


def onnx_slice(x: np.ndarray, starts, ends, axes=None, steps=None) -> np.ndarray:
    for axis, (start, end, step) in slice_indices(x.shape, starts, ends, axes, steps).items():
        x = np.take(x, np.arange(start, end, step), axis=axis)
    return x


def reshape_target(shape: Sequence[int], target: Sequence[int], allowzero: int = 0) -> list[int]:
    """ONNX Reshape's target: 0 copies the input extent (unless allowzero), -1 is inferred."""
    out = [shape[i] if d == 0 and not allowzero else int(d) for i, d in enumerate(target)]
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        out[out.index(-1)] = int(np.prod(shape)) // known if known else 0
    return out


def fold_slice(node, inputs, attrs):
    x, starts, ends, *rest = inputs + [None] * (5 - len(inputs))
    axes, steps = rest[0], rest[1]
    return [onnx_slice(x, starts.tolist(), ends.tolist(),
                       None if axes is None else axes.tolist(),
                       None if steps is None else steps.tolist())]


def fold_unsqueeze(node, inputs, attrs):
    axes = inputs[1].tolist() if len(inputs) > 1 else attrs["axes"]
    x = inputs[0]
    rank = x.ndim + len(axes)
    for axis in sorted(normalized_axis(a, rank) for a in axes):
        x = np.expand_dims(x, axis)
    return [x]


def fold_squeeze(node, inputs, attrs):
    axes = inputs[1].tolist() if len(inputs) > 1 and inputs[1] is not None else attrs.get("axes")
    x = inputs[0]
    if axes is None:
        return [np.squeeze(x)]
    return [np.squeeze(x, tuple(normalized_axis(a, x.ndim) for a in axes))]


def fold_div(node, inputs, attrs):
    a, b = inputs
    if np.issubdtype(a.dtype, np.integer):
        return [np.trunc(a / b).astype(a.dtype)]  # ONNX integer Div truncates
    return [(a / b).astype(a.dtype)]


def fold_mod(node, inputs, attrs):
    a, b = inputs  # fmod 0: the divisor's sign (Python's %); 1: the dividend's (C's fmod)
    result = np.fmod(a, b) if attrs.get("fmod", 0) else np.mod(a, b)
    return [np.asarray(result).astype(a.dtype)]


def fold_cast(node, inputs, attrs):
    return [inputs[0].astype(helper.tensor_dtype_to_np_dtype(attrs["to"]))]


def fold_trilu(node, inputs, attrs):
    k = int(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else 0
    return [np.triu(inputs[0], k) if attrs.get("upper", 1) else np.tril(inputs[0], k)]


def fold_gather_nd(node, inputs, attrs):
    """ONNX GatherND: per batch index (the leading `batch_dims` axes), the slices of the data
    that the last axis of the indices addresses."""
    data, indices = inputs[0], np.asarray(inputs[1], np.int64)
    batch, depth = attrs.get("batch_dims", 0), indices.shape[-1]
    count = math.prod(data.shape[:batch])
    flat_data = data.reshape(count, *data.shape[batch:])
    flat_indices = indices.reshape(count, -1, depth)
    picked = [flat_data[i][tuple(flat_indices[i][:, d] for d in range(depth))]
              for i in range(count)]
    return [np.stack(picked).reshape(*indices.shape[:-1], *data.shape[batch + depth:])]


def fold_flatten(x: np.ndarray, axis: int) -> np.ndarray:
    axis = normalized_axis(axis, x.ndim)
    return x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)


def fold_constant_of_shape(node, inputs, attrs):
    value = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
    return [np.full(inputs[0].tolist(), value.reshape(-1)[0], value.dtype)]


def same_dtype(function: Callable[..., np.ndarray]) -> Folder:
    """An elementwise NumPy function whose result keeps the first input's dtype (NumPy would
    promote float32 with an int64 scalar; ONNX requires equal types anyway)."""
    return lambda node, inputs, attrs: [np.asarray(function(*inputs)).astype(inputs[0].dtype)]


FOLDERS: dict[str, Folder] = {
    "Identity": lambda node, inputs, attrs: [inputs[0]],
    "Cast": fold_cast,
    "Shape": lambda node, inputs, attrs: [
        np.array(inputs[0].shape[attrs.get("start", 0) : attrs.get("end")], np.int64)
    ],
    "Size": lambda node, inputs, attrs: [np.array(inputs[0].size, np.int64)],
    "Gather": lambda node, inputs, attrs: [
        np.take(inputs[0], inputs[1], axis=attrs.get("axis", 0))
    ],
    "GatherND": fold_gather_nd,
    "GatherElements": lambda node, inputs, attrs: [
        np.take_along_axis(inputs[0], inputs[1], axis=attrs.get("axis", 0))
    ],
    "IsNaN": lambda node, inputs, attrs: [np.isnan(inputs[0])],
    "Unsqueeze": fold_unsqueeze,
    "Squeeze": fold_squeeze,
    "Concat": lambda node, inputs, attrs: [np.concatenate(inputs, axis=attrs["axis"])],
    "Slice": fold_slice,
    "Reshape": lambda node, inputs, attrs: [
        inputs[0].reshape(reshape_target(inputs[0].shape, inputs[1].tolist(),
                                         attrs.get("allowzero", 0)))
    ],
    "Transpose": lambda node, inputs, attrs: [np.transpose(inputs[0], attrs.get("perm"))],
    "Expand": lambda node, inputs, attrs: [
        inputs[0] * np.ones(inputs[1].tolist(), inputs[0].dtype)
    ],
    "Trilu": fold_trilu,
    "ConstantOfShape": fold_constant_of_shape,
    "Range": lambda node, inputs, attrs: [
        np.arange(inputs[0], inputs[1], inputs[2]).astype(inputs[0].dtype)
    ],
    "Equal": lambda node, inputs, attrs: [np.equal(*inputs)],
    "Less": lambda node, inputs, attrs: [np.less(*inputs)],
    "Greater": lambda node, inputs, attrs: [np.greater(*inputs)],
    "LessOrEqual": lambda node, inputs, attrs: [np.less_equal(*inputs)],
    "GreaterOrEqual": lambda node, inputs, attrs: [np.greater_equal(*inputs)],
    "Not": lambda node, inputs, attrs: [np.logical_not(inputs[0])],
    "And": lambda node, inputs, attrs: [np.logical_and(*inputs)],
    "Or": lambda node, inputs, attrs: [np.logical_or(*inputs)],
    "Flatten": lambda node, inputs, attrs: [fold_flatten(inputs[0], attrs.get("axis", 1))],
    "Where": lambda node, inputs, attrs: [np.asarray(np.where(inputs[0], inputs[1], inputs[2]))],
    "Add": same_dtype(np.add),
    "Sub": same_dtype(np.subtract),
    "Mul": same_dtype(np.multiply),
    "Div": fold_div,
    "Mod": fold_mod,
    "Neg": same_dtype(np.negative),
    "Sqrt": same_dtype(np.sqrt),
    "Pow": same_dtype(np.power),
}


def fold(
    node: onnx.NodeProto, inputs: list[np.ndarray | None], shapes: dict[str, tuple[int, ...]]
) -> list[np.ndarray] | None:
    """The node's outputs if every input is known (a Shape node needs only its input's static
    shape), else None."""
    if node.op_type == "Constant":
        return [constant_value(node)]
    if node.op_type == "Shape" and inputs[0] is None and node.input[0] in shapes:
        attrs = attributes(node)
        shape = shapes[node.input[0]]
        return [np.array(shape[attrs.get("start", 0) : attrs.get("end")], np.int64)]
    folder = FOLDERS.get(node.op_type)
    present = [v for name, v in zip(node.input, inputs) if name]
    if folder is None or any(v is None for v in present):
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        return folder(node, inputs, attributes(node))
