"""A repeat's carried value in the format its body yields it in (`passes/graph_to_mid.py`,
`lower_carried_as_yielded`; `passes/operators/repeat.py`, `hint_yielded_formats` and
`carry_in_hinted_formats`). A carried body argument takes the format of its first
consumer's plan, chosen before the op that computes the next iteration's value; where the
body then yields that value in another format, every iteration converts it. graph-to-mid
lowers the function again with the argument in the yielded format from the start and keeps
the cheaper lowering by its program estimate.

The case is BERT-base's 12-layer stack at `frontend.models.tiny`'s size on 16 tiles, where
the hinted lowering is the cheaper one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdsl.dialects import func
from xdsl.parser import Parser

import passes.graph_to_mid as graph_to_mid
from frontend.models import MODELS, build_model, tiny
from frontend.run import compile_and_run
from ipu_dialects import graph, mid
from passes.graph_to_mid import GraphToMidPass
from passes.operators.formats import tensor_format_of
from passes.operators.repeat import CARRIED_FORMATS_ATTR, hint_yielded_formats
from passes.operators.resident import source_of
from planning.program_estimate import program_estimate
from tools.ipu_run import compile_module
from tools.registry import make_context

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gemm_roofline import package_cycles

REPO = Path(__file__).resolve().parents[2]
CONFIG = tiny(MODELS["bert-base-x12"])
TILES = 16


def lowered(monkeypatch: pytest.MonkeyPatch | None = None):
    """The stack after graph-to-mid; with `monkeypatch`, without the second lowering (no
    repeat is said to convert what it yields)."""
    if monkeypatch is not None:
        monkeypatch.setattr(graph_to_mid, "hint_yielded_formats", lambda lowered, original: False)
    module = build_model(CONFIG)
    GraphToMidPass(tiles=TILES).apply(make_context(), module)
    return module


def function_of(module) -> func.FuncOp:
    return next(op for op in module.walk() if isinstance(op, func.FuncOp))


def yield_bridges(module) -> list[bool]:
    """For each value the stack's body yields: whether it is converted into its carried
    format (a bridge before `mid.yield`)."""
    (repeat,) = [op for op in module.walk() if isinstance(op, mid.RepeatOp)]
    terminator = repeat.body.block.last_op
    assert isinstance(terminator, mid.YieldOp)
    return [source_of(value) is not value for value in terminator.operands]


def test_without_the_hint_the_body_converts_what_it_yields(monkeypatch):
    assert any(yield_bridges(lowered(monkeypatch)))


def test_the_stack_is_carried_in_the_format_its_body_yields():
    module = lowered()
    assert not any(yield_bridges(module))
    (repeat,) = [op for op in module.walk() if isinstance(op, mid.RepeatOp)]
    terminator = repeat.body.block.last_op
    assert [tensor_format_of(a) for a in repeat.carried_args] == [
        tensor_format_of(v) for v in terminator.operands]


def test_the_hinted_lowering_is_kept_because_it_is_cheaper(monkeypatch):
    hinted = program_estimate(function_of(lowered()))
    plain = program_estimate(function_of(lowered(monkeypatch)))
    assert hinted < plain


def test_the_hint_does_not_outlive_graph_to_mid():
    assert CARRIED_FORMATS_ATTR not in str(lowered())


def test_each_repeat_is_told_the_formats_its_body_yielded(monkeypatch):
    module = lowered(monkeypatch)
    original = function_of(build_model(CONFIG))
    assert hint_yielded_formats(function_of(module), original)
    (graph_repeat,) = [op for op in original.walk() if isinstance(op, graph.RepeatOp)]
    (mid_repeat,) = [op for op in module.walk() if isinstance(op, mid.RepeatOp)]
    terminator = mid_repeat.body.block.last_op
    assert list(graph_repeat.attributes[CARRIED_FORMATS_ATTR].data) == [
        tensor_format_of(source_of(v)) for v in terminator.operands]


def test_a_costlier_hinted_lowering_is_not_kept(monkeypatch):
    """`examples/nested_repeat_f16.mlir` on 16 tiles: carried in the yielded formats its
    program estimate is higher (its inner body's first consumer wants rows), so the first
    lowering stays, bridges before its yields and all."""
    text = (REPO / "examples/nested_repeat_f16.mlir").read_text()

    def lowered_text(patch: bool):
        if patch:
            monkeypatch.setattr(graph_to_mid, "hint_yielded_formats",
                                lambda lowered, original: False)
        ctx = make_context()
        module = Parser(ctx, text).parse_module()
        GraphToMidPass(tiles=TILES).apply(ctx, module)
        return module

    kept = lowered_text(False)
    assert str(kept) == str(lowered_text(True))
    assert any(source_of(v) is not v for op in kept.walk() if isinstance(op, mid.YieldOp)
               for v in op.operands)


def test_the_carried_stack_runs_and_its_estimate_is_the_modeled_cycles():
    package = compile_module(build_model(CONFIG), TILES, "pad", with_assembly=False)
    assert package.metadata["estimated_cycles"] == sum(package_cycles(package))
    run = compile_and_run(build_model(CONFIG), TILES)
    assert run.passed, (run.max_abs_error, run.max_rel_error)
