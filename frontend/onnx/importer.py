"""ONNX model -> one graph-dialect `func.func` and its weights.

`import_onnx(model)` returns the module and a dict of named arrays: the graph's inputs become
the first arguments, then every constant the graph ops read (initializers under their own names,
folded constants under the name of the value they were) becomes a named argument whose array is
in the dict. The steps: static shapes of the inputs, constant folding (frontend/onnx/folding.py),
pattern matching (frontend/onnx/patterns.py), then one graph op (or a few) per remaining node
in the model's order (frontend/onnx/nodes.py). A node the importer cannot map raises
`OnnxImportError` naming the node, its op type and its index: the importer never returns part
of a graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import f16, f32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from frontend.builder import GraphBuilder, GraphValue
from frontend.imported import ImportedModel, UniqueNames, remove_unused, shape_of
from frontend.key_mask import KeyMaskTrace, elementwise, key_padding
from frontend.onnx.folding import attributes, fold, normalized_axis
from frontend.onnx.gelu_patterns import match_gelu_tanh
from frontend.onnx.nodes import (
    FLOAT_TYPES,
    HANDLERS,
    INDEX_TYPES,
    OnnxImportError,
    data_type_name,
    unsupported,
    where,
)
from frontend.onnx.patterns import (
    AttentionMatch,
    GeluMatch,
    GraphView,
    causal_mask_kind,
    match_attention,
    match_gelu,
)
from frontend.repeat_layers import RepeatSearchError
from frontend.repeat_layers import repeat_layers as repeat_layers_of
from ipu_dialects.graph import ReshapeOp, TransposeOp


def check_model(model: onnx.ModelProto) -> None:
    """ONNX's own checker first: what it refuses (duplicate initializer, node output or graph
    input names, tensors without exactly one data field or of an unknown data type, a model
    without an IR version, as an empty file parses) is never imported. Then the node count is
    bounded (`MAX_ONNX_NODES`, device/limits.py)."""
    from device.limits import MAX_ONNX_NODES

    # A graph input or output without a shape is the importer's to word (an input needs a
    # static shape, an output's is inferred): the checker sees it with an empty one.
    unshaped = [v.type.tensor_type for v in [*model.graph.input, *model.graph.output]
                if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")]
    for tensor_type in unshaped:
        tensor_type.shape.SetInParent()
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as error:
        raise OnnxImportError(f"the ONNX checker refuses the model: "
                              f"{str(error).strip().splitlines()[0]}") from None
    finally:
        for tensor_type in unshaped:
            tensor_type.ClearField("shape")
    if len(model.graph.node) > MAX_ONNX_NODES:
        raise OnnxImportError(f"{len(model.graph.node)} nodes (at most {MAX_ONNX_NODES}: "
                              "MAX_ONNX_NODES, device/limits.py)")


def initializer_array(tensor: onnx.TensorProto) -> np.ndarray:
    """An initializer's array; data that does not fill its dims (the checker does not look at
    raw_data's length) is a diagnostic naming the initializer, not numpy's reshape error."""
    try:
        return numpy_helper.to_array(tensor)
    except (ValueError, TypeError, KeyError) as error:
        raise OnnxImportError(f"initializer '{tensor.name}': its data does not hold a tensor of "
                              f"dims {list(tensor.dims)} and type "
                              f"{data_type_name(tensor.data_type)}: {error}") from None


INFERENCE_ELEMENTS = 4096  # initializers larger than this are shapes only for shape inference


def weightless(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with each large initializer (more than `INFERENCE_ELEMENTS` elements) replaced
    by a graph input of the same element type and shape; the nodes are the same."""
    large = [t for t in model.graph.initializer if math.prod(t.dims) > INFERENCE_ELEMENTS]
    if not large:
        return model
    listed = {i.name for i in model.graph.input}  # IR < 4 lists initializers as inputs too
    graph = onnx.GraphProto(name=model.graph.name, node=model.graph.node,
                            input=model.graph.input, output=model.graph.output,
                            value_info=model.graph.value_info,
                            initializer=[t for t in model.graph.initializer
                                         if math.prod(t.dims) <= INFERENCE_ELEMENTS])
    graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                       for t in large if t.name not in listed)
    return onnx.helper.make_model(graph, opset_imports=model.opset_import,
                                  ir_version=model.ir_version, functions=model.functions)


