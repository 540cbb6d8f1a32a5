"""`#tile.schedule` (`ExchangeScheduleAttr`): its text round-trips, and its own verifier
refuses each bad field with a message naming it, whether built in Python or parsed (then as
a parse error at the attribute's text)."""

from __future__ import annotations

import re

import pytest
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntAttr, SymbolRefAttr, i32, i64
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from ipu_dialects.tile import ExchangeScheduleAttr, RowPatchAttr
from tools.registry import make_context

GOOD = ExchangeScheduleAttr(
    ["s", "r"], [0, -1, 0], [1, -1, 1], 0x4C040, row_loops=[0, 2],
    patches=[RowPatchAttr("r", 0, "xpic", [3, 4, 5])], placed=(0x5C000, 0x60000))


def parse(text: str):
    return Parser(make_context(), text).parse_attribute()


def test_the_schedule_round_trips_with_and_without_its_optional_fields():
    least = ExchangeScheduleAttr(["s"], [0], [0], 0)
    assert str(least) == ("#tile.schedule<rows = [@s], sender_rows = [0], receiver_rows = [0], "
                          "row_address = 0x0>")
    for schedule in (GOOD, least):
        assert parse(str(schedule)) == schedule
    assert GOOD.loop_positions(3) == [0, 2] and least.loop_positions(2) == [0, 1]
    assert GOOD.placed_addresses == (0x5C000, 0x60000) and least.placed_addresses is None
    assert GOOD.senders == (0, -1, 0) and GOOD.entry_count == 3 and GOOD.address == 0x4C040


def dense(elt, values):
    return DenseArrayBase.from_list(elt, values)


@pytest.mark.parametrize("fields, message", [
    (dict(rows=ArrayAttr([])), "#tile.schedule: rows must name at least one exchange.row"),
    (dict(rows=ArrayAttr([SymbolRefAttr("s"), SymbolRefAttr("s")])), "rows names @s twice"),
    (dict(row_loops=dense(i32, [0, 2])), "#tile.schedule: row_loops must be an array<i64: ...>"),
    (dict(row_loops=dense(i64, [2, 0])), "#tile.schedule: row_loops [2, 0] must be strictly increasing loop positions (0: the outermost)"),
    (dict(row_loops=dense(i64, [1, 1])), "#tile.schedule: row_loops [1, 1] must be strictly"),
    (dict(row_loops=dense(i64, [-1])), "#tile.schedule: row_loops [-1] must be strictly"),
    (dict(sender_rows=dense(i64, [0, -1, 0])), "#tile.schedule: sender_rows must be an array<i32: ...>"),
    (dict(receiver_rows=dense(i64, [1, -1, 1])), "receiver_rows must be an array<i32"),
    (dict(sender_rows=dense(i32, [0, -1, 2])), "#tile.schedule: sender_rows selects row 2, outside"),
    (dict(receiver_rows=dense(i32, [1, -1, -2])), "receiver_rows selects row -2, outside the 2"),
    (dict(sender_rows=dense(i32, [0, -1])), "sender_rows has 2 entries and receiver_rows 3"),
    (dict(sender_rows=dense(i32, [0, 0, 0])), "entry 1 has sender row 0 and receiver row -1; an (iteration, group) without traffic has -1 in both"),
    (dict(patches=ArrayAttr([RowPatchAttr("x", 0, "xpic", [3, 4, 5])])),
     "#tile.schedule: patches name @x, which is not one of its rows"),
    (dict(patches=ArrayAttr([RowPatchAttr("r", 0, "xpic", [3, 4])])),
     "the patch of @r instruction 0 field 'xpic' has 2 values, but sender_rows has 3 entries"),
    (dict(row_address=IntAttr(0x4C042)), "#tile.schedule: row_address 0x4c042 must be a word-aligned byte address"),
    (dict(row_address=IntAttr(-4)), "#tile.schedule: row_address -0x4 must be a word-aligned"),
    (dict(row_address=IntAttr(1 << 64)), "row_address 0x10000000000000000 must be a word-aligned"),
    (dict(placed=dense(i64, [1, 2, 3])), "#tile.schedule: placed must hold the source and the destination address (array<i64: src, dst>, each >= 0), got"),
    (dict(placed=dense(i32, [1, 2])), "#tile.schedule: placed must hold"),
    (dict(placed=dense(i64, [1, -2])), "#tile.schedule: placed must hold"),
], ids=["no-rows", "row-twice", "row-loops-i32", "row-loops-decreasing", "row-loops-repeated",
        "row-loops-negative", "senders-i64", "receivers-i64", "sender-past-end",
        "receiver-below-minus-one", "selection-lengths", "minus-one-in-one", "patch-row",
        "patch-length", "address-misaligned", "address-negative", "address-huge",
        "placed-three", "placed-i32", "placed-negative"])
def test_the_verifier_refuses_each_bad_field_naming_it(fields, message):
    with pytest.raises(VerifyException, match=re.escape(message)):
        GOOD.changed(**fields)


def test_a_patch_instruction_is_not_negative():
    with pytest.raises(VerifyException, match=r"#tile.patch of @r: instruction -1 must be >= 0"):
        RowPatchAttr("r", -1, "xpic", [1])


@pytest.mark.parametrize("text, message", [
    ("#tile.schedule<rows = [@s], sender_rows = [1], receiver_rows = [0], row_address = 0x0>",
     "#tile.schedule: sender_rows selects row 1, outside the 1 rows"),
    ("#tile.schedule<rows = [@s], sender_rows = [0]>",
     "#tile.schedule: needs receiver_rows, row_address"),
    ("#tile.schedule<rows = [@s], rows = [@s]>", "#tile.schedule: repeated field 'rows'"),
    ("#tile.schedule<rows = [@s], bogus = [1]>", "#tile.schedule: unknown field 'bogus'; the fields are rows, row_loops, sender_rows, receiver_rows, patches, row_address, placed, each once"),
    ("#tile.schedule<rows = [@s], sender_rows = [2147483648]>",
     "integer 2147483648 does not fit in 32 bits (i32)"),
], ids=["verifier", "missing", "repeated", "unknown", "i32-range"])
def test_a_bad_schedule_in_text_is_a_located_parse_error(text, message):
    with pytest.raises(ParseError, match=re.escape(message)) as error:
        parse(text)
    assert error.value.span.start > 0  # at the attribute's text, not without a location
