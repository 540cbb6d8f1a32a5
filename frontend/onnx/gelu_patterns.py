"""The tanh form of GeLU as exporters expand it: one `graph.gelu approximate tanh`.

Hugging Face's `gelu_new` (GPT-2's activation) and torch's `gelu(approximate='tanh')` before
ONNX's opset 20 are exported as

    0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))

with the cube as `Pow(x, 3)` or `x * x * x`, every product in either operand order, and the
0.5 applied to x, to the sum or to the whole product. The match starts at the Tanh and walks
out both ways (`match_gelu_tanh`); its anchor is the last Mul. Every intermediate value must
be read only inside the pattern (`GraphView.only_use`), as for the Erf form
(frontend/onnx/patterns.py, `match_gelu`).
"""

from __future__ import annotations

import math

from frontend.onnx.patterns import GeluMatch, GraphView, near

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
CUBIC = 0.044715


def scaled_operand(view: GraphView, value: str, factor: float) -> tuple[str, int] | None:
    """(y, the Mul) when `value` is only read once and is `factor * y` (either order)."""
    index = view.producing(value, "Mul")
    if index is None or view.only_use(value) is None:
        return None
    a, b = view.nodes[index].input
    if near(view.scalar(b), factor) and a not in view.constants:
        return a, index
    if near(view.scalar(a), factor) and b not in view.constants:
        return b, index
    return None


def is_integer_constant(view: GraphView, value: str, expected: int) -> bool:
    array = view.constants.get(value)
    return array is not None and array.size == 1 and float(array.reshape(-1)[0]) == expected


def cube_of(view: GraphView, value: str) -> tuple[str, list[int]] | None:
    """(x, the nodes) when `value` (read once) is `Pow(x, 3)` or `x * x * x`."""
    index = view.producer.get(value)
    if index is None or view.only_use(value) is None:
        return None
    node = view.nodes[index]
    if node.op_type == "Pow" and is_integer_constant(view, node.input[1], 3):
        return node.input[0], [index]
    if node.op_type != "Mul":
        return None
    for square, base in ((node.input[0], node.input[1]), (node.input[1], node.input[0])):
        inner = view.producing(square, "Mul")
        if inner is not None and view.only_use(square) is not None:
            if list(view.nodes[inner].input) == [base, base]:
                return base, [inner, index]
    return None


def inner_argument(view: GraphView, tanh: int) -> tuple[str, list[int]] | None:
    """(x, the nodes) when the Tanh's input is `sqrt(2/pi) * (x + 0.044715 * x^3)`."""
    scaled = scaled_operand(view, view.nodes[tanh].input[0], SQRT_2_OVER_PI)
    if scaled is None:
        return None
    total, scale_node = scaled
    add = view.producing(total, "Add")
    if add is None or view.only_use(total) is None:
        return None
    a, b = view.nodes[add].input
    for x, term in ((a, b), (b, a)):
        cubic = scaled_operand(view, term, CUBIC)
        if cubic is None:
            continue
        cube = cube_of(view, cubic[0])
        if cube is not None and cube[0] == x and x not in view.constants:
            return x, [*cube[1], cubic[1], add, scale_node]
    return None


def other_input(view: GraphView, index: int, value: str) -> str | None:
    """The input of a binary node besides `value` (None if both are `value`)."""
    others = [v for v in view.nodes[index].input if v != value]
    return others[0] if len(others) == 1 else None


def halved_product(view: GraphView, x: str, one_plus: str) -> tuple[int, list[int]] | None:
    """(anchor, the nodes) of the product 0.5 * x * `one_plus`, in any association."""
    first = view.only_use(one_plus)
    if first is None or view.nodes[first].op_type != "Mul":
        return None
    other = other_input(view, first, one_plus)
    if other is None:
        return None
    if other == x or near(view.scalar(other), 0.5):
        # (x * u) * 0.5 or (0.5 * u) * x: the next Mul brings the missing factor
        second = view.only_use(view.nodes[first].output[0])
        if second is None or view.nodes[second].op_type != "Mul":
            return None
        last = other_input(view, second, view.nodes[first].output[0])
        wanted_half = other == x
        if last is None or not (near(view.scalar(last), 0.5) if wanted_half else last == x):
            return None
        return second, [first, second]
    halved = scaled_operand(view, other, 0.5)  # (0.5 * x) * u
    if halved is None or halved[0] != x:
        return None
    return first, [halved[1], first]


def match_gelu_tanh(view: GraphView, tanh: int) -> GeluMatch | None:
    """`0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` around this Tanh."""
    inner = inner_argument(view, tanh)
    if inner is None:
        return None
    x, consumed = inner
    add = view.only_use(view.nodes[tanh].output[0])
    if add is None or view.nodes[add].op_type != "Add":
        return None
    if not near(view.scalar(other_input(view, add, view.nodes[tanh].output[0]) or ""), 1.0):
        return None
    product = halved_product(view, x, view.nodes[add].output[0])
    if product is None:
        return None
    anchor, outer = product
    return GeluMatch(anchor=anchor, consumed=[*consumed, tanh, add, *outer], input=x,
                     approximate="tanh")
