"""Models as people export them (issue 26): each model by each import route, compiled for 16
tiles, run on the device model and checked against torch's own output.

Models (random weights, eval mode, no downloads):

- `fixture_block`: `examples/onnx/make_fixtures.py`'s GPT-2-style block (width 128, 2 heads,
  sequence 64, causal, exact GeLU), `randomized(Block(), seed=1)`, input `[1, 64, 128]`;
- `encoder_layer`: `torch.nn.TransformerEncoderLayer(128, 4, 512, activation="gelu",
  batch_first=True)`, input `[1, 64, 128]`;
- `gpt2`: `transformers.GPT2Model`, 2 layers, width 128, 4 heads, the default config (its
  activation `gelu_new`, GeLU's tanh form), from 16 token ids to the last hidden state;
- `gpt2_gelu`: the same with `activation_function="gelu"` (the exact form);
- `bert`: `transformers.BertModel`, 2 layers, width 128, 4 heads, MLP 512, from 16 token ids to
  the last hidden state;
- `bert_encoder`: that model's `.encoder` alone, from hidden states `[1, 16, 128]`.

Every model but the fixture block (already random) has each parameter moved off its initial
value (torch and HF start biases at zero and layer norms at the identity, which would hide a
dropped bias or affine).

Routes: `dynamo` (`torch.onnx.export(..., dynamo=True)`, torch's default exporter, opset 18,
then `import_onnx` as `ipu-import`), `torchscript` (`dynamo=False`, opset 17) and `from_torch`
(`frontend.torch_import.from_torch`, through `torch.export`). GPT-2 by `torchscript` is given
an all-ones `attention_mask`: without one torch's TorchScript exporter fails on `aten::diff`
(transformers' packed-sequence check). `encoder_layer` by `torchscript` is exported inside a
module whose forward is `layer(x)`: exporting the layer itself, torch's TorchScript exporter
passes every argument of its forward, `is_causal=False` as a tensor, and fails inside torch
(`scaled_dot_product_attention(): argument 'is_causal' must be bool, not Tensor`).

One row per cell: `status` (`PASS`, `FAIL`, or the first line of the import's or compile's
diagnostic), `cycles` (modeled, the device model's), `graph ops` (of the imported function),
`rel` (max |device - torch| / max |torch|; PASS is `ipu-run`'s f32 rule, rel <= 1e-4, and the
device model's own check against the NumPy reference). `--markdown` prints the table the README
holds (one row per model, the routes' cycles side by side).
Usage: python bench/exported_models.py [--models NAME ...] [--routes ROUTE ...] [--tiles 16]
                                       [--json] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "examples" / "onnx"))

import torch  # noqa: E402

ROUTES = ("dynamo", "torchscript", "from_torch")
SEQUENCE, WIDTH = 16, 128  # the HF models' tokens and width
TOLERANCE = 1e-4  # ipu-run's f32 tolerance (tools.run_io.RELATIVE_TOLERANCE["f32"])


@dataclass
class Case:
    """A module and its example input."""

    module: torch.nn.Module
    x: torch.Tensor


def fixture_block() -> Case:
    from make_fixtures import Block, randomized

    x = torch.randn(1, 64, 128, generator=torch.Generator().manual_seed(2))
    return Case(randomized(Block(), seed=1).eval(), x)


def randomized(model: torch.nn.Module) -> torch.nn.Module:
    """Every parameter moved off its initial value: torch and HF start biases at zero and layer
    norms at the identity, which would hide a bias or an affine the import dropped (and the
    dynamo exporter's optimizer drops zero biases and merges equal initializers)."""
    generator = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


class Wrapped(torch.nn.Module):
    """`layer(x)` alone: the TorchScript exporter passes every argument of the layer's own
    forward, `is_causal=False` as a tensor, which torch's attention then refuses."""

    def __init__(self, layer: torch.nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


def encoder_layer(route: str) -> Case:
    torch.manual_seed(3)
    layer = randomized(torch.nn.TransformerEncoderLayer(128, 4, 512, activation="gelu",
                                                        batch_first=True))
    x = torch.randn(1, 64, 128, generator=torch.Generator().manual_seed(2))
    return Case(Wrapped(layer) if route == "torchscript" else layer, x)


class LastHiddenState(torch.nn.Module):
    """An HF model's `last_hidden_state` from token ids, without the KV cache; `ones_mask`
    passes an all-ones `attention_mask` (the TorchScript exporter's GPT-2 needs one)."""

    def __init__(self, model: torch.nn.Module, ones_mask: bool = False) -> None:
        super().__init__()
        self.model, self.ones_mask = model, ones_mask

    def forward(self, ids):
        mask = ({"attention_mask": torch.ones(ids.shape, dtype=torch.long)}
                if self.ones_mask else {})
        return self.model(input_ids=ids, use_cache=False, **mask).last_hidden_state


class Encoder(torch.nn.Module):
    """`BertModel.encoder` from hidden states to its last hidden state."""

    def __init__(self, encoder: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, hidden):
        return self.encoder(hidden).last_hidden_state


def token_ids() -> torch.Tensor:
    return torch.randint(0, 1000, (1, SEQUENCE), generator=torch.Generator().manual_seed(1))


def gpt2_model(**config) -> torch.nn.Module:
    import transformers

    torch.manual_seed(0)
    return randomized(transformers.GPT2Model(transformers.GPT2Config(
        n_layer=2, n_embd=WIDTH, n_head=4, n_positions=64, vocab_size=1000, **config)))


def bert_model() -> torch.nn.Module:
    import transformers

    torch.manual_seed(0)
    return randomized(transformers.BertModel(transformers.BertConfig(
        num_hidden_layers=2, hidden_size=WIDTH, num_attention_heads=4, intermediate_size=512,
        vocab_size=1000, max_position_embeddings=64)))


def gpt2(route: str) -> Case:
    return Case(LastHiddenState(gpt2_model(), route == "torchscript").eval(), token_ids())


def gpt2_gelu(route: str) -> Case:
    return Case(LastHiddenState(gpt2_model(activation_function="gelu"),
                                route == "torchscript").eval(), token_ids())


def bert(route: str) -> Case:
    return Case(LastHiddenState(bert_model()).eval(), token_ids())


def bert_encoder(route: str) -> Case:
    hidden = torch.randn(1, SEQUENCE, WIDTH, generator=torch.Generator().manual_seed(1))
    encoder = bert_model().encoder
    assert isinstance(encoder, torch.nn.Module)
    return Case(Encoder(encoder).eval(), hidden)


MODELS: dict[str, Callable[[str], Case]] = {
    "fixture_block": lambda route: fixture_block(),
    "encoder_layer": encoder_layer,
    "gpt2": gpt2, "gpt2_gelu": gpt2_gelu, "bert": bert, "bert_encoder": bert_encoder,
}
TITLES = {
    "fixture_block": "the project's fixture block (`examples/onnx/make_fixtures.py`)",
    "encoder_layer": "`torch.nn.TransformerEncoderLayer(128, 4, 512, activation='gelu', "
                     "batch_first=True)`",
    "gpt2": "`transformers.GPT2Model` (2 layers, d 128), default config (`gelu_new`)",
    "gpt2_gelu": "the same with `activation_function=\"gelu\"`",
    "bert": "`transformers.BertModel` (2 layers, d 128)",
    "bert_encoder": "`BertModel.encoder` alone",
}


def imported_by(name: str, route: str, case: Case, directory: Path):
    """The ImportedModel of `case` by `route` (an ONNX export goes through directory)."""
    from frontend.onnx import import_onnx

    if route == "from_torch":
        from frontend.torch_import import from_torch

        return from_torch(case.module, (case.x,))
    path = directory / f"{name}.{route}.onnx"
    torch.onnx.export(case.module, (case.x,), path, input_names=["x"], output_names=["y"],
                      opset_version=18 if route == "dynamo" else 17, dynamo=route == "dynamo")
    return import_onnx(path)


def feeds(imported, x: np.ndarray) -> dict[str, np.ndarray]:
    """The weights and the model's one input (token ids as i32) by argument name."""
    from xdsl.dialects.func import FuncOp

    from interpreters.graph import input_names

    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    (user,) = [n for n in input_names(func) if n not in imported.weights]
    array = x.astype(np.int32) if np.issubdtype(x.dtype, np.integer) else x
    return {**imported.weights, user: array}


def relative(got: np.ndarray, want: np.ndarray) -> float:
    want = want.astype(np.float64)
    return float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())


def graph_ops(module) -> int:
    return sum(1 for op in module.walk() if op.name.startswith("graph."))


@dataclass
class Cell:
    model: str
    route: str
    status: str = ""  # PASS, FAIL, or the first line of the failure
    cycles: int | None = None
    graph_ops: int | None = None
    rel: float | None = None  # device vs torch
    seconds: float | None = None


def first_line(error: BaseException, width: int = 160) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    text = f"{type(error).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= width else text[:width - 3] + "..."


def run_cell(name: str, route: str, tiles: int, directory: Path) -> Cell:
    """Import `name` by `route`, compile for `tiles`, run on the device model, check vs torch."""
    from frontend.run import compile_and_run

    cell, start = Cell(name, route), time.monotonic()
    try:
        case = MODELS[name](route)
        with torch.no_grad():
            want = case.module(case.x).numpy()
        imported = imported_by(name, route, case, directory)
        cell.graph_ops = graph_ops(imported.module)
        run = compile_and_run(imported.module, tiles=tiles,
                              inputs=feeds(imported, case.x.numpy()))
        cell.cycles, cell.rel = run.cycles, relative(run.outputs["result0"], want)
        cell.status = "PASS" if run.passed and cell.rel <= TOLERANCE else "FAIL"
    except Exception as error:  # a cell's failure is its result
        cell.status = first_line(error)
    cell.seconds = round(time.monotonic() - start, 1)
    return cell


def markdown(cells: list[Cell], routes: list[str]) -> str:
    by = {(c.model, c.route): c for c in cells}
    names = {"dynamo": "ONNX `dynamo=True`", "torchscript": "ONNX `dynamo=False`",
             "from_torch": "`from_torch`"}
    lines = ["| model | " + " | ".join(names[r] for r in routes) + " |",
             "|---|" + "---:|" * len(routes)]
    for model in dict.fromkeys(c.model for c in cells):
        row = []
        for route in routes:
            cell = by.get((model, route))
            if cell is None:
                row.append("")
            elif cell.status == "PASS":
                row.append(f"PASS, {cell.cycles:,}")
            else:
                row.append(cell.status.replace("|", "\\|"))
        lines.append(f"| {TITLES[model]} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--routes", nargs="+", choices=ROUTES, default=list(ROUTES))
    parser.add_argument("--tiles", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    cells = []
    with tempfile.TemporaryDirectory() as directory:
        for name in args.models:
            for route in args.routes:
                cell = run_cell(name, route, args.tiles, Path(directory))
                cells.append(cell)
                if not args.json:
                    rel = "" if cell.rel is None else f"{cell.rel:.1e}"
                    cycles = "" if cell.cycles is None else f"{cell.cycles:,}"
                    print(f"{name:14} {route:12} {cycles:>10} {rel:>8} {cell.seconds:6.1f}s "
                          f"{cell.status}", flush=True)
    if args.json:
        print(json.dumps([asdict(c) for c in cells], indent=1))
    elif args.markdown:
        print()
        print(markdown(cells, args.routes))


if __name__ == "__main__":
    main()
