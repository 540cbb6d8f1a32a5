"""Transformer layers and stacks of them at the sizes people run, built with `GraphBuilder`.

    from frontend.models import GPT2_SMALL, build_model, tiny

    module = build_model(GPT2_SMALL)          # one GPT-2-small decoder layer, FP16
    module = build_model(tiny(GPT2_SMALL))    # the same program at a size a test can run

One layer (`transformer_layer`) is multi-head self-attention and a GeLU MLP, each with its
bias and a residual add, and two layer norms, in one of two arrangements:

- `norm="pre"` (GPT-2): `h = x + attn(ln_1(x))`, `out = h + mlp(ln_2(h))`;
- `norm="post"` (BERT): `h = ln_1(x + attn(x))`, `out = ln_2(h + mlp(h))`.

The heads (`heads_form="fused"`, the default) are split and merged with `reshape` and
`transpose` (`[T, D] -> [T, H, Dh] -> [H, T, Dh]`, one `graph.attention` over all heads, and
back); `heads_form="split"` writes the same layer with one `graph.attention` and its own
`[D, Dh]` projection weights per head, as `examples/transformer_block.mlir` does. The
projections are `[.., T, D] @ [D, N]` GEMMs with `[N]` biases. Activations are `[seq,
d_model]` for batch 1 and `[batch, seq, d_model]` otherwise.

A config with `layers > 1` is a stack of identical layers as one `graph.repeat`: the
activation is carried, each weight is one function argument holding every layer's copy
stacked (`[layers, ...]`, a repeat sequence), as `ipu-import --repeat-layers` makes it
(`frontend/repeat_layers.py`).

The weights are function arguments named after GPT-2's (`ln_1.weight`, `attn.q.weight`, ...;
`layers.` in front for a stack), so `ipu-run`'s seeded random inputs run any of these programs.
`matrix_macs` counts the multiply-accumulates of every matrix product (the projections, the
MLP, and attention's Q.K^T and P.V in full, causal or not) from the config; the bench's
roofline uses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from xdsl.dialects.builtin import ModuleOp

from frontend.builder import GraphBuilder, GraphValue, as_element_type

__all__ = [
    "BERT_BASE", "BERT_BASE_B8", "BERT_BASE_SPLIT", "BERT_BASE_STACK", "BERT_LARGE", "GPT2_SMALL",
    "GPT2_SMALL_SPLIT", "GPT2_STACK",
    "MODELS", "TransformerConfig", "attention_program", "build_model", "layer_weights", "matrix_macs", "tiny",
    "transformer_layer",
]


@dataclass(frozen=True)
class TransformerConfig:
    """One transformer layer's sizes (`layers > 1`: that many of it as one `graph.repeat`)."""

    name: str
    seq: int
    d_model: int
    heads: int
    mlp: int
    causal: bool
    norm: Literal["pre", "post"]
    batch: int = 1  # 1: activations [seq, d_model]; more: [batch, seq, d_model]
    layers: int = 1
    element_type: str = "f16"
    eps: float = 1e-5
    # "fused": all heads in one graph.attention (reshape/transpose); "split": one
    # graph.attention and its own projection weights per head, heads merged by a sum of
    # per-head output projections (examples/transformer_block.mlir's form)
    heads_form: Literal["fused", "split"] = "fused"

    def __post_init__(self) -> None:
        # sizes first: heads = 0 would otherwise be a ZeroDivisionError in the modulo below
        if min(self.seq, self.d_model, self.heads, self.mlp, self.batch, self.layers) < 1:
            raise ValueError(f"{self.name}: every size must be >= 1")
        if self.d_model % self.heads:
            raise ValueError(f"{self.name}: d_model {self.d_model} is not a multiple of "
                             f"{self.heads} heads")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def activation_shape(self) -> list[int]:
        return ([] if self.batch == 1 else [self.batch]) + [self.seq, self.d_model]


GPT2_SMALL = TransformerConfig("gpt2-small", seq=1024, d_model=768, heads=12, mlp=3072,
                               causal=True, norm="pre")
BERT_BASE = TransformerConfig("bert-base", seq=384, d_model=768, heads=12, mlp=3072,
                              causal=False, norm="post", eps=1e-12)