# ONNX ops a key mask is followed through (frontend/key_mask.py): those that move the elements
# of their first input (the others constants), and elementwise ones
MASK_MOVES = frozenset({"Identity", "Reshape", "Flatten", "Unsqueeze", "Squeeze", "Expand",
                        "Transpose", "Slice", "Gather", "GatherND"})
MASK_ELEMENTWISE = frozenset({"Cast", "Not", "And", "Or", "Equal", "Where", "Add", "Sub",
                              "Mul", "Neg"})

ELEMENT_TYPES: dict[str, tuple[Attribute, type]] = {
    "f32": (f32, np.float32), "f16": (f16, np.float16)
}


class Importer:
    def __init__(self, model: onnx.ModelProto, dtype: str, function: str):
        self.graph = model.graph
        self.element_type, self.numpy_dtype = ELEMENT_TYPES[dtype]
        self.builder = GraphBuilder(function)
        self.env: dict[str, GraphValue] = {}
        self.constants = {t.name: initializer_array(t) for t in self.graph.initializer}
        self.weights: dict[str, np.ndarray] = {}
        self.index_views: dict[str, tuple[GraphValue, tuple[int, ...]]] = {}
        # values computed from an integer input alone: possible key padding masks
        self.key_masks: dict[str, KeyMaskTrace] = {}
        self.unique_name = UniqueNames()
        self.shapes = self.inferred_shapes(model)
        self.nodes = list(self.graph.node)
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                          onnx.defs.onnx_opset_version())

    # -- values -------------------------------------------------------------------------------

    @staticmethod
    def inferred_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
        """Static shapes ONNX shape inference finds (Shape nodes of computed values fold).

        Inference runs on the model's structure: every initializer of more than
        `INFERENCE_ELEMENTS` elements is declared as a graph input of its type and shape
        instead (inference reads the values of small constants only, a Reshape's target or a
        Slice's bounds), so that a GPT-2-small stack's 340 MB of weights are not serialized
        twice for it (more than half of that import's time: 58 s, then 23 s)."""
        try:
            inferred = onnx.shape_inference.infer_shapes(weightless(model)).graph
        except Exception:  # inference is a help for folding, not a requirement
            return {}
        shapes = {}
        for info in [*inferred.value_info, *inferred.input, *inferred.output]:
            dims = info.type.tensor_type.shape.dim
            static = all(d.HasField("dim_value") for d in dims)
            if info.type.tensor_type.HasField("shape") and static:
                shapes[info.name] = tuple(d.dim_value for d in dims)
        return shapes

    def add_inputs(self) -> None:
        for info in self.graph.input:
            if info.name in self.constants:  # IR < 4 lists initializers as inputs too
                continue
            tensor = info.type.tensor_type
            if tensor.elem_type not in FLOAT_TYPES | INDEX_TYPES:
                raise OnnxImportError(
                    f"graph input '{info.name}' has element type "
                    f"{data_type_name(tensor.elem_type)}; graph tensors are "
                    "floating point (f32 or f16), and integer inputs (INT32, INT64) are the "
                    "indices of an embedding lookup"
                )
            if not tensor.HasField("shape"):
                raise OnnxImportError(
                    f"graph input '{info.name}' has no shape; ipu-import needs static shapes: "
                    "export the model with fixed input sizes"
                )
            shape = []
            for axis, dim in enumerate(tensor.shape.dim):
                if not dim.HasField("dim_value") or dim.dim_value < 1:
                    what = f"'{dim.dim_param}'" if dim.dim_param else "unknown"
                    raise OnnxImportError(
                        f"graph input '{info.name}' has a dynamic extent ({what}) at axis {axis}; "
                        "ipu-import needs static shapes: export the model with fixed input sizes"
                    )
                shape.append(dim.dim_value)
            name = self.unique_name(info.name)
            if tensor.elem_type in INDEX_TYPES:
                # token ids or a padding mask: ONNX's int64, narrowed (range-checked) to i32
                # by the host
                self.env[info.name] = self.builder.index_input(shape, name=name)
                self.key_masks[info.name] = KeyMaskTrace.of_input(self.env[info.name],
                                                                  info.name, shape)
            else:
                self.env[info.name] = self.builder.input(shape, self.element_type, name=name)
            self.shapes[info.name] = tuple(shape)

    def value(self, name: str, at: str) -> GraphValue:
        """The graph value of an ONNX value; a constant becomes a named argument (a weight).
        `at` names the reader in diagnostics."""
        if name in self.env:
            return self.env[name]
        if name not in self.constants:
            raise OnnxImportError(f"{at}: input '{name}' is produced by no node, initializer "
                                  "or graph input")
        array = self.constants[name]
        if not np.issubdtype(array.dtype, np.floating):
            raise OnnxImportError(
                f"{at}: input '{name}' is a constant of dtype {array.dtype} used as a tensor; "
                "graph tensors are floating point"
            )
        arg_name = self.unique_name(name)
        self.weights[arg_name] = array.astype(self.numpy_dtype)
        self.env[name] = self.builder.input(list(array.shape), self.element_type, name=arg_name)
        return self.env[name]

    def constant(self, name: str, at: str, what: str) -> np.ndarray:
        if name not in self.constants:
            raise OnnxImportError(
                f"{at}: the {what} input '{name}' is computed at run time, not a constant "
                "(a dynamic shape); ipu-import needs static shapes"
            )
        return self.constants[name]

    # -- the passes ---------------------------------------------------------------------------

    def fold_constants(self) -> set[int]:
        folded = set()
        for index, node in enumerate(self.nodes):
            inputs = [self.constants.get(name) if name else None for name in node.input]
            try:
                outputs = fold(node, inputs, self.shapes)
            except Exception as error:  # a malformed node: say which one
                raise OnnxImportError(
                    f"{where(index, node)}: cannot evaluate it on its constant inputs: {error}"
                ) from None
            if outputs is not None:
                folded.add(index)
                for name, array in zip(node.output, outputs):
                    self.constants[name] = np.asarray(array)
                    self.shapes[name] = np.shape(array)
        return folded

    def run(self) -> ImportedModel:
        self.add_inputs()
        folded = self.fold_constants()
        self.trace_key_masks(folded)
        view = GraphView(self.nodes, self.constants, {o.name for o in self.graph.output}, folded,
                         key_masks=self.key_masks)
        anchors, consumed = self.match_patterns(view, folded)
        mask_only = self.mask_only_nodes(view, consumed)
        for index, node in enumerate(self.nodes):
            if index in folded or index in consumed or index in mask_only:
                continue
            try:
                if index in anchors:
                    outputs = anchors[index](self, index, node)
                else:
                    handler = HANDLERS.get(node.op_type if node.domain in ("", "ai.onnx") else "")
                    if handler is None:
                        raise OnnxImportError(unsupported(index, node, self.constants))
                    outputs = handler(self, index, node)
            except VerifyException as error:  # a shape the graph op rejects, in its own terms
                raise OnnxImportError(f"{where(index, node)}: {error}") from None
            except (KeyError, IndexError, TypeError, ValueError) as error:  # a malformed node
                raise OnnxImportError(
                    f"{where(index, node)}: cannot import it (a required attribute or input is "
                    f"missing or malformed: {error!r})"
                ) from None
            for name, value in zip(node.output, outputs):
                self.env[name] = value
        results = []
        for output in self.graph.output:
            try:
                results.append(self.value(output.name, f"graph output '{output.name}'"))
            except VerifyException as error:  # a constant output the graph cannot hold
                raise OnnxImportError(f"graph output '{output.name}': {error}") from None
        self.builder.output(*results)
        module = self.builder.build()
        remove_unused(module, self.weights)
        return ImportedModel(module, self.weights)

    def trace_key_masks(self, folded: set[int]) -> None:
        """Follow every value computed from an integer input alone through the ops that
        move its elements or map them one by one (frontend/key_mask.py)."""
        for index, node in enumerate(self.nodes):
            if index in folded or len(node.output) != 1:
                continue
            traced = [name in self.key_masks for name in node.input]
            known = all(not name or t or name in self.constants
                        for name, t in zip(node.input, traced))
            if not any(traced) or not known:
                continue
            try:
                trace = self.traced(node, traced)
            except (ValueError, TypeError, LookupError):  # not a value this trace can follow
                continue
            if isinstance(trace, KeyMaskTrace):
                self.key_masks[node.output[0]] = trace

    def traced(self, node: onnx.NodeProto, traced: list[bool]) -> KeyMaskTrace | str | None:
        """The trace of `node`'s output (None: not an op a trace follows; str: why not)."""
        others = [self.constants.get(n) if n else None for n in node.input[1:]]
        if node.op_type in MASK_MOVES and traced.index(True) == 0 and sum(traced) == 1:
            return self.key_masks[node.input[0]].moved(
                lambda array: self.fold_with(node, [array, *others]))
        if node.op_type in MASK_ELEMENTWISE:
            return elementwise(
                [self.key_masks.get(n, self.constants.get(n)) for n in node.input],
                lambda arrays: self.fold_with(node, list(arrays)))
        return None

    def fold_with(self, node: onnx.NodeProto, inputs: list[np.ndarray | None]) -> np.ndarray:
        """`node` evaluated on `inputs` (NumPy folders)."""
        outputs = fold(node, inputs, self.shapes)
        if outputs is None:  # no folder: the trace stops here (trace_key_masks)
            raise LookupError
        return np.asarray(outputs[0])

    def mask_only_nodes(self, view: GraphView, consumed: set[int]) -> set[int]:
        """Traced nodes whose values reach nothing but attention's key-mask adds (consumed by
        their matches, the mask input becoming the attention's key_mask): no graph op."""
        only: set[int] = set()
        for index in reversed(range(len(self.nodes))):
            outputs = self.nodes[index].output
            if all(name in self.key_masks and name not in view.outputs and all(
                    user in only or user in consumed for user in view.consumers.get(name, []))
                   for name in outputs):
                only.add(index)
        return only

    def match_patterns(self, view: GraphView, folded: set[int]):
        anchors: dict[int, Callable] = {}
        consumed: set[int] = set()
        for index, node in enumerate(self.nodes):
            if index in folded:
                continue
            match: AttentionMatch | GeluMatch | None = None
            if node.op_type == "Softmax":
                match = match_attention(view, index)
            elif node.op_type == "Erf":
                match = match_gelu(view, index)
            elif node.op_type == "Tanh":
                match = match_gelu_tanh(view, index)
            if match is None or consumed & set(match.consumed):
                continue
            consumed |= set(match.consumed) - {match.anchor}
            if isinstance(match, AttentionMatch):
                anchors[match.anchor] = lambda self, i, n, m=match: self.attention(m)
            else:
                anchors[match.anchor] = lambda self, i, n, m=match: [
                    self.builder.gelu(self.value(m.input, where(i, n)), approximate=m.approximate)
                ]
        return anchors, consumed

    # -- patterns -----------------------------------------------------------------------------

    def attention(self, match: AttentionMatch) -> list[GraphValue]:
        softmax = self.nodes[match.softmax]
        at = where(match.softmax, softmax)
        query = self.value(match.query, at)
        key_t = self.value(match.key_transposed, at)
        value = self.value(match.value, at)
        q_shape, kt_shape = shape_of(query), shape_of(key_t)
        if len(q_shape) < 3 or len(kt_shape) != len(q_shape):
            raise OnnxImportError(
                f"{at}: attention over query {list(q_shape)} and transposed key {list(kt_shape)}: "
                "graph.attention needs [..., heads, seq, head_dim] operands of one rank >= 3"
            )
        # opset 13 made -1 the default; before, 1, with the axes from it on flattened into one,
        # which for the last axis is the same softmax
        default_axis = -1 if self.opset >= 13 else 1
        axis = attributes(softmax).get("axis", default_axis)
        if normalized_axis(axis, len(q_shape)) != len(q_shape) - 1:
            raise OnnxImportError(
                f"{at}: softmax over axis {axis} of rank-{len(q_shape)} logits; attention's "
                "softmax runs over the key axis (the last)"
            )
        causal, key_mask = False, None
        if match.key_mask is not None:
            trace = self.key_masks[match.key_mask]
            found = key_padding(trace, (*q_shape[:-1], kt_shape[-1]), boolean=False)
            if isinstance(found, str):
                raise OnnxImportError(f"{at}: {found}")
            causal, key_mask = found, trace.argument
        if match.mask is not None:
            logits = (*q_shape[:-1], kt_shape[-1])
            kind = causal_mask_kind(match.mask, logits)
            if kind == "general":
                raise OnnxImportError(
                    f"{at}: the attention's additive mask of shape {list(match.mask.shape)} is "
                    "neither causal (-inf above the diagonal, 0 elsewhere) nor zero; "
                    "graph.attention supports causal masking only"
                )
            causal = kind == "causal"
        key = self.untransposed_key(match.key_transposed, key_t)
        default = 1.0 / math.sqrt(q_shape[-1])
        scale = None if abs(match.scale - default) <= 1e-6 * default else match.scale
        return [self.builder.attention(query, key, value, causal=causal, scale=scale,
                                       key_mask=key_mask)]

    def untransposed_key(self, name: str, key_t: GraphValue) -> GraphValue:
        """K from Kᵀ: the value the exporter's layout ops (transposes, reshapes) turned into Kᵀ,
        as far back as K is that value's elements in row-major order (a reshape of it, or
        itself), so no transpose is added and undone; else one permutation of the last
        Transpose's input."""
        rank = len(shape_of(key_t))
        swap = [*range(rank - 2), rank - 1, rank - 2]
        source = row_major_source(key_t.value, swap)
        if source is not None:
            key = GraphValue(source, self.builder)
            k_shape = [shape_of(key_t)[i] for i in swap]
            return key if list(shape_of(key)) == k_shape else self.builder.reshape(key, k_shape)
        producer = next((n for n in self.nodes if name in n.output), None)
        if producer is not None and producer.op_type == "Transpose" and producer.input[0] in self.env:
            perm = attributes(producer).get("perm", list(reversed(range(rank))))
            composed = [perm[s] for s in swap]
            source_value = self.env[producer.input[0]]
            if composed == list(range(rank)):
                return source_value
            return self.builder.transpose(source_value, composed)
        return self.builder.transpose(key_t, swap)


