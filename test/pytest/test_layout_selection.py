"""Layout-op selection with what it leaves its consumers: a gather candidate counts the slot
it stages each operand shard in, and a candidate whose result format leaves a layout
consumer with no valid plan is refused while another one is valid. BERT-base at batch 8 on
256 tiles was the case: the heads' merge after attention chose shards of 393,216 bytes, and
the reshape after it had no plan that fit."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import TensorType, f16

from device.target import IPU21
from passes.operators.base import STARVES_A_CONSUMER, Candidate, unless_every_one_starves
from passes.operators.costs import shard_memory_reason
from passes.operators.formats import split_format
from passes.operators.pointwise import pointwise_plan
from tools.ipu_run import compile_module

BENCH = Path(__file__).resolve().parents[2] / "bench"


def shard_type(shape, axis, parts) -> TensorType:
    plain = TensorType(f16, shape)
    return TensorType(f16, shape, split_format(shape, axis, parts, plain, "pad"))


def test_a_gather_candidate_counts_its_staging_slot():
    # two 196,608-byte shards fit a tile, and beside them a slot of as many; one of 262,144
    # does not
    types = [shard_type([8, 384, 12, 64], 1, 24), shard_type([8, 384, 12, 64], 1, 24)]
    assert shard_memory_reason(types, IPU21) is None
    assert shard_memory_reason(types, IPU21, slot=196608) is None
    reason = shard_memory_reason(types, IPU21, slot=262144)
    assert reason is not None and "a 262144-byte gather slot included" in reason


def candidate(name: str, reason: str | None) -> Candidate:
    fmt = split_format([4], 0, 4, TensorType(f16, [4]), "pad")
    plan = pointwise_plan(name, "view_shard", {"src": fmt, "out": fmt}, 8)
    return Candidate(plan, reason, 10)


def test_a_candidate_that_starves_its_consumer_loses_to_any_valid_one():
    kept = unless_every_one_starves([candidate("a", STARVES_A_CONSUMER), candidate("b", None)])
    assert [c.reason for c in kept] == [STARVES_A_CONSUMER, None]


def test_when_every_candidate_starves_the_consumer_they_stay_valid():
    kept = unless_every_one_starves([candidate("a", STARVES_A_CONSUMER),
                                     candidate("b", "too big")])
    assert [c.reason for c in kept] == [None, "too big"]


@pytest.mark.slow  # a real-size layer's compile, about ten seconds
def test_bert_base_at_batch_8_compiles_for_256_tiles(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import models  # bench/models.py

    from frontend.models import build_model

    package = compile_module(build_model(models.case_config("bert-base-b8", False)), 256,
                             "pad", with_assembly=False)
    assert package.tiles == 256
