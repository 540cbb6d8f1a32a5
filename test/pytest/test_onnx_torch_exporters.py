"""Models as torch's exporters write them: the project's fixture block
(examples/onnx/make_fixtures.py) and `torch.nn.TransformerEncoderLayer`, exported by torch's
default exporter (`dynamo=True`, which needs `onnxscript`) and by the TorchScript one
(`dynamo=False`), imported, and run under the reference and (slow) the device model at 16 tiles
against torch's own outputs. Skipped without torch and onnxscript, unless `IPU_REQUIRE_TORCH=1`."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("IPU_REQUIRE_TORCH"):
    import onnxscript  # noqa: F401  the dynamo exporter's dependency
    import torch
else:
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript", reason="torch's dynamo ONNX exporter needs onnxscript")

from xdsl.dialects.func import FuncOp

from frontend.onnx import import_onnx
from interpreters.graph import input_names, run_function
from tools.ipu_import import import_main
from tools.ipu_run import RELATIVE_TOLERANCE, run_main

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "onnx"))
from make_fixtures import Block, randomized


def fixture_block() -> torch.nn.Module:
    return randomized(Block(), seed=1)


def encoder_layer() -> torch.nn.Module:
    """Every parameter moved off its initial value: torch starts biases at zero and layer norms
    at the identity, which the dynamo exporter's optimizer drops (a zero bias) and merges (equal
    norm weights), and which would hide a bias or an affine the import dropped."""
    torch.manual_seed(3)
    layer = torch.nn.TransformerEncoderLayer(128, 4, 512, activation="gelu", batch_first=True)
    generator = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for parameter in layer.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    return layer.eval()


class Wrapped(torch.nn.Module):
    """`layer(x)` alone, as people export the layer with the TorchScript exporter: exporting the
    layer itself, that exporter passes every argument of its forward, `is_causal=False` as a
    tensor (test_encoder_layer_torchscript_export_fails_inside_torch)."""

    def __init__(self, layer: torch.nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


MODELS = {"fixture_block": fixture_block, "encoder_layer": encoder_layer}


def example() -> torch.Tensor:
    return torch.randn(1, 64, 128, generator=torch.Generator().manual_seed(2))


def exported(name: str, dynamo: bool, opset: int, directory: Path, wrap: bool | None = None):
    """`wrap` (default: the encoder layer by the TorchScript exporter) exports it as Wrapped."""
    module, x = MODELS[name](), example()
    with torch.no_grad():
        y = module(x).numpy()
    if wrap if wrap is not None else (name == "encoder_layer" and not dynamo):
        module = Wrapped(module)
    path = directory / f"{name}.onnx"
    torch.onnx.export(module, (x,), path, input_names=["x"], output_names=["y"],
                      opset_version=opset, dynamo=dynamo)
    return path, x.numpy(), y


def relative(got: np.ndarray, want: np.ndarray) -> float:
    want = want.astype(np.float64)
    return float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())


CASES = [
    ("fixture_block", True, 18), ("fixture_block", True, 20), ("fixture_block", False, 17),
    ("encoder_layer", True, 18), ("encoder_layer", True, 20), ("encoder_layer", False, 17),
]


@pytest.mark.parametrize(("name", "dynamo", "opset"), CASES)
def test_export_imports_and_matches_torch_under_the_reference(name, dynamo, opset,
                                                              tmp_path) -> None:
    path, x, y = exported(name, dynamo, opset, tmp_path)
    imported = import_onnx(path)
    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    (got,) = run_function(imported.module, [imported.weights.get(n, x) for n in input_names(func)])
    # measured: 1.8e-7 to 4.2e-7
    assert relative(got, y) <= RELATIVE_TOLERANCE["f32"]
    text = str(imported.module)
    assert text.count("graph.attention") == 1 and text.count("graph.gelu") == 1
    assert ("causal" in text) == (name == "fixture_block")


def test_encoder_layer_torchscript_export_fails_inside_torch(tmp_path) -> None:
    """torch 2.13's TorchScript exporter cannot trace the layer's fast path (is_causal becomes a
    tensor): the failure is torch's, before any ONNX exists."""
    with pytest.raises(Exception, match="is_causal"):
        exported("encoder_layer", False, 17, tmp_path, wrap=False)


def graph_text(module) -> list[str]:
    """The graph ops as printed, SSA names left out: two imports with equal lists are the same
    graph (the same ops, attributes, shapes and operand order)."""
    return [re.sub(r"%[\w.$-]+", "%", str(op)) for op in module.walk()
            if op.name.startswith("graph.")]


@pytest.mark.parametrize("name", list(MODELS))
def test_from_torch_gives_the_onnx_graph(name, tmp_path) -> None:
    """One module by every route: from_torch writes the dynamo export's graph op for op (a
    constant weight stored [in, out] whether the exporter wrote Gemm(transB) or not, a batch
    of one-row products as one GEMM, a bias added second, eps as a float32, the default scale
    left out), and the TorchScript export's ops in another order."""
    from frontend.torch_import import from_torch

    by_torch = graph_text(from_torch(MODELS[name](), (example(),)).module)
    assert graph_text(import_onnx(exported(name, True, 18, tmp_path)[0]).module) == by_torch
    by_torchscript = graph_text(import_onnx(exported(name, False, 17, tmp_path)[0]).module)
    assert sorted(by_torchscript) == sorted(by_torch)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "dynamo", "opset"),
                         [("fixture_block", True, 18), ("encoder_layer", True, 18),
                          ("encoder_layer", False, 17)])
def test_export_runs_on_the_device_model_at_16_tiles(name, dynamo, opset, tmp_path,
                                                     capsys) -> None:
    path, x, y = exported(name, dynamo, opset, tmp_path)
    assert import_main(path, tmp_path / "model", "f32") == 0
    np.save(tmp_path / "x.npy", x)
    status = run_main(tmp_path / "model" / "model.mlir", tiles=16,
                      inputs=[f"x={tmp_path / 'x.npy'}"], save_dir=tmp_path / "results",
                      archive=str(tmp_path / "model" / "weights.npz"))
    assert status == 0, capsys.readouterr().err
    assert "check: PASS" in capsys.readouterr().out
    got = np.load(tmp_path / "results" / "result0.npy")
    assert relative(got, y) <= RELATIVE_TOLERANCE["f32"]


@pytest.mark.slow
def test_encoder_layer_by_from_torch_runs_with_the_onnx_route_cycles(tmp_path) -> None:
    """from_torch of torch's encoder layer on the device model at 16 tiles: PASS against torch,
    and the ONNX route's modeled cycles (measured: 253,417 by every route; before the batch of
    one-row projections became one GEMM, no plan for that batched GEMM fit 16 tiles)."""
    from frontend.run import compile_and_run
    from frontend.torch_import import from_torch

    x = example()
    layer = MODELS["encoder_layer"]()
    with torch.no_grad():
        y = layer(x).numpy()
    cycles = []
    for imported in (from_torch(layer, (x,)),
                     import_onnx(exported("encoder_layer", True, 18, tmp_path)[0])):
        func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
        inputs = {n: imported.weights.get(n, x.numpy()) for n in input_names(func)}
        run = compile_and_run(imported.module, tiles=16, inputs=inputs)
        assert run.passed, (run.max_abs_error, run.max_rel_error)
        assert relative(run.outputs["result0"], y) <= RELATIVE_TOLERANCE["f32"]
        cycles.append(run.cycles)
    assert cycles[0] == cycles[1], cycles
