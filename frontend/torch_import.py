"""`from_torch(module, example_inputs)`: a PyTorch module as graph IR, through `torch.export`.

    from frontend.torch_import import from_torch
    imported = from_torch(block, (x,))          # ImportedModel(module, weights)

`torch.export` traces the module at the example inputs' shapes (static) into ATen ops; each
maps to graph ops (`aten.linear` is a gemm with `transpose_rhs` and an add,
`scaled_dot_product_attention` is `graph.attention`, views and transposes are the layout ops).
The user inputs become the first arguments (named after the forward's parameters), then each
parameter or buffer an op reads, under its state-dict name. An ATen op without a mapping raises
`TorchImportError` naming the node, its target and its index: never a partial graph. Needs the
`torch` extra (`pip install -e '.[torch]'`); the test suite does not.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import f16, f32
from xdsl.utils.exceptions import VerifyException

from frontend.builder import GraphBuilder, GraphValue
from frontend.imported import ImportedModel, UniqueNames, matrix_product, remove_unused
from frontend.key_mask import KeyMaskTrace, elementwise, key_padding
from ipu_dialects.graph import INDEX_ELEMENT_TYPE, ReshapeOp

ELEMENT_TYPES = {"f32": (f32, np.float32), "f16": (f16, np.float16)}


class TorchImportError(Exception):
    """The exported program has an op or argument the importer cannot map (named)."""


def normalized(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


class TorchImporter:
    def __init__(self, program: Any, dtype: str, function: str):
        self.program = program
        self.element_type, self.numpy_dtype = ELEMENT_TYPES[dtype]
        self.builder = GraphBuilder(function)
        self.unique = UniqueNames()
        self.env: dict[str, Any] = {}  # fx node name -> GraphValue (or a list, for split)
        self.weights: dict[str, np.ndarray] = {}
        # placeholders of parameters, buffers and constants, and every node computed from them
        # alone (folded with torch itself): fx name -> (the weight's name, the tensor)
        self.constants: dict[str, tuple[str, Any]] = {}
        # token ids under another shape: fx name -> (the i32 argument, the shape); the graph
        # has no integer reshape, so graph.gather reads the argument and reshapes its rows
        self.index_views: dict[str, tuple[GraphValue, list[int]]] = {}
        self.skipped: set[str] = set()  # nodes a pattern's graph op computes
        self.patterns: dict[str, Callable[[], GraphValue]] = {}  # anchor -> its graph op
        # values computed from an integer input alone: possible key padding masks
        self.key_masks: dict[str, KeyMaskTrace] = {}

    @staticmethod
    def is_integer(node: Any) -> bool:
        value = node.meta.get("val")
        return value is not None and not value.dtype.is_floating_point

    def shape(self, node: Any) -> list[int]:
        return list(node.meta["val"].shape)

    def run(self) -> ImportedModel:
        signature = self.program.graph_signature
        state = {**self.program.state_dict, **getattr(self.program, "constants", {})}
        lifted = {**signature.inputs_to_parameters, **signature.inputs_to_buffers,
                  **getattr(signature, "inputs_to_lifted_tensor_constants", {})}
        nodes = list(self.program.graph.nodes)
        for node in nodes:
            if node.op != "placeholder":
                continue
            if node.name in lifted:
                target = lifted[node.name]
                self.constants[node.name] = (target, state[target].detach())
            elif node.name in signature.user_inputs and self.is_integer(node):
                # token ids or a padding mask: torch's int64, narrowed (range-checked) to i32
                # by the host
                self.env[node.name] = self.builder.index_input(
                    self.shape(node), name=self.unique(node.name))
                self.key_masks[node.name] = KeyMaskTrace.of_input(
                    self.env[node.name], node.name, self.shape(node))
            elif node.name in signature.user_inputs:
                self.env[node.name] = self.builder.input(
                    self.shape(node), self.element_type, name=self.unique(node.name))
        live = live_nodes(nodes)
        match_gelu_tanh(self, [n for n in nodes if n.name in live])
        computed = []
        for index, node in enumerate(nodes):
            if node.op == "call_function" and node.name in live and node.name not in self.skipped:
                if self.foldable(node):
                    self.constants[node.name] = (node.name, self.folded(index, node))
                else:
                    self.trace_key_mask(node)
                    computed.append((index, node))
        self.skipped |= mask_only_nodes(self.key_masks, [n for _, n in computed], live)
        for index, node in computed:
            if node.name not in self.skipped:
                self.env[node.name] = self.call(index, node)
        for node in nodes:
            if node.op == "output":
                self.builder.output(*[self.value(v, "the output") for v in node.args[0]])
        module = self.builder.build()
        remove_unused(module, self.weights)
        return ImportedModel(module, self.weights)

    def trace_key_mask(self, node: Any) -> None:
        """Follow a value computed from an integer input alone through an op that moves its
        elements or maps them one by one (frontend/key_mask.py)."""
        import torch

        name = getattr(node.target, "__name__", "")
        inputs = [a.name for a in node.all_input_nodes]
        traced = [a for a in inputs if a in self.key_masks]
        if not traced or any(a not in self.key_masks and a not in self.constants for a in inputs):
            return

        def tensor(arg: Any, value: Any = None) -> Any:
            """`arg` as torch computes it: a constant's tensor, a trace's `value` array."""
            if hasattr(arg, "name") and arg.name in self.constants:
                return self.constants[arg.name][1]
            if isinstance(arg, list | tuple):
                return type(arg)(tensor(a) for a in arg)
            if isinstance(value, np.ndarray):
                return torch.as_tensor(np.array(value))
            return arg

        def run(args: Sequence[Any]) -> np.ndarray:
            with torch.no_grad():
                return node.target(*args, **node.kwargs).numpy()

        trace: KeyMaskTrace | str | None = None
        try:
            first = getattr(node.args[0], "name", "") if node.args else ""
            if name in TORCH_MASK_MOVES and traced == [first]:
                trace = self.key_masks[first].moved(lambda a: run(
                    [tensor(node.args[0], a), *(tensor(x) for x in node.args[1:])]))
            elif name in TORCH_MASK_ELEMENTWISE:
                operands = [self.key_masks.get(getattr(a, "name", ""), a) for a in node.args]
                trace = elementwise(operands, lambda values: run(
                    [tensor(a, v) for a, v in zip(node.args, values, strict=True)]))
        except (RuntimeError, TypeError, ValueError, IndexError):  # not a value a trace follows
            return
        if isinstance(trace, KeyMaskTrace):
            self.key_masks[node.name] = trace

    def foldable(self, node: Any) -> bool:
        """Every tensor the node reads is a constant (static shapes make position ids, masks
        and token types constants): torch computes it here, once."""
        import torch

        operands = [a for a in node.all_input_nodes]
        return all(a.name in self.constants for a in operands) and not isinstance(
            node.meta.get("val"), list | tuple) and isinstance(node.meta.get("val"), torch.Tensor)

    def folded(self, index: int, node: Any) -> Any:
        import torch

        def substituted(arg: Any) -> Any:
            if hasattr(arg, "name") and arg.name in self.constants:
                return self.constants[arg.name][1]
            if isinstance(arg, list | tuple):
                return type(arg)(substituted(a) for a in arg)
            return arg

        try:
            with torch.no_grad():
                return node.target(*substituted(node.args),
                                   **{k: substituted(v) for k, v in node.kwargs.items()})
        except Exception as error:  # an op torch itself cannot run on these constants
            raise TorchImportError(f"node #{index} '{node.name}' ({node.target}): cannot "
                                   f"evaluate it on its constant inputs: {error}") from None

    def constant_value(self, key: str, state_name: str, tensor: Any, where: str) -> GraphValue:
        """A constant the importer makes (a transposed weight, a layer norm's identity affine)
        as a weight argument named `state_name`."""
        self.constants[key] = (state_name, tensor)
        return self.value(type("Named", (), {"name": key})(), where)

    def value(self, arg: Any, where: str) -> GraphValue:
        name = getattr(arg, "name", None)
        if name in self.env:
            return self.env[name]
        if name in self.constants:
            state_name, tensor = self.constants[name]
            if not tensor.dtype.is_floating_point:
                raise TorchImportError(
                    f"{where}: operand '{name}' is a constant of dtype {tensor.dtype} used as a "
                    "tensor; graph tensors are floating point")
            array = tensor.detach().cpu().numpy()
            arg_name = self.unique(state_name)
            self.weights[arg_name] = array.astype(self.numpy_dtype)
            self.env[name] = self.builder.input(list(array.shape), self.element_type, name=arg_name)
            return self.env[name]
        raise TorchImportError(f"{where}: operand {arg!r} is not a tensor the graph computes; "
                               "graph ops take tensors only")

    def call(self, index: int, node: Any) -> Any:
        target = node.target
        handler = HANDLERS.get(getattr(target, "__name__", str(target)))
        at = f"node #{index} '{node.name}' ({target})"
        if handler is None:
            raise TorchImportError(
                f"{at}: no graph op for this ATen op; from_torch maps linear, matmul, add, "
                "layer_norm, gelu, view/reshape, transpose/permute, split, slice, select, cat "
                "and scaled_dot_product_attention"
            )
        try:
            return handler(self, at, node)
        except VerifyException as error:
            raise TorchImportError(f"{at}: {error}") from None

    # -- handlers -----------------------------------------------------------------------------

    def args(self, node: Any, names: Sequence[str], defaults: dict[str, Any]) -> list[Any]:
        values = dict(defaults)
        values.update(zip(names, node.args))
        values.update(node.kwargs)
        return [values.get(n) for n in names]

    def linear(self, at: str, node: Any) -> GraphValue:
        x, weight, bias = self.args(node, ["x", "weight", "bias"], {"bias": None})
        if getattr(weight, "name", None) in self.constants:
            # a constant [out, in] weight is stored transposed, as torch's ONNX exporters store
            # it: the same plain gemm as the ONNX route (and so the same plans and cycles)
            state_name, tensor = self.constants[weight.name]
            y = matrix_product(self.builder, self.value(x, at), self.constant_value(
                f"{weight.name}.t", f"{state_name}.t", tensor.t().contiguous(), at))
        else:
            y = matrix_product(self.builder, self.value(x, at), self.value(weight, at),
                               transpose_rhs=True)
        return y if bias is None else self.builder.add(y, self.value(bias, at))

    def matmul(self, at: str, node: Any) -> GraphValue:
        return matrix_product(self.builder, self.value(node.args[0], at),
                              self.value(node.args[1], at))

    def add(self, at: str, node: Any) -> GraphValue:
        a, b, alpha = self.args(node, ["a", "b", "alpha"], {"alpha": 1})
        if alpha != 1:
            raise TorchImportError(f"{at}: add with alpha = {alpha}; graph.add has no scale")
        return self.builder.add(self.value(a, at), self.value(b, at))

    def layer_norm(self, at: str, node: Any) -> GraphValue:
        x, shape, weight, bias, eps = self.args(
            node, ["x", "shape", "weight", "bias", "eps"],
            {"weight": None, "bias": None, "eps": 1e-5})
        x_shape = self.shape(node.args[0])
        if list(shape) != x_shape[-1:]:
            raise TorchImportError(
                f"{at}: normalized_shape {list(shape)} of an input {x_shape}; graph.layer_norm "
                "normalizes the last axis only"
            )
        operands = []
        for what, v, fill in (("weight", weight, 1.0), ("bias", bias, 0.0)):
            if v is None:
                import torch

                operands.append(self.constant_value(f"{node.name}.{what}", f"{node.name}.{what}",
                                                    torch.full(list(shape), fill), at))
            else:
                operands.append(self.value(v, at))
        weight_value, bias_value = operands
        # eps as a float32 holds it, as the ONNX exporters write it: the same graph by both routes
        return self.builder.layer_norm(self.value(x, at), weight_value, bias_value,
                                       float(np.float32(eps)))

    def gelu(self, at: str, node: Any) -> GraphValue:
        approximate = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
        if approximate not in ("none", "tanh"):
            raise TorchImportError(f"{at}: approximate = '{approximate}'; graph.gelu is the exact "
                                   "(erf) GeLU or its tanh form")
        return self.builder.gelu(self.value(node.args[0], at),
                                 approximate=None if approximate == "none" else approximate)

    def reshape(self, at: str, node: Any) -> GraphValue:
        x = self.value(node.args[0], at)
        if list(x.shape) == self.shape(node) and node.args[0].name not in self.index_views:
            return x  # a view to its own shape (HF's attention output): nothing to do
        if x.type.get_element_type() != INDEX_ELEMENT_TYPE:
            if isinstance(x.value.owner, ReshapeOp):  # a view of a view: one reshape
                x = GraphValue(x.value.owner.operands[0], self.builder)
            return self.builder.reshape(x, self.shape(node))
        source = self.index_views.get(node.args[0].name, (x, list(x.shape)))[0]
        self.index_views[node.name] = (source, self.shape(node))
        return source

    def addmm(self, at: str, node: Any) -> GraphValue:
        bias, x, weight, beta, alpha = self.args(
            node, ["bias", "x", "weight", "beta", "alpha"], {"beta": 1, "alpha": 1})
        if beta != 1 or alpha != 1:
            raise TorchImportError(f"{at}: addmm with beta = {beta}, alpha = {alpha}; only "
                                   "beta = alpha = 1 maps to graph.gemm and graph.add")
        return self.builder.add(self.builder.gemm(self.value(x, at), self.value(weight, at)),
                                self.value(bias, at))

    def to(self, at: str, node: Any) -> GraphValue:
        dtype = node.kwargs.get("dtype")
        if dtype is not None and not dtype.is_floating_point:
            raise TorchImportError(f"{at}: casts a computed tensor to {dtype}; graph tensors "
                                   "stay floating point")
        return self.value(node.args[0], at)  # one element type for the whole graph (dtype)

    def pattern(self, at: str, node: Any) -> GraphValue:
        if node.name in self.patterns:
            return self.patterns[node.name]()
        raise TorchImportError(f"{at}: {PATTERN_ONLY[getattr(node.target, '__name__', '')]}")

    def transpose(self, at: str, node: Any) -> GraphValue:
        rank = len(self.shape(node))
        permutation = list(range(rank))
        a, b = (normalized(d, rank) for d in node.args[1:3])
        permutation[a], permutation[b] = b, a
        return self.builder.transpose(self.value(node.args[0], at), permutation)

    def t(self, at: str, node: Any) -> GraphValue:
        return self.builder.transpose(self.value(node.args[0], at), [1, 0])

    def permute(self, at: str, node: Any) -> GraphValue:
        rank = len(self.shape(node))
        dims = [normalized(d, rank) for d in node.args[1]]
        return self.builder.transpose(self.value(node.args[0], at), dims)

    def split(self, at: str, node: Any) -> list[GraphValue]:
        x, sizes, dim = self.args(node, ["x", "sizes", "dim"], {"dim": 0})
        shape = self.shape(x)
        dim = normalized(dim, len(shape))
        if isinstance(sizes, int):
            sizes = [min(sizes, shape[dim] - s) for s in range(0, shape[dim], sizes)]
        parts, start, value = [], 0, self.value(x, at)
        for size in sizes:
            starts, ends = [0] * len(shape), list(shape)
            starts[dim], ends[dim] = start, start + size
            parts.append(self.builder.slice(value, starts, ends))
            start += size
        return parts

    def slice(self, at: str, node: Any) -> GraphValue:
        x, dim, start, end, step = self.args(
            node, ["x", "dim", "start", "end", "step"], {"dim": 0, "start": None, "end": None,
                                                        "step": 1})
        shape = self.shape(x)
        dim = normalized(dim, len(shape))
        start, end, step = slice(start, end, step).indices(shape[dim])
        starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
        starts[dim], ends[dim], steps[dim] = start, end, step
        return self.builder.slice(self.value(x, at), starts, ends, steps)

    def select(self, at: str, node: Any) -> GraphValue:
        """x[..., index, ...] along `dim`: the slice of extent 1 there, viewed without it (the
        ONNX exporters' Gather by a constant index, which the ONNX importer maps the same way)."""
        x, dim, index = self.args(node, ["x", "dim", "index"], {})
        shape = self.shape(x)
        dim = normalized(dim, len(shape))
        index = normalized(index, shape[dim])
        starts, ends = [0] * len(shape), list(shape)
        starts[dim], ends[dim] = index, index + 1
        return self.builder.reshape(self.builder.slice(self.value(x, at), starts, ends),
                                    self.shape(node))

    def dropout(self, at: str, node: Any) -> GraphValue:
        x, p, train = self.args(node, ["x", "p", "train"], {"p": 0.5, "train": True})
        if train and p:
            raise TorchImportError(f"{at}: dropout with p = {p} in training mode; export the "
                                   "module in eval mode")
        return self.value(x, at)

    def cat(self, at: str, node: Any) -> GraphValue:
        tensors, dim = self.args(node, ["tensors", "dim"], {"dim": 0})
        rank = len(self.shape(node))
        return self.builder.concat([self.value(t, at) for t in tensors], normalized(dim, rank))

    def attention(self, at: str, node: Any) -> GraphValue:
        q, k, v, mask, dropout, causal, scale = self.args(
            node, ["q", "k", "v", "attn_mask", "dropout_p", "is_causal", "scale"],
            {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None})
        q_shape, k_shape = self.shape(q), self.shape(k)
        logits = (*q_shape[:-1], k_shape[-2])
        key_mask = None
        if getattr(mask, "name", None) in self.key_masks:
            trace = self.key_masks[mask.name]
            found = key_padding(trace, logits, boolean=trace.kept.dtype == np.bool_)
            if isinstance(found, str):
                raise TorchImportError(f"{at}: {found}")
            causal, key_mask = causal or found, trace.argument
        elif mask is not None:
            causal = self.constant_mask_is_causal(at, mask, logits)
        if dropout:
            raise TorchImportError(f"{at}: dropout_p = {dropout}; export the module in eval "
                                   "mode without attention dropout")
        default = 1.0 / math.sqrt(q_shape[-1])
        if scale is not None and abs(scale - default) <= 1e-6 * default:
            scale = None  # HF passes the default scale explicitly; the ONNX route drops it too
        return self.builder.attention(self.value(q, at), self.value(k, at), self.value(v, at),
                                      causal=bool(causal), scale=scale, key_mask=key_mask)

    def constant_mask_is_causal(self, at: str, mask: Any, logits: tuple[int, ...]) -> bool:
        """A constant attention mask (static shapes fold the ones HF builds) is causal, or
        attends everywhere; anything else is a general mask graph.attention does not have."""
        from frontend.onnx.patterns import causal_mask_kind

        if getattr(mask, "name", None) not in self.constants:
            raise TorchImportError(f"{at}: an attn_mask computed at run time (a general mask); "
                                   "graph.attention supports causal masking only")
        tensor = self.constants[mask.name][1]
        additive = (np.where(tensor.numpy(), 0.0, -np.inf) if tensor.dtype == torch_bool()
                    else tensor.double().numpy())
        kind = causal_mask_kind(additive, logits)
        if kind == "general":
            raise TorchImportError(f"{at}: an explicit attn_mask (a general mask) of shape "
                                   f"{list(tensor.shape)}; graph.attention supports causal "
                                   "masking only")
        return kind == "causal"

    def embedding(self, at: str, node: Any) -> GraphValue:
        weight, indices = node.args[0], node.args[1]
        ids = self.value(indices, at)
        rows = self.builder.gather(self.value(weight, at), ids)
        view = self.index_views.get(indices.name, (ids, list(ids.shape)))[1]
        if list(view) == list(ids.shape):
            return rows
        return self.builder.reshape(rows, [*view, rows.shape[-1]])

    def unflatten(self, at: str, node: Any) -> GraphValue:
        return self.builder.reshape(self.value(node.args[0], at), self.shape(node))

    def refused(self, at: str, node: Any) -> GraphValue:
        raise TorchImportError(f"{at}: {REFUSED[getattr(node.target, '__name__', '')]}")

    def identity(self, at: str, node: Any) -> GraphValue:
        return self.value(node.args[0], at)

    def getitem(self, at: str, node: Any) -> GraphValue:
        return self.env[node.args[0].name][node.args[1]]


def torch_bool() -> Any:
    import torch

    return torch.bool


def mask_only_nodes(key_masks: dict[str, Any], nodes: list[Any], live: set[str]) -> set[str]:
    """Traced nodes whose values reach nothing but attention masks (`attn_mask` of
    scaled_dot_product_attention, whose handler makes the mask input its key_mask): no graph
    op."""
    only: set[str] = set()
    for node in reversed(nodes):
        if node.name not in key_masks:
            continue
        users = [u for u in node.users if u.name in live]
        if users and all(u.name in only or is_attention_mask_use(u, node) for u in users):
            only.add(node.name)
    return only


def is_attention_mask_use(user: Any, node: Any) -> bool:
    if getattr(user.target, "__name__", "") != "scaled_dot_product_attention.default":
        return False
    mask = user.kwargs.get("attn_mask", user.args[3] if len(user.args) > 3 else None)
    return mask is node and node not in user.args[:3]


def live_nodes(nodes: list[Any]) -> set[str]:
    """The nodes the output depends on: torch.export keeps others (BERT's pooler when only the
    last hidden state is returned, `_assert_tensor_metadata`), which need no graph op."""
    live: set[str] = set()
    pending = [n for n in nodes if n.op == "output"]
    while pending:
        node = pending.pop()
        if node.name not in live:
            live.add(node.name)
            pending.extend(node.all_input_nodes)
    return live


def scalar_operand(node: Any, target: str, factor: float) -> Any:
    """The tensor operand of `node` when it is `target` (an ATen overload's name) of a tensor
    and a Python number equal to `factor` (either order), else None."""
    if getattr(node.target, "__name__", "") != target or len(node.args) != 2 or node.kwargs:
        return None
    for tensor, number in (node.args, reversed(node.args)):
        if (hasattr(tensor, "name") and isinstance(number, int | float)
                and abs(number - factor) <= 1e-5 * abs(factor)):
            return tensor
    return None


def only_user(node: Any) -> Any:
    return next(iter(node.users)) if len(node.users) == 1 else None


def match_gelu_tanh(importer: TorchImporter, nodes: list[Any]) -> None:
    """`0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` as HF's `gelu_new` traces
    (`mul`, `pow`, `add`, `tanh`): one `graph.gelu approximate tanh` at its last mul; the ONNX
    importer's match of the same expansion is frontend/onnx/gelu_patterns.py."""
    for tanh in (n for n in nodes if getattr(n.target, "__name__", "") == "tanh.default"):
        inner = scalar_operand(tanh.args[0], "mul.Tensor", math.sqrt(2 / math.pi))
        if inner is None or only_user(tanh.args[0]) is not tanh or len(inner.args) != 2:
            continue
        if getattr(inner.target, "__name__", "") != "add.Tensor" or only_user(inner) is None:
            continue
        for x, term in (inner.args, reversed(inner.args)):
            cube = scalar_operand(term, "mul.Tensor", 0.044715) if hasattr(term, "name") else None
            if cube is None or only_user(term) is None or only_user(cube) is None:
                continue
            if scalar_operand(cube, "pow.Tensor_Scalar", 3.0) is not x:
                continue
            one_plus = only_user(tanh)
            if one_plus is None or scalar_operand(one_plus, "add.Tensor", 1.0) is not tanh:
                break
            product = only_user(one_plus)
            if product is None or getattr(product.target, "__name__", "") != "mul.Tensor":
                break
            half = next((a for a in product.args if a is not one_plus), None)
            if half is None or scalar_operand(half, "mul.Tensor", 0.5) is not x or only_user(
                    half) is not product:
                break
            importer.skipped |= {n.name for n in (half, cube, term, inner, tanh.args[0], tanh,
                                                  one_plus)}
            importer.patterns[product.name] = gelu_tanh_of(importer, x, product.name)
            break


def gelu_tanh_of(importer: TorchImporter, x: Any, at: str) -> Callable[[], GraphValue]:
    return lambda: importer.builder.gelu(importer.value(x, at), approximate="tanh")


# ATen ops a key mask is followed through (frontend/key_mask.py): those that move the elements
# of their first operand (the others constants), and elementwise ones
TORCH_MASK_MOVES = frozenset({
    "index.Tensor", "expand.default", "view.default", "reshape.default", "_unsafe_view.default",
    "unsqueeze.default", "squeeze.dim", "slice.Tensor", "select.int", "permute.default",
    "transpose.int", "alias.default", "clone.default", "contiguous.default"})
TORCH_MASK_ELEMENTWISE = frozenset({
    "to.dtype", "to.dtype_layout", "to.device", "_to_copy.default", "__and__.Tensor",
    "bitwise_and.Tensor", "logical_and.default", "logical_not.default", "bitwise_not.default",
    "mul.Tensor", "sub.Tensor", "rsub.Scalar", "add.Tensor", "where.self", "eq.Scalar",
    "ne.Scalar", "neg.default", "masked_fill.Scalar"})

# ATen ops these models produce that have no graph op, with the reason in the user's terms
# (on constants every op folds: position ids from arange, masks from ones, token types).
REFUSED = {
    "arange.default": "aten.arange of run-time extents; the model needs static shapes",
    "arange.start": "aten.arange of run-time extents; the model needs static shapes",
    "ones.default": "aten.ones of run-time extents; the model needs static shapes",
    "expand.default": "aten.expand of a tensor computed at run time has no graph op "
                      "(graph.add broadcasts its operands itself)",
}

# ATen ops imported only inside a pattern (one graph op for several ATen ops).
PATTERN_ONLY = {
    name: f"aten.{name.split('.')[0]} on a tensor computed at run time is imported only as part "
          "of GeLU's tanh form, 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), and "
          "this one does not fit that pattern"
    for name in ("mul.Tensor", "tanh.default", "pow.Tensor_Scalar")
}

HANDLERS: dict[str, Callable[[TorchImporter, str, Any], Any]] = {
    "linear.default": TorchImporter.linear,
    "matmul.default": TorchImporter.matmul,
    "mm.default": TorchImporter.matmul,
    "bmm.default": TorchImporter.matmul,
    "add.Tensor": TorchImporter.add,
    "layer_norm.default": TorchImporter.layer_norm,
    "gelu.default": TorchImporter.gelu,
    "view.default": TorchImporter.reshape,
    "reshape.default": TorchImporter.reshape,
    "_unsafe_view.default": TorchImporter.reshape,
    "transpose.int": TorchImporter.transpose,
    "t.default": TorchImporter.t,
    "permute.default": TorchImporter.permute,
    "split.Tensor": TorchImporter.split,
    "split_with_sizes.default": TorchImporter.split,
    "slice.Tensor": TorchImporter.slice,
    "cat.default": TorchImporter.cat,
    "scaled_dot_product_attention.default": TorchImporter.attention,
    "embedding.default": TorchImporter.embedding,
    "unflatten.int": TorchImporter.unflatten,
    "unsqueeze.default": TorchImporter.reshape,
    "squeeze.dim": TorchImporter.reshape,
    "addmm.default": TorchImporter.addmm,
    "to.dtype_layout": TorchImporter.to,
    "to.dtype": TorchImporter.to,
    **{name: TorchImporter.pattern for name in PATTERN_ONLY},
    "alias.default": TorchImporter.identity,
    "contiguous.default": TorchImporter.identity,
    "clone.default": TorchImporter.identity,
    "dropout.default": TorchImporter.dropout,
    "select.int": TorchImporter.select,
    operator.getitem.__name__: TorchImporter.getitem,
    **{name: TorchImporter.refused for name in REFUSED},
}


def from_torch(module: Any, example_inputs: Sequence[Any], dtype: str = "f32",
               function: str = "main") -> ImportedModel:
    """Trace `module` (in eval mode) with `torch.export` at `example_inputs` and import it."""
    import torch

    if dtype not in ELEMENT_TYPES:
        raise TorchImportError(f"dtype '{dtype}' is not one of {', '.join(ELEMENT_TYPES)}")
    program = torch.export.export(module.eval(), tuple(example_inputs))
    return TorchImporter(program, dtype, function).run()
