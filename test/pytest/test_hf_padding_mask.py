"""Hugging Face `BertModel(input_ids, attention_mask=mask)` with padding (issue 26): batch 2,
lengths 16 and 11 of 16, the mask a model input (and `GPT2Model` the same way: its mask is
the causal one and'ed with the padding, imported as `causal` and the key_mask). transformers 5 turns the mask into a boolean
[batch, 1, queries, keys] (index, and, expand) that torch's SDPA takes (`from_torch`) or that
its ONNX exports add to the logits as `Where(mask, 0, -inf)`; every route imports it as
graph.attention's key_mask (the i32 mask argument itself), checked against torch's
`last_hidden_state` at every position: the mask is key-side only, so the padded query rows
attend to the real keys in torch as in the graph, and their outputs are compared too. On the
device model at 16 tiles (slow). Then the older additive form `(1 - mask) * -10000` written
by hand, and masks that are not key padding masks, which stay named refusals.

Needs the `transformers` extra, like test_hf_models.py (skipped without it unless
`IPU_REQUIRE_TRANSFORMERS=1`)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
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

from test_hf_models import MODELS, ROUTES, relative
from xdsl.dialects.func import FuncOp

from frontend.imported import ImportedModel
from frontend.onnx import OnnxImportError, import_onnx
from frontend.run import compile_and_run
from frontend.torch_import import TorchImportError, from_torch
from interpreters.graph import input_names, run_function
from ipu_dialects import graph
from tools.ipu_run import RELATIVE_TOLERANCE

LENGTHS = (16, 11)


class PaddedLastHiddenState(torch.nn.Module):
    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids, mask):
        return self.model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state


def examples() -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(0, 1000, (len(LENGTHS), 16), generator=torch.Generator().manual_seed(1))
    mask = torch.zeros(len(LENGTHS), 16, dtype=torch.long)
    for row, length in enumerate(LENGTHS):
        mask[row, :length] = 1
    return ids, mask


def imported_by(route: str, module: torch.nn.Module, inputs: tuple, directory: Path,
                ) -> ImportedModel:
    if route == "from_torch":
        return from_torch(module, inputs)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.onnx"
    torch.onnx.export(module, inputs, path, input_names=["ids", "mask"],
                      output_names=["last_hidden_state"],
                      opset_version=18 if route == "dynamo" else 17, dynamo=route == "dynamo")
    return import_onnx(path)


def feeds(imported: ImportedModel, arrays: tuple[np.ndarray, ...]) -> dict[str, np.ndarray]:
    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    users = [n for n in input_names(func) if n not in imported.weights]
    assert len(users) == len(arrays)
    return {**imported.weights, **{n: a.astype(np.int32) if np.issubdtype(a.dtype, np.integer)
                                   else a for n, a in zip(users, arrays, strict=True)}}


def reference(imported: ImportedModel, inputs: dict[str, np.ndarray]) -> np.ndarray:
    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    (got,) = run_function(imported.module, [inputs[n] for n in input_names(func)])
    return got


def model_case(name: str, route: str, directory: Path):
    module = PaddedLastHiddenState(MODELS[name]()).eval()
    ids, mask = examples()
    with torch.no_grad():
        want = module(ids, mask).numpy()
    imported = imported_by(route, module, (ids, mask), directory)
    return imported, feeds(imported, (ids.numpy(), mask.numpy())), want


def key_masked_attentions(imported: ImportedModel) -> list[graph.AttentionOp]:
    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    mask_argument = func.body.block.args[1]
    return [op for op in imported.module.walk()
            if isinstance(op, graph.AttentionOp) and op.key_mask is mask_argument]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", list(MODELS))
def test_padded_model_reference_matches_torch(name, route, tmp_path) -> None:
    imported, inputs, want = model_case(name, route, tmp_path)
    attentions = key_masked_attentions(imported)
    assert len(attentions) == 2  # both layers, the mask argument itself
    # GPT-2's mask is the causal one and the padding (transformers ands them)
    assert all((op.causal is not None) == (name == "gpt2") for op in attentions)
    got = reference(imported, inputs)
    # measured: 3e-7 at every position, the padded ones (row 1, positions 11..15) included
    assert relative(got, want) <= RELATIVE_TOLERANCE["f32"]
    assert relative(got[1, LENGTHS[1]:], want[1, LENGTHS[1]:]) <= RELATIVE_TOLERANCE["f32"]
    # the mask matters: the same ids without padding give other hidden states in row 1
    unpadded = dict(inputs, mask=np.ones_like(inputs["mask"]))
    assert relative(reference(imported, unpadded)[1], want[1]) > 1e-3


def test_from_torch_gives_the_onnx_graph_with_a_padding_mask(tmp_path) -> None:
    from test_hf_models import op_names

    by_torch, _, _ = model_case("bert", "from_torch", tmp_path)
    by_onnx, _, _ = model_case("bert", "dynamo", tmp_path)
    assert op_names(by_torch.module) == op_names(by_onnx.module)


def test_layers_reading_a_key_mask_are_not_repeated(tmp_path) -> None:
    """`--repeat-layers`: a key mask is read only as a function argument, so the two layers
    stay unrolled (a graph.repeat body could take it only as an invariant)."""
    module = PaddedLastHiddenState(MODELS["bert"]()).eval()
    tmp_path.mkdir(exist_ok=True)
    torch.onnx.export(module, examples(), tmp_path / "m.onnx", input_names=["ids", "mask"],
                      opset_version=18, dynamo=True)
    imported = import_onnx(tmp_path / "m.onnx", repeat_layers=True)
    imported.module.verify()
    assert imported.repeats == [] and len(key_masked_attentions(imported)) == 2


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", list(MODELS))
def test_padded_model_runs_on_the_device_model_at_16_tiles(name, route, tmp_path) -> None:
    imported, inputs, want = model_case(name, route, tmp_path)
    run = compile_and_run(imported.module, tiles=16, inputs=inputs)
    assert run.passed, (run.max_abs_error, run.max_rel_error)
    assert relative(run.outputs["result0"], want) <= RELATIVE_TOLERANCE["f32"]


# ---- masks written by hand ------------------------------------------------------------------
class HandAttention(torch.nn.Module):
    """softmax(q k^T / sqrt(d) + bias(mask)) v, the bias as `mask_bias` writes it (the
    pre-SDPA Hugging Face form by default)."""

    def __init__(self, mask_bias=None):
        super().__init__()
        self.mask_bias = mask_bias or (lambda m: (1.0 - m[:, None, None, :].float()) * -10000.0)

    def forward(self, q, k, v, mask):
        scores = q @ k.transpose(-1, -2) / 4.0
        return torch.softmax(scores + self.mask_bias(mask), dim=-1) @ v


def hand_inputs() -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 2, 16, 16, generator=generator) for _ in range(3))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 9:] = 0
    return q, k, v, mask


def exported(module: torch.nn.Module, route: str, directory: Path) -> Path:
    path = directory / f"{route}.onnx"
    torch.onnx.export(module, hand_inputs(), path, input_names=["q", "k", "v", "mask"],
                      opset_version=18 if route == "dynamo" else 17, dynamo=route == "dynamo")
    return path


@pytest.mark.parametrize("route", ["dynamo", "torchscript"])
def test_the_additive_form_one_minus_mask_times_large_negative_imports(route, tmp_path) -> None:
    module = HandAttention().eval()
    with torch.no_grad():
        want = module(*hand_inputs()).numpy()
    imported = import_onnx(exported(module, route, tmp_path))
    attentions = [op for op in imported.module.walk() if isinstance(op, graph.AttentionOp)]
    assert len(attentions) == 1 and attentions[0].key_mask is not None
    got = reference(imported, feeds(imported, tuple(t.numpy() for t in hand_inputs())))
    assert relative(got, want) <= RELATIVE_TOLERANCE["f32"]


@pytest.mark.parametrize("bias,message", [
    (lambda m: (1.0 - m[:, None, :, None].float()) * -10000.0,
     "does not read entry (batch, key) at logit (batch, head, query, key)"),
    (lambda m: (1.0 - m[:, None, None, :].float()) * -1.0,
     "adds -1 to the logits of keys whose entry is 0"),
    (lambda m: m[:, None, None, :].float() * -10000.0,
     "adds 0 to the logits of keys whose entry is 0"),
    (lambda m: (1.0 - m[:, None, None, :].float()) * -20000.0 + 1.0,
     "adds something other than 0 to the logits of keys whose entry is 1 (nor a causal mask"),
])
@pytest.mark.parametrize("route", ["dynamo", "torchscript"])
def test_masks_that_are_not_key_padding_masks_are_refused_by_name(route, bias, message,
                                                                   tmp_path) -> None:
    with pytest.raises(OnnxImportError) as info:
        import_onnx(exported(HandAttention(bias).eval(), route, tmp_path))
    assert "(Softmax): the attention mask computed from input 'mask' [2, 16] " in str(info.value)
    assert message in str(info.value)


class SdpaAttention(torch.nn.Module):
    def __init__(self, to_mask):
        super().__init__()
        self.to_mask = to_mask

    def forward(self, q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                                attn_mask=self.to_mask(mask))


def test_from_torch_imports_a_boolean_key_padding_mask() -> None:
    module = SdpaAttention(lambda m: m[:, None, None, :].bool()).eval()
    with torch.no_grad():
        want = module(*hand_inputs()).numpy()
    imported = from_torch(module, hand_inputs())
    got = reference(imported, feeds(imported, tuple(t.numpy() for t in hand_inputs())))
    assert relative(got, want) <= RELATIVE_TOLERANCE["f32"]


def test_from_torch_refuses_a_query_side_mask_by_name() -> None:
    module = SdpaAttention(lambda m: m[:, None, :, None].bool()).eval()
    with pytest.raises(TorchImportError, match=r"scaled_dot_product_attention.*the attention "
                       r"mask computed from input 'mask' \[2, 16\] does not read entry"):
        from_torch(module, hand_inputs())
