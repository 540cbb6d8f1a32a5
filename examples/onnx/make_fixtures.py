"""Build the ONNX fixtures of the importer's tests from a GPT-2-style block in PyTorch.

    pip install torch onnx        # not needed to run the tests, only to rebuild the fixtures
    python examples/onnx/make_fixtures.py

writes, next to this script, `gpt2_block.onnx` (one block) and `gpt2_stack4.onnx` (four blocks),
each with `<name>.io.npz` holding the example input `x` and the torch output `y` (float32).
The block is pre-LayerNorm, causal scaled-dot-product attention with 2 heads, and a GeLU MLP at
width 128, sequence 64, batch 1; the weights are random (seeded) and the export uses the
TorchScript-based `torch.onnx.export` at opset 17, which wraps attention in shape arithmetic
(Shape, Slice, Cast, Sqrt, Trilu, Where, Expand, ...) that the importer folds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

WIDTH, HEADS, SEQUENCE, BATCH = 128, 2, 64, 1
HERE = Path(__file__).resolve().parent


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.ln_2 = nn.LayerNorm(WIDTH)
        self.fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.gelu = nn.GELU()
        self.fc_out = nn.Linear(4 * WIDTH, WIDTH)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, sequence, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=2)
        heads = [t.view(batch, sequence, HEADS, width // HEADS).transpose(1, 2) for t in (q, k, v)]
        y = nn.functional.scaled_dot_product_attention(*heads, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(batch, sequence, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln_1(x))
        return x + self.fc_out(self.gelu(self.fc(self.ln_2(x))))


def randomized(module: nn.Module, seed: int) -> nn.Module:
    """Seeded random weights; LayerNorm scales around 1 (their defaults, ones and zeros, would
    leave the affine part of the normalization untested)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator) * 0.1
            layer_norm_scale = ".ln_" in f".{name}" and name.endswith("weight")
            parameter.copy_(noise + 1.0 if layer_norm_scale else noise)
    return module.eval()


def export(name: str, module: nn.Module, seed: int) -> None:
    x = torch.randn(BATCH, SEQUENCE, WIDTH, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        y = module(x)
    torch.onnx.export(module, (x,), HERE / f"{name}.onnx", input_names=["x"],
                      output_names=["y"], opset_version=17, dynamo=False)
    np.savez(HERE / f"{name}.io.npz", x=x.numpy(), y=y.numpy())
    print(f"wrote {name}.onnx and {name}.io.npz")


def main() -> None:
    export("gpt2_block", randomized(Block(), seed=1), seed=2)
    export("gpt2_stack4", randomized(nn.Sequential(*(Block() for _ in range(4))), seed=3), seed=4)


if __name__ == "__main__":
    main()
