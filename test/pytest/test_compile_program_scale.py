"""The scale rule on whole programs (DESIGN.md section 4): the IR after each level is the size
of the program, not of the chip. `bench/compile_program.py` prints the figures.

What holds, measured on the transformer block and the MLP:
- From 64 tiles up (64, 1472) every level has the same ops, op name by op name, except
  `exchange.sendoff`: a row streams its words with one `send` (up to 64 words) and then
  `sendoff`s, so a row whose shard shrinks to 64 words or fewer at a larger tile count loses
  its `sendoff`. Rows only get shorter.
- Between 4 and 64 tiles the op counts DO differ, by plan choice, not by per-tile expansion:
  up to 16 tiles the bias add after the MLP's up projection follows the GEMM's `amp_output`
  format (its bias replicated per row block, `formats.broadcast_operand_format`) and the
  gelu follows it; on 64 tiles the cheapest gelu cuts the columns across the tiles and pays
  one more `mid.rearrange` before it (the mid ops other than conversions are the same at
  every tile count, the test below); and a rearrange whose input and result shard alike is
  one local `convert_shard` at 4 tiles but a gather loop (4-5 tile ops) where they do not
  (attention's query-row cut). The 16-tile program has no graph or mid op more than the
  64-tile one: fewer tiles never cost more conversions. Its tile work may have a few ops more:
  each GEMM picks its layout for the tiles it has (on 16 tiles the transformer block's up
  projection is a K-split, two A phases a step, where 64 tiles give it a 3-D grid, one), and
  each layout's tile work is its own constant count.
- Some tile counts add one op for padding: at 184 tiles gelu's 256 columns do not divide,
  so the gather zeroes the result's padding first (`fill_zero`).
- A concurrent gather (`passes/operators/gather.py`) whose senders also receive for another
  group at a larger tile count (on 64 tiles the 4 row blocks of a GEMM output go to 64
  row tiles, and tiles 1..3 send while they receive tile 0's block) gets one full-duplex
  row, `@xN_duplex`, that it does not need on 16 tiles: at most one such row per
  `tile.exchange`, its ops set apart before the comparison (the rest stays exact).
- From 1472 tiles on a pointwise result whose tiles are free may start past tile 0
  (graph-to-mid's spreading, docs/internals.md): a gather into it from an input on other
  tiles has no sender holding elements of its own shard, so no `copy_words` kernel, and
  when it takes once per round (`gather_round`) no loop over the round's groups either.
  Kernels and loops only get fewer.
- A layered GEMM sums its layers at the end: the K-split in one round of an exchange and an
  add, a 3-D grid (`planning/gemm_grid3d.py`) of L layers in ceil(log2 L) rounds, and the
  layer count (and so whether a GEMM is layered at all) depends on the tiles, bounded by K's
  blocks, so by the program, not the chip. The reduction ops (their provenance says
  `reduction round`, with their rows) are set apart before the comparison and bounded by
  the GEMMs' K blocks.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import pytest
from xdsl.parser import Parser

from ipu_dialects.exchange import RowOp
from ipu_dialects.graph import GemmOp
from passes.ipu_pipeline import IpuPipelinePass
from planning.gemm_layout import REDUCTION
from tools.ipu_run import make_context

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from compile_program import EXAMPLES, compile_stages

PROGRAMS = ("transformer_block.mlir", "mlp_f16.mlir")
SHORTER_ROWS = "exchange.sendoff"
FEWER_COPIES = ("tile.kernel", "tile.loop")
CONVERSIONS = ("mid.rearrange", "mid.cast_precision")
MID_LEVELS = ("graph (parsed)", "graph-to-mid", "insert-conversions", "normalize-repeats")


def levels(example: str, tiles: int, count: int | None = None):
    stages = compile_stages((EXAMPLES / example).read_text(), tiles, with_package=False)
    failed = [s.note for s in stages if s.ops is None]
    assert not failed, failed
    return {s.name: s.by_name for s in stages[:count]}


def duplex_rows(example: str, tiles: int) -> tuple[int, Counter]:
    """The full-duplex rows of the scheduled program: how many, and the ops in them."""
    ctx = make_context()
    module = Parser(ctx, (EXAMPLES / example).read_text(), example).parse_module()
    IpuPipelinePass(tiles=tiles).apply(ctx, module)
    rows = [op for op in module.walk() if isinstance(op, RowOp)
            and op.sym_name.data.endswith("_duplex")]
    exchanges = {op.sym_name.data.removesuffix("_duplex") for op in rows}
    assert len(exchanges) == len(rows), "at most one full-duplex row per tile.exchange"
    return len(rows), Counter(inner.name for row in rows for inner in row.walk())


def reduction_ops(example: str, tiles: int) -> tuple[Counter, Counter, int]:
    """The 3-D grid reduction ops of the scheduled program: (tile ops, their rows' ops, the
    most rounds its GEMMs' K blocks allow)."""
    ctx = make_context()
    module = Parser(ctx, (EXAMPLES / example).read_text(), example).parse_module()
    IpuPipelinePass(tiles=tiles).apply(ctx, module)
    tile_ops, row_ops = Counter(), Counter()
    for op in module.walk():
        if isinstance(op, RowOp) and REDUCTION in str(op.provenance):
            row_ops.update(inner.name for inner in op.walk())
        elif REDUCTION in str(op.properties.get("provenance", "")):
            tile_ops[op.name] += 1
    graph = Parser(make_context(), (EXAMPLES / example).read_text(), example).parse_module()
    most = sum(2 * math.ceil(math.log2(-(-g.lhs.type.get_shape()[-1] // 64)))
               for g in graph.walk() if isinstance(g, GemmOp))
    return tile_ops, row_ops, most


@pytest.mark.slow
@pytest.mark.parametrize("example", PROGRAMS)
def test_op_counts_do_not_grow_from_16_to_1472_tiles(example):
    by_tiles = {tiles: levels(example, tiles) for tiles in (16, 64, 1472)}
    for tiles, counts in by_tiles.items():  # the duplex rows are compared apart (module doc)
        rows, ops = duplex_rows(example, tiles)
        assert rows <= counts["schedule-exchange"]["tile.exchange"]
        counts["schedule-exchange"] = counts["schedule-exchange"] - ops
        tile_ops, row_ops, most = reduction_ops(example, tiles)  # set apart (module doc)
        assert sum(tile_ops.values()) <= most
        for level in ("mid-to-tile", "place-memory"):
            counts[level] = counts[level] - tile_ops
        counts["schedule-exchange"] = counts["schedule-exchange"] - tile_ops - row_ops
    smaller = by_tiles[64]
    assert list(smaller) == ["graph (parsed)", "graph-to-mid", "insert-conversions",
                             "normalize-repeats", "mid-to-tile", "place-memory",
                             "schedule-exchange"]
    for tiles in (1472,):
        for level, counts in by_tiles[tiles].items():
            apart = (SHORTER_ROWS, *FEWER_COPIES)
            same = {n: c for n, c in counts.items() if n not in apart}
            assert same == {n: c for n, c in smaller[level].items() if n not in apart}, \
                f"{example}, {level}: 64 tiles {smaller[level]}, {tiles} tiles {counts}"
            for name in apart:
                assert counts[name] <= smaller[level][name], (example, level, tiles, name)
    # on 16 tiles a plan choice saves one conversion (module doc): no graph or mid op is more
    # numerous there; the tile levels differ by the GEMMs' layouts (module doc)
    for level in MID_LEVELS:
        for name, count in by_tiles[16][level].items():
            assert count <= smaller[level][name], (example, level, name)
    # the schedule has rows at all: the sendoff exemption is not hiding everything
    assert by_tiles[1472]["schedule-exchange"]["exchange.row"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("example", PROGRAMS)
def test_only_conversions_change_with_the_tile_count_at_mid_level(example):
    """The operator ops (one per graph op) are the same at every tile count; plan choice
    adds or removes conversions only, a bounded number (at most one per operand)."""
    graph_ops = None
    for tiles in (1, 4, 7, 64, 184, 1472):
        counts = levels(example, tiles, count=3)  # parsed, graph-to-mid, insert-conversions
        if graph_ops is None:
            graph_ops = sum(n.startswith("graph.") and c for n, c in
                            counts["graph (parsed)"].items())
        mid = counts["insert-conversions"]
        operators = {n: c for n, c in mid.items() if n.startswith("mid.") and n not in CONVERSIONS}
        assert sum(operators.values()) == graph_ops, (tiles, operators)
        conversions = sum(mid[n] for n in CONVERSIONS)
        assert 0 < conversions <= 2 * graph_ops, (tiles, conversions)
