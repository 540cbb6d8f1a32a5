"""The "no valid operator plan" diagnostic: a lead sentence when candidates were refused for
want of tile memory (what does not fit, and the fewest tiles that help), then each
candidate's reason; without a memory reason, the reasons alone."""

from __future__ import annotations

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from passes import get_all_passes
from planning.plan_reasons import MemoryReason, no_plan_message
from tools.ipu_run import make_context


def test_the_lead_names_the_fewest_tiles_that_help():
    message = no_plan_message([
        ("r16", MemoryReason("a tile needs 9 bytes; it fits on 4 tiles", 4)),
        ("grid", MemoryReason("a grid tile needs 7 bytes; it fits on 2 tiles", 2)),
        ("f32", "init kernel does not run f16 operands"),
    ])
    assert message == (
        "no valid operator plan: none of the 2 candidate(s) that could run it fits in tile "
        "memory; the fewest tiles that help: 2 (grid). Per candidate: r16: a tile needs 9 "
        "bytes; it fits on 4 tiles; grid: a grid tile needs 7 bytes; it fits on 2 tiles; f32: "
        "init kernel does not run f16 operands")


def test_the_lead_says_when_no_tile_count_helps_and_when_that_is_not_known():
    none_helps = [("r16", MemoryReason("too big; no tile count helps", no_tile_count=True))]
    assert no_plan_message(none_helps).startswith(
        "no valid operator plan: no candidate fits in tile memory, on any tile count. "
        "Per candidate: r16: too big")
    unknown = [("add_split0", MemoryReason("a tile needs 9 bytes")),
               ("add_split1", MemoryReason("a tile needs 9 bytes"))]
    assert no_plan_message(unknown) == (
        "no valid operator plan: no candidate fits in tile memory. Per candidate: "
        "add_split0, add_split1: a tile needs 9 bytes")


def test_reasons_other_than_memory_are_the_message_and_an_empty_catalog_is_named():
    assert no_plan_message([("a", "lhs is transposed"), ("b", "lhs is transposed")]) == (
        "no valid operator plan: a, b: lhs is transposed")
    assert no_plan_message([]) == "no valid operator plan: the operator catalog is empty"


def test_a_gemm_too_large_for_one_tile_leads_with_the_tile_count_that_helps():
    text = """
    func.func @f(%a: tensor<16x512xf16>, %b: tensor<512x512xf16>) -> tensor<16x512xf16> {
      %c = graph.gemm %a, %b : (tensor<16x512xf16>, tensor<512x512xf16>) -> tensor<16x512xf16>
      func.return %c : tensor<16x512xf16>
    }"""
    module = Parser(make_context(), text).parse_module()
    with pytest.raises(PassFailedException) as caught:
        get_all_passes()["graph-to-mid"]()(tiles=1).apply(make_context(), module)
    first_sentence = str(caught.value).split(". Per candidate: ")[0]
    assert first_sentence.endswith("fits in tile memory; the fewest tiles that help: 2 "
                                   "(amp_gemm_f16_r16)")
