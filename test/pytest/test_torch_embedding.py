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


def test_arange_is_refused_by_name_with_the_way_out():
    with pytest.raises(TorchImportError, match=r"\(aten.arange.[a-z]+\): aten.arange builds "
                                               r"position ids at run time"):
        from_torch(Positions(), [torch.zeros(2, 4)])
