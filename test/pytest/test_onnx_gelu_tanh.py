"""GeLU's tanh form from ONNX and torch: `Gelu(approximate="tanh")` (opset 20), the
Mul/Pow/Tanh expansion Hugging Face's `gelu_new` exports to (frontend/onnx/gelu_patterns.py),
and torch's `gelu(approximate='tanh')` through `from_torch`, each one `graph.gelu approximate
tanh` whose reference matches ONNX's own evaluator (or torch)."""

from __future__ import annotations

import math
import os

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator
from onnx_models import constant, model, tensor
from xdsl.dialects.func import FuncOp

from frontend.onnx import OnnxImportError, import_onnx
from interpreters.graph import input_names, run_function
from ipu_dialects import graph


def require_torch():
    """torch, or a skip without it; a failure where CI requires it (`IPU_REQUIRE_TORCH=1`, as
    test/pytest/test_torch_import.py)."""
    if os.environ.get("IPU_REQUIRE_TORCH"):
        import torch
        return torch
    return pytest.importorskip("torch")


RNG = np.random.default_rng(20)
C = np.float32(math.sqrt(2.0 / math.pi))


def gelus_of(imported) -> list[str | None]:
    """The approximation of each graph.gelu, in order (None: exact); and no other graph op."""
    ops = [op for op in imported.module.walk() if op.name.startswith("graph.")]
    assert all(isinstance(op, graph.GeluOp) for op in ops), [op.name for op in ops]
    return [None if op.approximation is None else str(op.approximation) for op in ops]


def check_against_onnx(onnx_model: onnx.ModelProto, x: np.ndarray):
    imported = import_onnx(onnx_model)
    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    arrays = [x if n == "x" else imported.weights[n] for n in input_names(func)]
    got = run_function(imported.module, arrays)
    want = ReferenceEvaluator(onnx_model).run(None, {"x": x})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return imported


def scalars() -> list[onnx.NodeProto]:
    return [constant("half", np.float32(0.5)), constant("one", np.float32(1.0)),
            constant("three", np.float32(3.0)), constant("kappa", np.float32(0.044715)),
            constant("beta", C)]


def test_gelu_op_with_approximate_tanh_and_none() -> None:
    nodes = [helper.make_node("Gelu", ["x"], ["g"], name="t", approximate="tanh"),
             helper.make_node("Gelu", ["g"], ["y"], name="e", approximate="none")]
    m = model(nodes, [tensor("x", [3, 8])], ["y"], opset=20)
    imported = check_against_onnx(m, RNG.normal(0, 3, (3, 8)).astype(np.float32))
    assert gelus_of(imported) == ["tanh", None]


def test_gelu_op_with_an_unknown_approximation_names_the_node() -> None:
    nodes = [helper.make_node("Gelu", ["x"], ["y"], name="g", approximate="fast")]
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model(nodes, [tensor("x", [4])], ["y"], opset=20))
    assert str(info.value) == ("node #0 'g' (Gelu): approximate = 'fast'; graph.gelu is the "
                               "exact (erf) GeLU ('none') or its tanh form ('tanh')")


def gelu_new(x: str, out: str, p: str) -> list[onnx.NodeProto]:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))), as torch.onnx.export
    (dynamo=False) writes Hugging Face's NewGELUActivation."""
    return [
        helper.make_node("Mul", ["half", x], [f"{p}h"]),
        helper.make_node("Pow", [x, "three"], [f"{p}cube"]),
        helper.make_node("Mul", ["kappa", f"{p}cube"], [f"{p}k"]),
        helper.make_node("Add", [x, f"{p}k"], [f"{p}s"]),
        helper.make_node("Mul", ["beta", f"{p}s"], [f"{p}u"]),
        helper.make_node("Tanh", [f"{p}u"], [f"{p}t"], name=f"{p}tanh"),
        helper.make_node("Add", ["one", f"{p}t"], [f"{p}a"]),
        helper.make_node("Mul", [f"{p}h", f"{p}a"], [out]),
    ]


