"""`from_torch` through torch.export (optional extra `torch`: these tests skip without it,
unless `IPU_REQUIRE_TORCH=1`, set by `.ci/run`, which installs torch; the rest of the suite
never needs torch)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("IPU_REQUIRE_TORCH"):
    import torch  # CI: a missing torch is a failure, not 12 skipped tests
else:
    torch = pytest.importorskip("torch")

from xdsl.dialects.func import FuncOp

from frontend.torch_import import TorchImportError, from_torch
from interpreters.graph import input_names, run_function

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "onnx"))
from make_fixtures import Block, randomized


def run_imported(module, *inputs, dtype="f32"):
    imported = from_torch(module, inputs, dtype)
    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    feeds = dict(zip([n for n in input_names(func) if n not in imported.weights],
                     (t.numpy() for t in inputs)))
    arrays = [feeds[n] if n in feeds else imported.weights[n] for n in input_names(func)]
    return imported, run_function(imported.module, arrays)


@pytest.mark.parametrize(("dtype", "tolerance"), [("f32", 1e-4), ("f16", 1e-2)])
def test_gpt2_block_matches_torch(dtype, tolerance) -> None:
    block = randomized(Block(), seed=1)
    x = torch.randn(1, 64, 128, generator=torch.Generator().manual_seed(2))
    imported, (y,) = run_imported(block, x, dtype=dtype)
    want = block(x).detach().numpy().astype(np.float64)
    assert np.abs(y.astype(np.float64) - want).max() / np.abs(want).max() <= tolerance
    text = str(imported.module)
    assert text.count("graph.attention") == 1 and "causal" in text
    # a linear's [out, in] weight is stored transposed, under its state name with .t
    assert "ln_1.weight" in imported.weights and "qkv.weight.t" in imported.weights


class LayoutNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("w", torch.randn(12, 3))

    def forward(self, x):
        y = torch.cat([x[:, 1:7:2], x[:, :3]], dim=1).transpose(1, 2).reshape(2, -1)
        z = torch.nn.functional.layer_norm(y, [12])
        return z @ self.w + x.split([3, 5], dim=1)[0].reshape(2, 6)[:, :3]


def test_layout_ops_buffers_and_layer_norm_without_affine() -> None:
    net, x = LayoutNet(), torch.randn(2, 8, 2)
    imported, (y,) = run_imported(net, x)
    np.testing.assert_allclose(y, net(x).numpy(), rtol=1e-5, atol=1e-5)
    assert "w" in imported.weights


class Masked(torch.nn.Module):
    def __init__(self, mask: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("mask", mask)

    def forward(self, x):
        return torch.nn.functional.scaled_dot_product_attention(x, x, x, attn_mask=self.mask)


def test_attention_with_a_general_mask() -> None:
    general = torch.zeros(4, 4)
    general[0, 2] = -torch.inf
    with pytest.raises(TorchImportError) as info:
        from_torch(Masked(general), (torch.randn(1, 4, 8),))
    assert str(info.value).endswith(
        "an explicit attn_mask (a general mask) of shape [4, 4]; graph.attention supports causal "
        "masking only")


@pytest.mark.parametrize(("mask", "causal"), [
    (torch.zeros(4, 4), False),  # additive, attends everywhere
    (torch.ones(4, 4, dtype=torch.bool), False),  # boolean, as HF builds it with no padding
    (torch.tril(torch.ones(4, 4, dtype=torch.bool)), True),  # HF's causal mask, folded
])
def test_constant_attention_masks_fold_into_the_causal_flag(mask, causal) -> None:
    x = torch.randn(1, 4, 8)
    imported, (y,) = run_imported(Masked(mask), x)
    np.testing.assert_allclose(y, Masked(mask)(x).numpy(), rtol=1e-5, atol=1e-5)
    text = str(imported.module)
    assert text.count("graph.attention") == 1 and ("causal" in text) == causal


@pytest.mark.parametrize(
    ("forward", "message"),
    [
        (lambda x: torch.relu(x), "(aten.relu.default): no graph op for this ATen op; from_torch "
         "maps linear, matmul, add, layer_norm, gelu, view/reshape, transpose/permute, split, "
         "slice, select, cat and scaled_dot_product_attention"),
        (lambda x: torch.add(x, x, alpha=2), "add with alpha = 2; graph.add has no scale"),
        (lambda x: x + 1.0, "operand 1.0 is not a tensor the graph computes; graph ops take "
         "tensors only"),
        (lambda x: torch.nn.functional.layer_norm(x, [4, 8]), "normalized_shape [4, 8] of an "
         "input [1, 4, 8]; graph.layer_norm normalizes the last axis only"),
        (lambda x: torch.nn.functional.scaled_dot_product_attention(x, x, x, dropout_p=0.5),
         "dropout_p = 0.5; export the module in eval mode without attention dropout"),
        (lambda x: x[:, 2:2], "graph.slice: axis 1 takes [2, 2) of extent 4"),
        (lambda x: torch.nn.functional.dropout(x, 0.5, training=True),
         "(aten.dropout.default): dropout with p = 0.5 in training mode; export the module in "
         "eval mode"),
    ],
)
def test_diagnostics(forward, message) -> None:
    class Net(torch.nn.Module):
        def forward(self, x):
            return forward(x)

    with pytest.raises(TorchImportError) as info:
        from_torch(Net(), (torch.randn(1, 4, 8),))
    assert message in str(info.value) and str(info.value).startswith("node #")


def test_unknown_dtype() -> None:
    with pytest.raises(TorchImportError, match="dtype 'f64' is not one of f32, f16"):
        from_torch(torch.nn.Identity(), (torch.randn(2),), "f64")


class Addmm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(8))
        self.weight = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        return torch.addmm(self.bias, x, self.weight, beta=2)


def test_addmm_with_a_beta_is_refused() -> None:
    with pytest.raises(TorchImportError) as info:
        from_torch(Addmm(), (torch.randn(4, 8),))
    assert str(info.value).endswith("addmm with beta = 2, alpha = 1; only beta = alpha = 1 maps "
                                    "to graph.gemm and graph.add")


class RunTimeMask(torch.nn.Module):
    def forward(self, x, mask):
        return torch.nn.functional.scaled_dot_product_attention(x, x, x, attn_mask=mask)


def test_attention_with_a_mask_computed_at_run_time() -> None:
    with pytest.raises(TorchImportError) as info:
        from_torch(RunTimeMask(), (torch.randn(1, 4, 8), torch.zeros(4, 4)))
    assert str(info.value).endswith("an attn_mask computed at run time (a general mask); "
                                    "graph.attention supports causal masking only")
