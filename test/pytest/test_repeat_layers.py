"""`ipu-import --repeat-layers` (frontend/repeat_layers.py): the 4-layer GPT-2-style stack
becomes one graph.repeat that computes what the plain import computes (reference and device
model, against torch), a model without repeated blocks is imported unchanged, and the
structural rules on small graphs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import f32
from xdsl.dialects.func import FuncOp
from xdsl.printer import Printer

from frontend.builder import GraphBuilder
from frontend.imported import ImportedModel
from frontend.repeat_layers import repeat_layers, stacked_name
from interpreters.graph import input_names, run_function
from ipu_dialects.graph import RepeatOp
from tools.ipu_import import import_main
from tools.ipu_run import RELATIVE_TOLERANCE, run_main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "onnx"


def imported_dir(tmp_path: Path, dtype: str, repeat: bool, name: str = "gpt2_stack4") -> Path:
    out = tmp_path / f"{name}-{dtype}-{'repeat' if repeat else 'plain'}"
    assert import_main(EXAMPLES / f"{name}.onnx", out, dtype, repeat_layers=repeat) == 0
    return out


def run_imported(directory: Path, tmp_path: Path, capsys, **options) -> np.ndarray:
    io = np.load(EXAMPLES / "gpt2_stack4.io.npz")
    np.save(tmp_path / "x.npy", io["x"])
    results = directory / "results"
    status = run_main(directory / "model.mlir", inputs=[f"x={tmp_path / 'x.npy'}"],
                      save_dir=results, archive=str(directory / "weights.npz"), **options)
    out = capsys.readouterr().out
    assert status == 0
    assert "check: PASS" in out or options.get("reference")
    return np.load(results / "result0.npy").astype(np.float64)


def relative_to_torch(got: np.ndarray) -> float:
    want = np.load(EXAMPLES / "gpt2_stack4.io.npz")["y"].astype(np.float64)
    return float(np.abs(got - want).max() / np.abs(want).max())


# -- the 4-layer stack ----------------------------------------------------------------------------


def test_stack_becomes_one_repeat_with_stacked_weights(tmp_path, capsys) -> None:
    plain, repeated = imported_dir(tmp_path, "f32", False), imported_dir(tmp_path, "f32", True)
    out = capsys.readouterr().out
    assert ("repeated layers: 4 blocks of 25 ops became one graph.repeat, with 12 stacked "
            "weights") in out
    assert "(26 graph ops)" in out and "(12 weights)" in out
    text = (repeated / "model.mlir").read_text()
    assert text.count("graph.repeat") == 1 and "graph.repeat 4 carried(" in text
    assert text.count("graph.attention") == 1 and text.count("graph.layer_norm") == 2
    weights, per_layer = np.load(repeated / "weights.npz"), np.load(plain / "weights.npz")
    assert len(weights.files) == 12 and len(per_layer.files) == 48
    assert weights.files[:3] == ["v0-3.ln_1.weight", "v0-3.ln_1.bias", "onnx__MatMul.478.x4"]
    assert weights["onnx__MatMul.478.x4"].shape == (4, 128, 384)
    for i, matmul in enumerate(("478", "501", "524", "547")):
        np.testing.assert_array_equal(weights["v0-3.ln_1.weight"][i], per_layer[f"v{i}.ln_1.weight"])
        np.testing.assert_array_equal(weights["onnx__MatMul.478.x4"][i],
                                      per_layer[f"onnx__MatMul.{matmul}"])
    assert all(f"%{name}: tensor<4x" in text for name in weights.files)


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_repeat_matches_the_plain_import_and_torch_under_reference(dtype, tmp_path, capsys) -> None:
    plain = run_imported(imported_dir(tmp_path, dtype, False), tmp_path, capsys, reference=True)
    repeated = run_imported(imported_dir(tmp_path, dtype, True), tmp_path, capsys, reference=True)
    # the same ops in the same order, each rounded to the element type: the same numbers
    np.testing.assert_array_equal(repeated, plain)
    assert relative_to_torch(repeated) <= RELATIVE_TOLERANCE[dtype]


@pytest.mark.slow
@pytest.mark.parametrize("dtype,tiles", [("f32", 16), ("f32", 64), ("f16", 16), ("f16", 64)])
def test_repeat_passes_on_the_device_model(dtype, tiles, tmp_path, capsys) -> None:
    """measured against torch: f32 6e-7, f16 1.4e-3 (rel. to the largest output)"""
    got = run_imported(imported_dir(tmp_path, dtype, True), tmp_path, capsys, tiles=tiles)
    assert relative_to_torch(got) <= RELATIVE_TOLERANCE[dtype]


def test_model_without_repeated_blocks_is_imported_unchanged(tmp_path, capsys) -> None:
    plain = imported_dir(tmp_path, "f32", False, "gpt2_block")
    capsys.readouterr()
    repeated = imported_dir(tmp_path, "f32", True, "gpt2_block")
    captured = capsys.readouterr()
    assert "ipu-import: note: --repeat-layers found no consecutive blocks of identical structure; " \
           "the model is imported without a graph.repeat" in captured.err
    assert "repeated layers" not in captured.out
    assert (repeated / "model.mlir").read_text() == (plain / "model.mlir").read_text()
    a, b = np.load(plain / "weights.npz"), np.load(repeated / "weights.npz")
    assert a.files == b.files and all(np.array_equal(a[n], b[n]) for n in a.files)


# -- the rules, on small graphs -------------------------------------------------------------------


def chain(layers: int, weight_shapes=None, shared_bias: bool = False, leak: int | None = None,
          suffix: bool = False) -> ImportedModel:
    """x -> x + x -> `layers` x (gemm with its own weight, add a bias, gelu) [-> gelu].
    `leak`: layer whose gemm result is also returned (a second value leaving that block)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder("f")
    x = b.input([4, 8], f32, name="x")
    x = b.add(x, x)
    weights: dict[str, np.ndarray] = {}
    bias = None
    extra = []
    for i in range(layers):
        shape = (weight_shapes or {}).get(i, (8, 8))
        weights[f"w{i}"] = rng.standard_normal(shape).astype(np.float32)
        w = b.input(list(shape), f32, name=f"w{i}")
        if bias is None or not shared_bias:
            name = "bias" if shared_bias else f"layer{i}.bias"
            weights[name] = rng.standard_normal(8).astype(np.float32)
            bias = b.input([8], f32, name=name)
        y = b.gemm(x, w)
        if i == leak:
            extra.append(y)
        x = b.gelu(b.add(y, bias))
    if suffix:
        x = b.gelu(x)
    b.output(x, *extra)
    return ImportedModel(b.build(), weights)


