"""The table of issue 26, re-run as `bench/exported_models.py` runs it: each model (the fixture
block, torch's TransformerEncoderLayer, HF GPT-2 with `gelu_new` and with `gelu`, BERT, BERT's
encoder alone) by each route (ONNX `dynamo=True`, ONNX `dynamo=False`, `from_torch`), random
weights, no downloads. Quick: every route of a model imports to the same graph (op for op
for the dynamo export, the same ops in another order for the TorchScript one). Slow: every
cell compiles for 16 tiles and PASSes on the device model against torch's own output, with the
same modeled cycles by every route.

Needs torch, onnxscript and transformers (skipped without them, unless
`IPU_REQUIRE_TRANSFORMERS=1`)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

if os.environ.get("IPU_REQUIRE_TRANSFORMERS"):
    import onnxscript  # noqa: F401  the dynamo exporter's dependency
    import torch
    import transformers  # noqa: F401
else:
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript", reason="torch's dynamo ONNX exporter needs onnxscript")
    pytest.importorskip("transformers", reason="the Hugging Face model tests need the "
                        "transformers extra (pip install -e '.[transformers]')")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from exported_models import MODELS, ROUTES, TOLERANCE, imported_by, run_cell

from tools.ipu_run import RELATIVE_TOLERANCE


def graph_text(module) -> list[str]:
    """The graph ops as printed, SSA names left out."""
    return [re.sub(r"%[\w.$-]+", "%", str(op)) for op in module.walk()
            if op.name.startswith("graph.")]


def test_the_bench_checks_with_ipu_runs_tolerance() -> None:
    assert TOLERANCE == RELATIVE_TOLERANCE["f32"]


@pytest.mark.parametrize("name", list(MODELS))
def test_every_route_imports_the_same_graph(name, tmp_path) -> None:
    texts = {route: graph_text(imported_by(name, route, MODELS[name](route), tmp_path).module)
             for route in ROUTES}
    assert texts["dynamo"] == texts["from_torch"]
    assert sorted(texts["torchscript"]) == sorted(texts["from_torch"])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_every_route_passes_on_the_device_model_with_the_same_cycles(name, tmp_path) -> None:
    """Measured (README's table): fixture block 246,105; encoder layer 253,417; GPT-2 277,194;
    GPT-2 with gelu 279,242; BERT 383,242; BERT's encoder 363,558 modeled cycles."""
    cells = [run_cell(name, route, 16, tmp_path) for route in ROUTES]
    assert [c.status for c in cells] == ["PASS"] * len(ROUTES), cells
    assert len({c.cycles for c in cells}) == 1, cells
