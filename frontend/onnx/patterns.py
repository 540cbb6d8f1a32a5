"""Multi-node ONNX patterns that become one graph op: attention and the Erf form of GeLU.

Matching runs after constant folding (frontend/onnx/folding.py), on the node list with its
producer/consumer maps. A match names the node that completes the pattern (its *anchor*: the
importer emits the graph op there, when every input exists) and the nodes it consumes. An
intermediate value used outside the pattern stops the match: the pattern's graph op would not
produce it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx


@dataclass
class GraphView:
    """The nodes with who produces and who reads each value, and the folded constants."""

    nodes: list[onnx.NodeProto]
    constants: dict[str, np.ndarray]
    outputs: set[str]  # the graph's outputs: a use outside every node
    folded: set[int] = field(default_factory=set)  # nodes replaced by constants: not a use
    # values computed from an integer input alone (frontend/key_mask.py), by name
    key_masks: dict[str, Any] = field(default_factory=dict)
    producer: dict[str, int] = field(default_factory=dict)
    consumers: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, node in enumerate(self.nodes):
            for name in node.output:
                self.producer[name] = index
            for name in node.input:
                if name and index not in self.folded:
                    self.consumers.setdefault(name, []).append(index)

    def producing(self, value: str, op_type: str) -> int | None:
        index = self.producer.get(value)
        if index is None or self.nodes[index].op_type != op_type:
            return None
        return index

    def only_use(self, value: str) -> int | None:
        """The single node reading `value`, if it has exactly one use and is not a graph output."""
        uses = self.consumers.get(value, [])
        return uses[0] if len(uses) == 1 and value not in self.outputs else None

    def scalar(self, value: str) -> float | None:
        array = self.constants.get(value)
        if array is None or array.size != 1 or not np.issubdtype(array.dtype, np.floating):
            return None
        return float(array.reshape(-1)[0])


@dataclass
class AttentionMatch:
    anchor: int  # the MatMul with V
    consumed: list[int]
    query: str
    key_transposed: str  # [..., D, Sk]
    value: str
    scale: float
    mask: np.ndarray | None  # the additive mask's constant, None without one
    softmax: int
    key_mask: str | None = None  # an additive mask computed from an integer input: its name
    key_mask_add: int | None = None  # the Add of that mask to the logits


@dataclass
class GeluMatch:
    anchor: int
    consumed: list[int]
    input: str
    approximate: str | None = None  # "tanh": the tanh form (frontend/onnx/gelu_patterns.py)


def scaled_by_constant(view: GraphView, value: str) -> tuple[str, float, list[int]]:
    """Walk back through `Mul` by / `Div` by a scalar constant, each read only by the next step:
    the unscaled value, the product of the scales and the nodes walked."""
    scale, walked = 1.0, list[int]()
    while True:
        index = view.producer.get(value)
        if index is None or view.only_use(value) is None:
            return value, scale, walked
        node = view.nodes[index]
        a, b = node.input[0], node.input[1] if len(node.input) > 1 else ""
        scalar_a, scalar_b = view.scalar(a), view.scalar(b)
        if node.op_type == "Mul" and scalar_b is not None and a not in view.constants:
            value, scale = a, scale * scalar_b
        elif node.op_type == "Mul" and scalar_a is not None and b not in view.constants:
            value, scale = b, scale * scalar_a
        elif node.op_type == "Div" and scalar_b not in (None, 0.0) and a not in view.constants:
            assert scalar_b is not None
            value, scale = a, scale / scalar_b
        else:
            return value, scale, walked
        walked.append(index)


def past_nan_guard(view: GraphView, probabilities: str) -> tuple[str, list[int]]:
    """torch's dynamo exporter writes SDPA's softmax as `Where(IsNaN(p), 0, p)` (a fully masked
    row is 0, not NaN): the guarded value and its two nodes, else `probabilities` itself. With
    a causal or no mask no row is fully masked, so the guard is the identity."""
    uses = view.consumers.get(probabilities, [])
    if len(uses) != 2 or probabilities in view.outputs:
        return probabilities, []
    isnan = next((i for i in uses if view.nodes[i].op_type == "IsNaN"), None)
    select = next((i for i in uses if view.nodes[i].op_type == "Where"), None)
    if isnan is None or select is None:
        return probabilities, []
    condition, zero, kept = view.nodes[select].input
    if (condition != view.nodes[isnan].output[0] or view.only_use(condition) is None
            or kept != probabilities or view.scalar(zero) != 0.0):
        return probabilities, []
    return view.nodes[select].output[0], [isnan, select]


def match_attention(view: GraphView, softmax: int) -> AttentionMatch | None:
    """`softmax(scale * Q @ KT [+ mask]) @ V`, the softmax over the last axis."""
    node = view.nodes[softmax]
    probabilities, guard = past_nan_guard(view, node.output[0])
    matmul_v = view.only_use(probabilities)
    if matmul_v is None or view.nodes[matmul_v].op_type != "MatMul":
        return None
    if view.nodes[matmul_v].input[0] != probabilities:
        return None
    logits, mask, consumed = node.input[0], None, [softmax, *guard, matmul_v]
    key_mask, key_mask_add = None, None
    add = view.producing(logits, "Add")
    if add is not None and view.only_use(logits) is not None:
        a, b = view.nodes[add].input
        for scores, other in ((a, b), (b, a)):
            if other in view.constants and scores not in view.constants:
                logits, mask = scores, view.constants[other]
                consumed.append(add)
                break
            if other in view.key_masks and scores not in view.key_masks | view.constants:
                logits, key_mask, key_mask_add = scores, other, add
                consumed.append(add)
                break
    scores, scale, walked = scaled_by_constant(view, logits)
    consumed += walked
    matmul = view.producing(scores, "MatMul")
    if matmul is None or view.only_use(scores) is None:
        return None
    query, query_scale, walked_q = scaled_by_constant(view, view.nodes[matmul].input[0])
    key_t, key_scale, walked_k = scaled_by_constant(view, view.nodes[matmul].input[1])
    if query in view.constants or key_t in view.constants:
        return None
    consumed += [matmul, *walked_q, *walked_k]
    return AttentionMatch(
        anchor=matmul_v,
        consumed=consumed,
        query=query,
        key_transposed=key_t,
        value=view.nodes[matmul_v].input[1],
        scale=scale * query_scale * key_scale,
        mask=mask,
        softmax=softmax,
        key_mask=key_mask,
        key_mask_add=key_mask_add,
    )


def near(value: float | None, expected: float) -> bool:
    return value is not None and abs(value - expected) <= 1e-5 * abs(expected)


def match_gelu(view: GraphView, erf: int) -> GeluMatch | None:
    """`x * 0.5 * (1 + erf(x / sqrt 2))` in the orders exporters write it (the anchor is its
    last Mul)."""
    scaled = view.nodes[erf].input[0]
    divide = view.producer.get(scaled)
    if divide is None or view.only_use(scaled) is None:
        return None
    d = view.nodes[divide]
    if d.op_type == "Div" and near(view.scalar(d.input[1]), math.sqrt(2.0)):
        x = d.input[0]
    elif d.op_type == "Mul" and near(view.scalar(d.input[1]), 1 / math.sqrt(2.0)):
        x = d.input[0]
    else:
        return None
    add = view.only_use(view.nodes[erf].output[0])
    if add is None or view.nodes[add].op_type != "Add":
        return None
    a, b = view.nodes[add].input
    if not near(view.scalar(b if a == view.nodes[erf].output[0] else a), 1.0):
        return None
    product = view.only_use(view.nodes[add].output[0])
    if product is None or view.nodes[product].op_type != "Mul":
        return None
    other = [v for v in view.nodes[product].input if v != view.nodes[add].output[0]]
    if len(other) != 1:
        return None
    consumed = [divide, erf, add, product]
    if other[0] == x:  # (x * (1 + erf)) * 0.5
        half = view.only_use(view.nodes[product].output[0])
        if half is None or view.nodes[half].op_type != "Mul":
            return None
        h = view.nodes[half].input
        constant = h[1] if h[0] == view.nodes[product].output[0] else h[0]
        if not near(view.scalar(constant), 0.5):
            return None
        return GeluMatch(anchor=half, consumed=[*consumed, half], input=x)
    if near(view.scalar(other[0]), 0.5):  # x * (0.5 * (1 + erf)), torch's dynamo exporter
        outer = view.only_use(view.nodes[product].output[0])
        if outer is None or view.nodes[outer].op_type != "Mul":
            return None
        o = view.nodes[outer].input
        if sorted(o) != sorted([x, view.nodes[product].output[0]]):
            return None
        return GeluMatch(anchor=outer, consumed=[*consumed, outer], input=x)
    half = view.producing(other[0], "Mul")  # (x * 0.5) * (1 + erf)
    if half is None or view.only_use(other[0]) is None:
        return None
    h = view.nodes[half].input
    if not ((h[0] == x and near(view.scalar(h[1]), 0.5)) or
            (h[1] == x and near(view.scalar(h[0]), 0.5))):
        return None
    return GeluMatch(anchor=product, consumed=[*consumed, half], input=x)


def causal_mask_kind(mask: np.ndarray, logits_shape: tuple[int, ...]) -> str:
    """'none' (all zeros), 'causal' (0 on and below the diagonal, -inf above, the same for every
    head and batch) or 'general'.

    The mask is judged as it is stored, its leading axes never broadcast to the logits'
    (whose copies are equal to what they copy): GPT-2-small's [1024, 1024] mask would be a
    [12, 1024, 1024] float64 array, 100 MB, per layer."""
    try:
        if np.broadcast_shapes(mask.shape, logits_shape) != tuple(logits_shape):
            return "general"
    except ValueError:
        return "general"
    if not np.any(mask):
        return "none"
    rows, columns = logits_shape[-2:]
    if rows != columns:
        return "general"
    lead = mask.shape[:-2] if mask.ndim >= 2 else ()
    full = np.broadcast_to(mask, (*lead, rows, columns))
    future = np.triu(np.ones((rows, columns), dtype=bool), k=1)
    masked = full <= np.finfo(np.float32).min  # -inf, or the most negative float32
    if np.array_equal(masked, np.broadcast_to(future, full.shape)) and not np.any(full[~masked]):
        return "causal"
    return "general"