def run(model: ImportedModel) -> list[np.ndarray]:
    func = next(op for op in model.module.ops if isinstance(op, FuncOp))
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    return run_function(model.module, [x if n == "x" else model.weights[n] for n in input_names(func)])


def repeats_in(model: ImportedModel) -> list[RepeatOp]:
    return [op for op in model.module.walk() if isinstance(op, RepeatOp)]


def test_small_chain_with_prefix_and_suffix() -> None:
    model, before = chain(3, suffix=True), run(chain(3, suffix=True))
    runs = repeat_layers(model)
    assert [(r.count, r.block_ops) for r in runs] == [(3, 3)]
    assert runs[0].sequences == {"w0-2": ["w0", "w1", "w2"],
                                 "layer0-2.bias": ["layer0.bias", "layer1.bias", "layer2.bias"]}
    (repeat,) = repeats_in(model)
    func = next(op for op in model.module.ops if isinstance(op, FuncOp))
    top = [op.name for op in func.body.block.ops]
    assert top == ["graph.add", "graph.repeat", "graph.gelu", "func.return"]
    assert len(repeat.sequences) == 2 and not repeat.invariants
    np.testing.assert_array_equal(run(model)[0], before[0])


def test_shared_weight_becomes_an_invariant() -> None:
    model, before = chain(4, shared_bias=True), run(chain(4, shared_bias=True))
    (run_,) = repeat_layers(model)
    (repeat,) = repeats_in(model)
    assert run_.sequences == {"w0-3": ["w0", "w1", "w2", "w3"]}
    assert [v.name_hint for v in repeat.invariants] == ["bias"]
    assert list(model.weights) == ["w0-3", "bias"]
    np.testing.assert_array_equal(run(model)[0], before[0])


def test_the_shortest_block_wins_among_runs_covering_as_much() -> None:
    """Four layers are also two blocks of two layers: the repeat is of the four."""
    model = chain(4)
    assert [(r.count, r.block_ops) for r in repeat_layers(model)] == [(4, 3)]


def gelus() -> ImportedModel:
    b = GraphBuilder("f")
    b.output(b.gelu(b.gelu(b.gelu(b.input([4, 8], f32, name="x")))))
    return ImportedModel(b.build(), {})


@pytest.mark.parametrize("make", [
    lambda: chain(1),  # one block
    gelus,  # identical blocks, but no weights of their own: not layers
    lambda: chain(3, leak=1),  # a second value leaves the middle block
])
def test_no_repeat_without_identical_consecutive_blocks(make) -> None:
    model = make()
    text_before = str(model.module)
    names_before = list(model.weights)
    assert repeat_layers(model) == []
    assert str(model.module) == text_before and list(model.weights) == names_before