BERT_BASE_B8 = replace(BERT_BASE, name="bert-base-b8", batch=8)
BERT_LARGE = TransformerConfig("bert-large", seq=384, d_model=1024, heads=16, mlp=4096,
                               causal=False, norm="post", eps=1e-12)
GPT2_STACK = replace(GPT2_SMALL, name="gpt2-small-x12", layers=12)
BERT_BASE_STACK = replace(BERT_BASE, name="bert-base-x12", layers=12)
GPT2_SMALL_SPLIT = replace(GPT2_SMALL, name="gpt2-small-split", heads_form="split")
BERT_BASE_SPLIT = replace(BERT_BASE, name="bert-base-split", heads_form="split")

MODELS: dict[str, TransformerConfig] = {c.name: c for c in (
    GPT2_SMALL, BERT_BASE, BERT_BASE_B8, BERT_LARGE, GPT2_STACK, BERT_BASE_STACK,
    GPT2_SMALL_SPLIT, BERT_BASE_SPLIT)}


def tiny(config: TransformerConfig, seq: int = 32, d_model: int = 64, heads: int = 2,
         mlp: int = 128, batch: int = 2, layers: int = 2) -> TransformerConfig:
    """`config`'s program at a small size: its arrangement (norm, causal, element type) with
    these sizes; batch and layers only shrink (a batch-1 model stays batch 1, a single layer
    stays one layer)."""
    return replace(config, name=f"{config.name}-tiny", seq=seq, d_model=d_model, heads=heads,
                   mlp=mlp, batch=min(batch, config.batch), layers=min(layers, config.layers))


def layer_weights(config: TransformerConfig) -> list[tuple[str, list[int]]]:
    """(name, shape) of one layer's weights, in argument order."""
    d, f, dh = config.d_model, config.mlp, config.head_dim
    weights = [("ln_1.weight", [d]), ("ln_1.bias", [d])]
    if config.heads_form == "fused":
        for p in "qkv":
            weights += [(f"attn.{p}.weight", [d, d]), (f"attn.{p}.bias", [d])]
        weights += [("attn.proj.weight", [d, d])]
    else:
        for h in range(config.heads):
            for p in "qkv":
                weights += [(f"attn.{p}{h}.weight", [d, dh]), (f"attn.{p}{h}.bias", [dh])]
            weights += [(f"attn.proj{h}.weight", [dh, d])]
    weights += [("attn.proj.bias", [d]),
                ("ln_2.weight", [d]), ("ln_2.bias", [d]),
                ("mlp.fc.weight", [d, f]), ("mlp.fc.bias", [f]),
                ("mlp.proj.weight", [f, d]), ("mlp.proj.bias", [d])]
    return weights


def split_heads(g: GraphBuilder, config: TransformerConfig, x: GraphValue) -> GraphValue:
    """[.., T, D] -> [.., H, T, Dh]."""
    lead = x.shape[:-2]
    split = g.reshape(x, [*lead, config.seq, config.heads, config.head_dim])
    n = len(lead)
    return g.transpose(split, [*range(n), n + 1, n, n + 2])


def merge_heads(g: GraphBuilder, config: TransformerConfig, x: GraphValue) -> GraphValue:
    """[.., H, T, Dh] -> [.., T, D]."""
    n = len(x.shape) - 3
    merged = g.transpose(x, [*range(n), n + 1, n, n + 2])
    return g.reshape(merged, [*x.shape[:-3], config.seq, config.d_model])


def attention_block(g: GraphBuilder, config: TransformerConfig, x: GraphValue,
                    w: dict[str, GraphValue]) -> GraphValue:
    """Multi-head self-attention of x [.., T, D] with its output projection and bias."""
    if config.heads_form == "split":
        return split_attention_block(g, config, x, w)
    q, k, v = (split_heads(g, config, x @ w[f"attn.{p}.weight"] + w[f"attn.{p}.bias"])
               for p in "qkv")
    heads = g.attention(q, k, v, causal=config.causal)
    return merge_heads(g, config, heads) @ w["attn.proj.weight"] + w["attn.proj.bias"]


