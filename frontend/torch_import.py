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

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import f16, f32
from xdsl.utils.exceptions import VerifyException

from frontend.builder import GraphBuilder, GraphValue
from frontend.imported import ImportedModel, UniqueNames

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
        self.lifted: dict[str, tuple[str, np.ndarray]] = {}  # placeholder -> (state name, array)

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
                self.lifted[node.name] = (target, state[target].detach().cpu().numpy())
            elif node.name in signature.user_inputs and self.is_integer(node):
                # token ids: torch's int64, narrowed (range-checked) to i32 by the host
                self.env[node.name] = self.builder.index_input(
                    self.shape(node), name=self.unique(node.name))
            elif node.name in signature.user_inputs:
                self.env[node.name] = self.builder.input(
                    self.shape(node), self.element_type, name=self.unique(node.name))
        for index, node in enumerate(nodes):
            if node.op == "call_function":
                self.env[node.name] = self.call(index, node)
            elif node.op == "output":
                self.builder.output(*[self.value(v, "the output") for v in node.args[0]])
        return ImportedModel(self.builder.build(), self.weights)

    def value(self, arg: Any, where: str) -> GraphValue:
        name = getattr(arg, "name", None)
        if name in self.env:
            return self.env[name]
        if name in self.lifted:
            state_name, array = self.lifted[name]
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
                "layer_norm, gelu, view/reshape, transpose/permute, split, slice, cat and "
                "scaled_dot_product_attention"
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
        y = self.builder.gemm(self.value(x, at), self.value(weight, at), transpose_rhs=True)
        return y if bias is None else self.builder.add(y, self.value(bias, at))

    def matmul(self, at: str, node: Any) -> GraphValue:
        return self.builder.gemm(self.value(node.args[0], at), self.value(node.args[1], at))

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
                self.lifted[f"{node.name}.{what}"] = (f"{node.name}.{what}",
                                                      np.full(shape, fill, np.float32))
                v = type("Named", (), {"name": f"{node.name}.{what}"})()
            operands.append(self.value(v, at))
        weight_value, bias_value = operands
        return self.builder.layer_norm(self.value(x, at), weight_value, bias_value, float(eps))

    def gelu(self, at: str, node: Any) -> GraphValue:
        approximate = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
        if approximate not in ("none", "tanh"):
            raise TorchImportError(f"{at}: approximate = '{approximate}'; graph.gelu is the exact "
                                   "(erf) GeLU or its tanh form")
        return self.builder.gelu(self.value(node.args[0], at),
                                 approximate=None if approximate == "none" else approximate)

    def reshape(self, at: str, node: Any) -> GraphValue:
        return self.builder.reshape(self.value(node.args[0], at), self.shape(node))

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

    def cat(self, at: str, node: Any) -> GraphValue:
        tensors, dim = self.args(node, ["tensors", "dim"], {"dim": 0})
        rank = len(self.shape(node))
        return self.builder.concat([self.value(t, at) for t in tensors], normalized(dim, rank))

    def attention(self, at: str, node: Any) -> GraphValue:
        q, k, v, mask, dropout, causal, scale = self.args(
            node, ["q", "k", "v", "attn_mask", "dropout_p", "is_causal", "scale"],
            {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None})
        if mask is not None:
            raise TorchImportError(f"{at}: an explicit attn_mask (a general mask); "
                                   "graph.attention supports is_causal masking only")
        if dropout:
            raise TorchImportError(f"{at}: dropout_p = {dropout}; export the module in eval "
                                   "mode without attention dropout")
        return self.builder.attention(self.value(q, at), self.value(k, at), self.value(v, at),
                                      causal=bool(causal), scale=scale)

    def embedding(self, at: str, node: Any) -> GraphValue:
        weight, indices = node.args[0], node.args[1]
        return self.builder.gather(self.value(weight, at), self.value(indices, at))

    def unflatten(self, at: str, node: Any) -> GraphValue:
        return self.builder.reshape(self.value(node.args[0], at), self.shape(node))

    def refused(self, at: str, node: Any) -> GraphValue:
        raise TorchImportError(f"{at}: {REFUSED[getattr(node.target, '__name__', '')]}")

    def identity(self, at: str, node: Any) -> GraphValue:
        return self.value(node.args[0], at)

    def getitem(self, at: str, node: Any) -> GraphValue:
        return self.env[node.args[0].name][node.args[1]]


# ATen ops these models produce that have no graph op, with the reason in the user's terms.
REFUSED = {
    "arange.default": "aten.arange builds position ids at run time; graph tensors are inputs "
                      "or computed by graph ops: pass the position ids as an input (or add the "
                      "position-embedding rows as a weight)",
    "arange.start": "aten.arange builds position ids at run time; pass them as an input",
    "ones.default": "aten.ones builds a mask at run time; a padding mask is an input added "
                    "before the softmax (graph.attention has no general mask)",
    "expand.default": "aten.expand has no graph op (graph.add broadcasts its operands itself)",
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
    "alias.default": TorchImporter.identity,
    "contiguous.default": TorchImporter.identity,
    "clone.default": TorchImporter.identity,
    "dropout.default": TorchImporter.identity,
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