def test_a_block_giving_away_a_second_value_stays_outside() -> None:
    model = chain(3, leak=2)
    before = run(chain(3, leak=2))
    assert [(r.count, r.block_ops) for r in repeat_layers(model)] == [(2, 3)]
    assert list(model.weights) == ["w0-1", "layer0-1.bias", "w2", "layer2.bias"]
    for got, want in zip(run(model), before, strict=True):
        np.testing.assert_array_equal(got, want)


def test_blocks_of_another_shape_break_the_run() -> None:
    rng = np.random.default_rng(1)
    b = GraphBuilder("f")
    x = b.input([4, 8], f32, name="x")
    weights = {}
    for i, width in enumerate((8, 8, 16, 16, 16)):
        # layers 0, 1: [4, 8] -> [4, 8]; layer 2: [4, 8] -> [4, 16]; layers 3, 4: [4, 16] -> [4, 16]
        rows = x.type.get_shape()[-1]
        weights[f"w{i}"] = rng.standard_normal((rows, width)).astype(np.float32)
        x = b.gelu(b.gemm(x, b.input([rows, width], f32, name=f"w{i}")))
    b.output(x)
    model = ImportedModel(b.build(), weights)
    runs = repeat_layers(model)
    assert [(r.count, r.block_ops) for r in runs] == [(2, 2), (2, 2)]
    assert [list(r.sequences) for r in runs] == [["w0-1"], ["w3-4"]]


def test_stacked_names() -> None:
    assert stacked_name(["v0.ln_1.weight", "v1.ln_1.weight"], set()) == "v0-1.ln_1.weight"
    assert stacked_name(["h.3.w", "h.4.w", "h.5.w"], set()) == "h.3-5.w"
    assert stacked_name(["m.478", "m.501"], set()) == "m.478.x2"
    assert stacked_name(["a0", "a2"], set()) == "a0.x2"  # not counting by one
    assert stacked_name(["w0", "w1"], {"w0-1"}) == "w0-1.1"


def test_printed_repeat_parses_back(tmp_path) -> None:
    """The stacked names (with '-') and the body's names survive a print and parse."""
    from xdsl.parser import Parser

    from tools.registry import make_context

    model = chain(3)
    repeat_layers(model)
    text = tmp_path / "m.mlir"
    with open(text, "w") as stream:
        Printer(stream=stream).print_op(model.module)
    module = Parser(make_context(), text.read_text()).parse_module()
    module.verify()
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    assert input_names(func) == ["x", "w0-2", "layer0-2.bias"]


def identical_adds(count: int, chained: bool) -> ImportedModel:
    """`count` identical adds, each of its own weight: chained (layers of one op) or each
    reading the input (no carried value: no layers)."""
    b = GraphBuilder("f")
    x0 = x = b.input([4, 8], f32, name="x")
    weights, results = {}, []
    for i in range(count):
        weights[f"w{i}"] = np.zeros(8, np.float32)
        y = b.add(x if chained else x0, b.input([8], f32, name=f"w{i}"))
        x = y if chained else x
        results.append(y)
    b.output(x) if chained else b.output(*results)
    return ImportedModel(b.build(), weights)


def many_gelus(count: int) -> ImportedModel:
    b = GraphBuilder("f")
    x = b.input([4, 8], f32, name="x")
    for _ in range(count):
        x = b.gelu(x)
    b.output(x)
    return ImportedModel(b.build(), {})


@pytest.mark.parametrize("make, runs", [
    (lambda: many_gelus(2500), []),
    (lambda: identical_adds(2500, chained=False), []),
    (lambda: identical_adds(2500, chained=True), [(2500, 1)]),
])
def test_the_run_search_on_2500_identical_nodes_is_fast(make, runs) -> None:
    """The search was O(N^2 log N) runs, each matched in O(N): 2,500 identical nodes took
    minutes. Runs are generated lazily, most ops first, with the necessary conditions
    (a weight per block, a value from the block before) checked in NumPy."""
    import time

    model = make()
    started = time.perf_counter()
    assert [(r.count, r.block_ops) for r in repeat_layers(model)] == runs
    assert time.perf_counter() - started < 60  # 1 to 2 s on an idle core; minutes before


@pytest.mark.parametrize("limit, message", [
    ("MAX_REPEAT_ELEMENTS", "signature elements (MAX_REPEAT_ELEMENTS, device/limits.py); "
                            "import the model without --repeat-layers"),
    ("MAX_REPEAT_VISITS", "ops of candidate runs (MAX_REPEAT_VISITS, device/limits.py)"),
])
def test_the_run_search_is_bounded(monkeypatch, limit, message) -> None:
    from frontend import repeat_layers as module

    monkeypatch.setattr(module, limit, 50)  # the first run tried: 90 ops
    with pytest.raises(module.RepeatSearchError, match=re.escape(
            "--repeat-layers: the search for repeated blocks would look at more than 50 " + message)):
        repeat_layers(chain(30))
