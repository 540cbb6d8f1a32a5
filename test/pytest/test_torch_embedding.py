"""from_torch on embeddings (aten.embedding -> graph.gather by i32 token ids) and the ATen ops
HF models produce that it refuses by name (optional extra torch, gated as test_torch_import)."""

from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("IPU_REQUIRE_TORCH"):
    import torch  # CI: a missing torch is a failure, not 12 skipped tests
else:
    torch = pytest.importorskip("torch")


from frontend.torch_import import TorchImportError, from_torch
from interpreters.graph import run_function


class Embed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = torch.nn.Embedding(20, 8)
        self.positions = torch.nn.Parameter(torch.randn(5, 8))

    def forward(self, ids):
        x = self.tokens(ids) + self.positions
        return torch.nn.functional.layer_norm(x, (8,)).unflatten(-1, (2, 4))


def test_embedding_imports_as_gather_and_matches_torch():
    torch.manual_seed(0)
    model = Embed().eval()
    ids = torch.randint(0, 20, (2, 5))
    imported = from_torch(model, [ids])
    text = str(imported.module)
    assert "graph.gather %tokens.weight, %ids : (tensor<20x8xf32>, tensor<2x5xi32>)" in text
    (got,) = run_function(imported.module, {"ids": ids.numpy(), **imported.weights})
    with torch.no_grad():
        want = model(ids).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


class Positions(torch.nn.Module):
    def forward(self, x):
        return x + torch.arange(x.shape[-1], dtype=x.dtype)


def test_arange_of_static_extents_folds_to_a_constant():
    """Position ids from arange (static shapes make them constants) fold: torch computes them
    at import, and the graph adds a constant row."""
    x = torch.randn(2, 4)
    imported = from_torch(Positions(), [x])
    assert str(imported.module).count("graph.") == 1 and list(imported.weights) == ["arange"]
    (got,) = run_function(imported.module, {"x": x.numpy(), **imported.weights})
    np.testing.assert_allclose(got, Positions()(x).numpy(), rtol=1e-6)


class Expanded(torch.nn.Module):
    def forward(self, x):
        return x.expand(3, 4)


def test_expand_of_a_computed_tensor_is_refused_by_name():
    with pytest.raises(TorchImportError, match=r"\(aten.expand.default\): aten.expand of a "
                                               r"tensor computed at run time has no graph op"):
        from_torch(Expanded(), [torch.zeros(1, 4)])
