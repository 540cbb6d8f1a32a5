"""Build the ONNX fixtures of the importer's tests from a GPT-2-style block in PyTorch.

    pip install torch onnx        # not needed to run the tests, only to rebuild the fixtures
    python examples/onnx/make_fixtures.py

writes, next to this script, `gpt2_block.onnx` (one block) and `gpt2_stack4.onnx` (four blocks),
each with `<name>.io.npz` holding the example input `x` and the torch output `y` (float32).
The block is pre-LayerNorm, causal scaled-dot-product attention with 2 heads, and a GeLU MLP at
width 128, sequence 64, batch 1; the weights are random (seeded) and the export uses the
TorchScript-based `torch.onnx.export` at opset 17, which wraps attention in shape arithmetic
(Shape, Slice, Cast, Sqrt, Trilu, Where, Expand, ...) that the importer folds.

`Block(width, heads, mlp)` and `gpt2_small(layers, ...)` are the same block at any size:
`bench/import_gpt2.py` exports it at GPT-2-small's (`GPT2_SMALL_SHAPE`: sequence 1024, width 768,
12 heads, MLP 3072) at run time, since a full-size layer holds 28 MB of float32 weights, and the
importer's tests use it at a small size (`SMALL_SHAPE`: sequence 32, width 64, 2 heads).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

WIDTH, HEADS, SEQUENCE, BATCH = 128, 2, 64, 1
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Shape:
    """A block's sizes and the example input's (batch 1: `[1, sequence, width]`)."""

    sequence: int
    width: int
    heads: int
    mlp: int


GPT2_SMALL_SHAPE = Shape(sequence=1024, width=768, heads=12, mlp=3072)
SMALL_SHAPE = Shape(sequence=32, width=64, heads=2, mlp=128)


class Block(nn.Module):
    """Pre-LayerNorm GPT-2 block: causal multi-head attention (`scaled_dot_product_attention`)
    and an exact-GeLU MLP, each with a residual add, on `[..., sequence, width]` (the fixtures
    are `[1, sequence, width]`). The Q, K and V projections are one fused `qkv` Linear, as
    GPT-2's `c_attn`, or with `fused_qkv=False` three (`q`, `k`, `v`), as
    `frontend.models.transformer_layer` writes them."""

    def __init__(self, width: int = WIDTH, heads: int = HEADS, mlp: int | None = None,
                 fused_qkv: bool = True) -> None:
        super().__init__()
        mlp = 4 * width if mlp is None else mlp
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        if fused_qkv:
            self.qkv = nn.Linear(width, 3 * width)
        else:
            self.q, self.k, self.v = (nn.Linear(width, width) for _ in range(3))
        self.proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, mlp)
        self.gelu = nn.GELU()
        self.fc_out = nn.Linear(mlp, width)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        *lead, sequence, width = x.shape
        n = len(lead)  # the heads axis goes in front of the sequence's
        if hasattr(self, "qkv"):
            q, k, v = self.qkv(x).split(width, dim=n + 1)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        heads = [t.view(*lead, sequence, self.heads, width // self.heads).transpose(n, n + 1)
                 for t in (q, k, v)]
        y = nn.functional.scaled_dot_product_attention(*heads, is_causal=True)
        return self.proj(y.transpose(n, n + 1).reshape(*lead, sequence, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln_1(x))
        return x + self.fc_out(self.gelu(self.fc(self.ln_2(x))))


def randomized(module: nn.Module, seed: int, std: float = 0.1) -> nn.Module:
    """Seeded random weights, normal with `std`; LayerNorm scales around 1 (their defaults,
    ones and zeros, would leave the affine part of the normalization untested)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator) * std
            layer_norm_scale = ".ln_" in f".{name}" and name.endswith("weight")
            parameter.copy_(noise + 1.0 if layer_norm_scale else noise)
    return module.eval()


def gpt2_small(layers: int = 12, shape: Shape = GPT2_SMALL_SHAPE, seed: int = 0,
               fused_qkv: bool = True) -> nn.Module:
    """`layers` blocks of `shape` (one: the block itself, else an `nn.Sequential`), with
    seeded random weights of std 1/sqrt(width), so that activations and attention logits stay
    near 1 at every width (the fixtures' 0.1 at width 768 makes logits of std ~8 and a
    12-layer residual stream of std ~27, which FP16 rounding turns into a 1.8% error)."""
    blocks = [Block(shape.width, shape.heads, shape.mlp, fused_qkv) for _ in range(layers)]
    return randomized(blocks[0] if layers == 1 else nn.Sequential(*blocks), seed,
                      std=shape.width ** -0.5)


def export_onnx(module: nn.Module, x: torch.Tensor, path: Path) -> torch.Tensor:
    """Export `module` at `x`'s shape to `path` (input `x`, output `y`, TorchScript exporter,
    opset 17); returns torch's output."""
    with torch.no_grad():
        y = module(x)
    torch.onnx.export(module, (x,), path, input_names=["x"], output_names=["y"],
                      opset_version=17, dynamo=False)
    return y


def export(name: str, module: nn.Module, seed: int) -> None:
    x = torch.randn(BATCH, SEQUENCE, WIDTH, generator=torch.Generator().manual_seed(seed))
    y = export_onnx(module, x, HERE / f"{name}.onnx")
    np.savez(HERE / f"{name}.io.npz", x=x.numpy(), y=y.numpy())
    print(f"wrote {name}.onnx and {name}.io.npz")


def main() -> None:
    export("gpt2_block", randomized(Block(), seed=1), seed=2)
    export("gpt2_stack4", randomized(nn.Sequential(*(Block() for _ in range(4))), seed=3), seed=4)


if __name__ == "__main__":
    main()