def gelu_tanh_mirrored(x: str, out: str, p: str) -> list[onnx.NodeProto]:
    """The same function with every product in the other order, the cube as x * x * x and the
    half applied last: (x * (1 + tanh((x + x*x*x * 0.044715) * sqrt(2/pi)))) * 0.5."""
    return [
        helper.make_node("Mul", [x, x], [f"{p}sq"]),
        helper.make_node("Mul", [f"{p}sq", x], [f"{p}cube"]),
        helper.make_node("Mul", [f"{p}cube", "kappa"], [f"{p}k"]),
        helper.make_node("Add", [f"{p}k", x], [f"{p}s"]),
        helper.make_node("Mul", [f"{p}s", "beta"], [f"{p}u"]),
        helper.make_node("Tanh", [f"{p}u"], [f"{p}t"]),
        helper.make_node("Add", [f"{p}t", "one"], [f"{p}a"]),
        helper.make_node("Mul", [x, f"{p}a"], [f"{p}m"]),
        helper.make_node("Mul", [f"{p}m", "half"], [out]),
    ]


def gelu_tanh_half_on_the_sum(x: str, out: str, p: str) -> list[onnx.NodeProto]:
    """x * (0.5 * (1 + tanh(...))), as torch's own opset-9 `gelu(approximate='tanh')`."""
    return [
        helper.make_node("Pow", [x, "three"], [f"{p}cube"]),
        helper.make_node("Mul", [f"{p}cube", "kappa"], [f"{p}k"]),
        helper.make_node("Add", [x, f"{p}k"], [f"{p}s"]),
        helper.make_node("Mul", [f"{p}s", "beta"], [f"{p}u"]),
        helper.make_node("Tanh", [f"{p}u"], [f"{p}t"]),
        helper.make_node("Add", [f"{p}t", "one"], [f"{p}a"]),
        helper.make_node("Mul", ["half", f"{p}a"], [f"{p}ha"]),
        helper.make_node("Mul", [x, f"{p}ha"], [out]),
    ]


@pytest.mark.parametrize("form", [gelu_new, gelu_tanh_mirrored, gelu_tanh_half_on_the_sum])
def test_tanh_expansion_is_one_tanh_gelu(form) -> None:
    nodes = [*scalars(), helper.make_node("MatMul", ["x", "w"], ["h"]), *form("h", "y", "a.")]
    m = model(nodes, [tensor("x", [4, 8])], ["y"], {"w": RNG.normal(0, 1, (8, 8)).astype(np.float32)})
    imported = import_onnx(m)
    ops = [op.name for op in imported.module.walk() if op.name.startswith("graph.")]
    assert ops == ["graph.gemm", "graph.gelu"]
    gelu = next(op for op in imported.module.walk() if isinstance(op, graph.GeluOp))
    assert str(gelu.approximation) == "tanh"
    x = RNG.normal(0, 1, (4, 8)).astype(np.float32)
    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    arrays = [x if n == "x" else imported.weights[n] for n in input_names(func)]
    (got,) = run_function(imported.module, arrays)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_two_expansions_side_by_side_and_an_exact_gelu() -> None:
    nodes = [*scalars(), *gelu_new("x", "g1", "a."), *gelu_tanh_mirrored("g1", "g2", "b."),
             helper.make_node("Gelu", ["g2"], ["y"])]
    m = model(nodes, [tensor("x", [2, 16])], ["y"], opset=20)
    imported = check_against_onnx(m, RNG.normal(0, 3, (2, 16)).astype(np.float32))
    assert gelus_of(imported) == ["tanh", "tanh", None]


def not_a_tanh_gelu(onnx_model: onnx.ModelProto, first: int) -> None:
    """The expansion from node `first` on did not become a tanh graph.gelu: the importer
    refuses one of its nodes by name (today: its first Mul, no graph op for a lone Mul), or,
    if a later importer maps the lone nodes, the graph holds no tanh gelu."""
    try:
        imported = import_onnx(onnx_model)
    except OnnxImportError as error:
        index = int(str(error).split("#", 1)[1].split(" ", 1)[0])
        assert index >= first and "no graph op for ONNX" in str(error), str(error)
        return
    assert "tanh" not in [g for g in gelus_of(imported) if g]


