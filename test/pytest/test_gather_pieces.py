"""The gather of contiguous pieces (`passes/operators/gather.py`, `piece_plan`): when the
input format is the result's with each shard's leading axis cut into k pieces whose bytes are
consecutive ranges of the result shard's (one copy, the all-padding tail left out), and no
tile is sent its own piece, the gather is a phase per piece straight into the result (no
slot, no take). How whole-shard spreads of a repeat's sequences are fetched
(`passes/operators/sequence_spread.py`, `whole_shard_window`), and any conversion of that shape.

Each case is one rearrangement (`test_gather_concurrent.py`'s harness), run on the device
model from its encoded rows and compared bit-exactly with its input; the selector's price of
it (`conversion_type_cycles`) is the cycles the model charges."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from test_gather_concurrent import assert_moved_exactly, case, scheduled, tensor
from xdsl.dialects.builtin import TensorType

from device.target import IPU21
from ipu_dialects.tile import ExchangeOp, KernelOp, LoopOp
from passes.operators.costs import conversion_type_cycles
from passes.operators.gather import piece_plan, pieces_contiguous
from passes.operators.sequence_spread import piece_plan_starts
from planning.shard_geometry import geometry
from tools.package_writer import build_package
from tools.registry import make_context

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gemm_roofline import package_cycles


def fmt(precision: str, order: str, tiling: str, parts: int, replication: int = 1,
        first_tile: int = 0) -> str:
    first = f", first_tile = {first_tile}" if first_tile else ""
    return (f"#mid.format<{precision}, {order}, [{tiling}], replication = {replication}, "
            f"group = {parts * replication}, standard{first}>")


# (shape, element, input format, result format, tiles, pieces)
CASES = {
    # a K-split's B (replicated in its two layers, K cut 4 ways of which 2 hold elements)
    # stored as its two real row chunks of whole shards past the result's tiles
    "whole shards to their replicas": (
        (128, 128), "f16", fmt("f16", "amp_right", "64 x 2 pad, 64 x 2 pad", 4, first_tile=16),
        fmt("f16", "amp_right", "64 x 4 pad, 64 x 2 pad", 8, replication=2), 24, 1),
    # 128-row shards of one 64-column panel as two 64-row blocks each
    "amp_right shards in two pieces": (
        (256, 128), "f16", fmt("f16", "amp_right", "64 x 4 pad, 64 x 2 pad", 8, first_tile=8),
        fmt("f16", "amp_right", "128 x 2 pad, 64 x 2 pad", 4), 16, 2),
    # a result moved off tile 0 (a pointwise plan's origin), its input where it was
    "whole shards to a result that starts past tile 0": (
        (8, 64), "f32", fmt("f32", "row_major", "1 x 8 pad, 1 x 1 pad", 8),
        fmt("f32", "row_major", "1 x 8 pad, 1 x 1 pad", 8, first_tile=8), 16, 1),
    # row-major rows, four a shard, on tiles that overlap the result's: senders also
    # receive (full duplex), none its own piece
    "row-major pieces on overlapping tiles": (
        (16, 64), "f32", fmt("f32", "row_major", "1 x 16 pad, 1 x 1 pad", 16, first_tile=2),
        fmt("f32", "row_major", "4 x 4 pad, 1 x 1 pad", 4), 18, 4),
}


def types(shape, element, src, dst) -> tuple[TensorType, TensorType]:
    from xdsl.parser import Parser

    ctx = make_context()
    return (Parser(ctx, tensor(shape, element, src)).parse_attribute(),
            Parser(ctx, tensor(shape, element, dst)).parse_attribute())


@pytest.mark.parametrize("name", CASES)
def test_a_piece_gather_moves_every_element_in_a_phase_per_piece(name):
    shape, element, src, dst, tiles, pieces = CASES[name]
    module = scheduled(case(shape, element, src, dst, tiles))
    (exchange,) = [op for op in module.walk() if isinstance(op, ExchangeOp)]
    assert "at its piece's bytes" in exchange.provenance.reason.data
    loop = exchange.parent_op()
    rounds = loop.upper_bound - loop.lower_bound if isinstance(loop, LoopOp) else 1
    assert rounds == pieces
    kernels = {op.callee.string_value() for op in module.walk() if isinstance(op, KernelOp)}
    assert not kernels & {"gather_round", "gather_shard", "copy_words"}  # no take, no copy
    package = build_package(module, with_assembly=False)
    assert_moved_exactly(package)
    a, b = types(shape, element, src, dst)
    assert sum(package_cycles(package)) == conversion_type_cycles(a, b, IPU21)


@pytest.mark.parametrize("name", CASES)
def test_the_starts_a_spread_may_take_are_those_piece_plan_accepts(name):
    """`piece_plan_starts` (where a whole-shard spread may start: no tile sent its own
    piece), from one plan's rounds, is the filter of every start through `piece_plan`."""
    shape, element, src, dst, tiles, _ = CASES[name]
    a, b = types(shape, element, src, dst)
    spread, taken = geometry(shape, a.encoding), geometry(shape, b.encoding)
    brute = tuple(start for start in range(tiles - spread.tiles_used + 1)
                  if piece_plan(dataclasses.replace(spread, first_tile=start), taken) is not None)
    assert piece_plan_starts(spread, taken, tiles) == brute
    assert brute  # some start works and, on overlapping tiles, some do not
    if name == "row-major pieces on overlapping tiles":
        assert len(brute) < tiles - spread.tiles_used + 1


def test_a_tile_sent_its_own_piece_is_left_to_the_slot_and_take():
    a, b = types((16, 64), "f32", fmt("f32", "row_major", "1 x 16 pad, 1 x 1 pad", 16),
                 fmt("f32", "row_major", "4 x 4 pad, 1 x 1 pad", 4))
    assert piece_plan(geometry(a.get_shape(), a.encoding),
                      geometry(b.get_shape(), b.encoding)) is None  # tile 0 keeps piece 0


@pytest.mark.parametrize("shape, pieces, order, contiguous", [
    ((128, 64), 2, "amp_right", True),  # 64-row blocks
    ((64, 64), 2, "amp_right", False),  # 32 rows are no amp_right shard
    ((128, 128), 2, "amp_right", True),  # a block row of two blocks
    ((64, 64), 4, "amp_left", True),  # one panel: its rows are consecutive
    ((64, 128), 2, "amp_left", False),  # two panels: a piece's rows are in both
    ((12, 8), 3, "row_major", True),
    ((12, 8), 5, "row_major", False),  # not equal pieces
])
def test_pieces_are_contiguous_only_where_the_order_keeps_rows_together(shape, pieces, order,
                                                                         contiguous):
    assert pieces_contiguous(shape, pieces, order, "f16") is contiguous