def split_attention_block(g: GraphBuilder, config: TransformerConfig, x: GraphValue,
                          w: dict[str, GraphValue]) -> GraphValue:
    """One graph.attention per head ([.., 1, T, Dh]); the head merge concat(o_h) @ W_o as
    its equal sum of o_h @ W_o[h]."""
    lead = list(x.shape[:-2])
    merged = None
    for h in range(config.heads):
        q, k, v = (g.reshape(x @ w[f"attn.{p}{h}.weight"] + w[f"attn.{p}{h}.bias"],
                             [*lead, 1, config.seq, config.head_dim]) for p in "qkv")
        head = g.reshape(g.attention(q, k, v, causal=config.causal),
                         [*lead, config.seq, config.head_dim])
        projected = head @ w[f"attn.proj{h}.weight"]
        merged = projected if merged is None else merged + projected
    assert merged is not None
    return merged + w["attn.proj.bias"]


def mlp_block(g: GraphBuilder, x: GraphValue, w: dict[str, GraphValue]) -> GraphValue:
    up = g.gelu(x @ w["mlp.fc.weight"] + w["mlp.fc.bias"])
    return up @ w["mlp.proj.weight"] + w["mlp.proj.bias"]


def transformer_layer(g: GraphBuilder, config: TransformerConfig, x: GraphValue,
                      w: dict[str, GraphValue]) -> GraphValue:
    """One layer on x ([seq, d_model] or [batch, seq, d_model]); `w` by `layer_weights` name."""
    def norm(value: GraphValue, which: str) -> GraphValue:
        return g.layer_norm(value, w[f"{which}.weight"], w[f"{which}.bias"], config.eps)

    if config.norm == "pre":
        h = x + attention_block(g, config, norm(x, "ln_1"), w)
        return h + mlp_block(g, norm(h, "ln_2"), w)
    h = norm(x + attention_block(g, config, x, w), "ln_1")
    return norm(h + mlp_block(g, h, w), "ln_2")


def build_model(config: TransformerConfig) -> ModuleOp:
    """The verified module of `config`: `func.func @<name>(x, weights...) -> out`."""
    g = GraphBuilder(config.name.replace("-", "_"))
    dtype = as_element_type(config.element_type)
    x = g.input(config.activation_shape, dtype, name="x")
    if config.layers == 1:
        w = {name: g.input(shape, dtype, name=name) for name, shape in layer_weights(config)}
        g.output(transformer_layer(g, config, x, w))
        return g.build()
    stacked = [g.input([config.layers, *shape], dtype, name=f"layers.{name}")
               for name, shape in layer_weights(config)]
    names = [name for name, _ in layer_weights(config)]

    def layer(carried, _invariants, slices):
        return [transformer_layer(g, config, carried[0], dict(zip(names, slices, strict=True)))]

    (out,) = g.repeat(config.layers, layer, carried=[x], sequence=stacked)
    g.output(out)
    return g.build()


def attention_program(query: Sequence[int], key: Sequence[int], element: object,
                      causal: bool) -> ModuleOp:
    """One `graph.attention` as a whole program `@attn`: inputs q of shape `query`
    ([..., heads, seq, head_dim]) and k, v of shape `key`, all of `element` (`as_element_type`)."""
    g, dtype = GraphBuilder("attn"), as_element_type(element)
    q = g.input(list(query), dtype, name="q")
    k = g.input(list(key), dtype, name="k")
    v = g.input(list(key), dtype, name="v")
    g.output(g.attention(q, k, v, causal=causal))
    return g.build()


def matrix_macs(config: TransformerConfig) -> int:
    """Multiply-accumulates of every matrix product of the program: Q, K, V and output
    projections, the MLP's two GEMMs, and attention's Q.K^T and P.V over the whole
    seq x seq score matrix (causal masking counted as computed)."""
    rows = config.batch * config.seq
    projections = 4 * rows * config.d_model * config.d_model
    mlp = 2 * rows * config.d_model * config.mlp
    attention = 2 * config.batch * config.heads * config.seq * config.seq * config.head_dim
    return config.layers * (projections + mlp + attention)