def row_major_source(value: SSAValue, swap: list[int]) -> SSAValue | None:
    """The farthest value behind `value` through graph.reshape and graph.transpose ops whose
    elements in row-major order are `value` transposed by `swap` in row-major order (torch's
    dynamo exporter writes Kᵀ as `Reshape(Transpose(Reshape(K, [B*H, S, D]), [0, 2, 1]),
    [B, H, D, S])`, or with a transpose of the heads and a unit axis in between), or None."""
    chain: list[Operation] = []  # the layout ops from the candidate to `value`, in order
    found = None
    while isinstance(value.owner, ReshapeOp | TransposeOp):
        chain.insert(0, value.owner)
        value = value.owner.operands[0]
        order = np.arange(math.prod(shape_of(value))).reshape(shape_of(value))
        for op in chain:
            order = (order.transpose(list(op.permutation.get_values()))
                     if isinstance(op, TransposeOp) else order.reshape(shape_of(op.results[0])))
        if np.array_equal(order.transpose(swap).reshape(-1), np.arange(order.size)):
            found = value
    return found


def import_onnx(model: onnx.ModelProto | str | Path, dtype: str = "f32",
                function: str = "main", repeat_layers: bool = False) -> ImportedModel:
    """Import a model (a ModelProto or a path); `dtype` 'f32' or 'f16' is the element type of
    every graph tensor (weights are converted). `repeat_layers`: consecutive identical blocks
    become one `graph.repeat` with their weights stacked (frontend/repeat_layers.py); the runs
    replaced are in the result's `repeats`."""
    if dtype not in ELEMENT_TYPES:
        raise OnnxImportError(f"dtype '{dtype}' is not one of {', '.join(ELEMENT_TYPES)}")
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model))
    check_model(model)
    imported = Importer(model, dtype, function).run()
    if repeat_layers:
        try:
            imported.repeats = repeat_layers_of(imported)
        except RepeatSearchError as error:
            raise OnnxImportError(str(error)) from None
    return imported