@pytest.mark.parametrize(("edit", "why"), [
    (lambda n: n[2].input.__setitem__(0, "kappa2"), "the cubic coefficient is not 0.044715"),
    (lambda n: n[1].input.__setitem__(1, "three2"), "the power is not 3"),
    (lambda n: n[4].input.__setitem__(0, "kappa2"), "the inner factor is not sqrt(2/pi)"),
    (lambda n: n[6].input.__setitem__(0, "half"), "the Tanh is not added to 1"),
    (lambda n: n[0].input.__setitem__(0, "one"), "x is not halved"),
])
def test_a_near_miss_is_not_a_gelu(edit, why) -> None:
    """Another coefficient is another function: no match."""
    nodes = [constant("kappa2", np.float32(0.05)), constant("three2", np.float32(2.0)),
             *scalars(), *gelu_new("x", "y", "a.")]
    edit(nodes[7:])  # the expansion: Mul(half), Pow, Mul(kappa), Add, Mul(beta), Tanh, Add, Mul
    m = model(nodes, [tensor("x", [4])], ["y"])
    (want,) = ReferenceEvaluator(m).run(None, {"x": np.ones(4, np.float32)})  # a valid model
    assert want.shape == (4,), why
    not_a_tanh_gelu(m, 7)


def test_an_intermediate_used_elsewhere_stops_the_match() -> None:
    """The cube is also an output: one graph.gelu would not produce it."""
    nodes = [*scalars(), *gelu_new("x", "y", "a.")]
    not_a_tanh_gelu(model(nodes, [tensor("x", [4])], ["y", "a.cube"]), 5)


# ---- torch ---------------------------------------------------------------------------------------

def test_torch_gelu_tanh_is_one_tanh_gelu_matching_torch() -> None:
    torch = require_torch()
    from frontend.torch_import import from_torch

    class Net(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.gelu(x, approximate="tanh")

    x = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(5)) * 3
    imported = from_torch(Net(), (x,))
    assert gelus_of(imported) == ["tanh"]
    (got,) = run_function(imported.module, [x.numpy()])
    want = Net()(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_torch_exported_gelu_new_imports_as_one_tanh_gelu() -> None:
    """Hugging Face's NewGELUActivation (GPT-2's `gelu_new`) behind a Linear, exported by
    torch.onnx.export(dynamo=False): its Mul/Pow/Tanh nodes become one tanh graph.gelu."""
    torch = require_torch()
    import io

    class NewGELU(torch.nn.Module):  # transformers.activations.NewGELUActivation
        def forward(self, x):
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                               * (x + 0.044715 * torch.pow(x, 3.0))))

    net = torch.nn.Sequential(torch.nn.Linear(16, 16), NewGELU())
    torch.manual_seed(3)
    x = torch.randn(2, 16) * 2
    buffer = io.BytesIO()
    torch.onnx.export(net, (x,), buffer, dynamo=False)
    exported = onnx.load_from_string(buffer.getvalue())
    assert "Tanh" in [n.op_type for n in exported.graph.node]
    imported = import_onnx(exported)
    ops = [op for op in imported.module.walk() if op.name.startswith("graph.")]
    assert [op.name for op in ops] == ["graph.gemm", "graph.add", "graph.gelu"]
    assert str(ops[-1].approximation) == "tanh"
    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    feeds = {n: imported.weights.get(n) for n in input_names(func)}
    arrays = [x.numpy() if feeds[n] is None else feeds[n] for n in input_names(func)]
    (got,) = run_function(imported.module, arrays)
    np.testing.assert_allclose(got, net(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_torch_gelu_with_another_approximation_is_refused_by_name() -> None:
    """torch itself accepts only 'none' and 'tanh'; a program from a torch that knew another
    (here an fx node edited to say so) is refused naming it, not imported as the exact GeLU."""
    require_torch()
    from types import SimpleNamespace

    from frontend.torch_import import TorchImporter, TorchImportError

    node = SimpleNamespace(args=(None,), kwargs={"approximate": "sigmoid"})
    with pytest.raises(TorchImportError) as info:
        TorchImporter(None, "f32", "f").gelu("node #3 'gelu' (aten.gelu.default)", node)
    assert str(info.value) == ("node #3 'gelu' (aten.gelu.default): approximate = 'sigmoid'; "
                               "graph.gelu is the exact (erf) GeLU or its tanh form")
