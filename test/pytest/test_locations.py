"""Locations through lowering (`ipu_dialects/locations.py`): every op a pass creates carries
the location of the graph op it comes from (fused where it serves several), and diagnostics of
the later levels name the user's source line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects import test as xdsl_test
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    UnknownLoc,
)
from xdsl.passes import PassPipeline

from ipu_dialects.locations import file_positions, fused_location, located, location_of
from ipu_dialects.tile import ExchangeOp, KernelOp, LoopOp
from passes.ipu_pipeline import IpuPipelinePass
from tools.registry import make_context
from tools.source_locations import parse_located_module

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "transformer_block.mlir"


def pos(line: int, column: int = 3, file: str = "a.mlir") -> FileLineColLoc:
    return FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(column))


# ---- fused_location and location_of -------------------------------------------------------


def test_fused_location_follows_mlir_rules():
    a, b, c = pos(1), pos(2), pos(3)
    assert fused_location() == UnknownLoc()
    assert fused_location(UnknownLoc(), a, UnknownLoc()) == a  # one left: itself
    assert fused_location(a, a) == a  # duplicates once
    nested = fused_location(a, b)
    assert nested == FusedLoc((a, b), NoneAttr())
    assert fused_location(c, nested, b) == FusedLoc((c, a, b), NoneAttr())  # flattened


def test_a_diagnostic_names_the_first_position_of_a_fused_location():
    op = xdsl_test.TestOp()
    assert location_of(op) is None and located(op, "bad") == "bad"
    op.location = fused_location(pos(12, 5), pos(9, 1))
    assert location_of(op) == "a.mlir:12:5"
    assert located(op, "bad") == "a.mlir:12:5: error: bad"
    op.location = NameLoc(StringAttr("x"), pos(4))
    assert [p.line.data for p in file_positions(op.location)] == [4]


# ---- every op of a lowered program --------------------------------------------------------


@pytest.fixture(scope="module")
def lowered() -> tuple[ModuleOp, list[str]]:
    text = EXAMPLE.read_text()
    module = parse_located_module(make_context(), text, str(EXAMPLE))
    PassPipeline((IpuPipelinePass(tiles=16),)).apply(make_context(), module)
    return module, text.splitlines()


def test_every_op_of_the_lowered_transformer_block_has_a_source_location(lowered):
    module, lines = lowered
    ops = [op for op in module.walk() if op is not module]
    assert len(ops) > 100
    unknown = [op.name for op in ops if location_of(op) is None]
    assert unknown == []
    for op in ops:  # every position is a line of the user's file holding a graph or func op
        for loc in file_positions(op.location):
            assert loc.filename.data == str(EXAMPLE)
            source = lines[loc.line.data - 1][loc.column.data - 1:]
            assert re.match(r"(%\w+ = graph\.|func\.func|func\.return)", source), (op.name, source)
    assert any(isinstance(op.location, FusedLoc) for op in ops)  # conversions, output copies


def defining_line(lines: list[str], value: str) -> int:
    """The 1-based line where `%value = graph....` is written; an argument's: `func.func`."""
    (line,) = [i + 1 for i, text in enumerate(lines) if re.match(rf"\s*{value} = graph\.", text)
               ] or [i + 1 for i, text in enumerate(lines) if text.startswith("func.func")]
    return line


def test_tile_work_points_first_at_the_graph_op_its_provenance_names(lowered):
    """Provenance and location agree: work for `graph.gemm %p0` is located at %p0's line
    first; a conversion's work (named after its consumer) also at its producer's line."""
    module, lines = lowered
    work = [op for op in module.walk() if isinstance(op, KernelOp | ExchangeOp | LoopOp)]
    checked = fused = 0
    for op in work:
        match = re.fullmatch(r"graph\.\w+ (%\w+)", op.provenance.op.data)
        if match is None:  # func.return's copies
            continue
        positions = [p.line.data for p in file_positions(op.location)]
        assert positions[0] == defining_line(lines, match.group(1)), op
        checked += 1
        if len(positions) > 1:  # a conversion: from the producer of the value it moves
            producer = op.provenance.value.data
            assert positions[1] == defining_line(lines, producer), op
            fused += 1
    assert checked > 20 and fused > 0


# ---- diagnostics at later levels ----------------------------------------------------------

OUT_OF_MEMORY = """\
func.func @oom(%x: tensor<128x64xf32>, %w: tensor<64x256xf32>) -> tensor<128x256xf32> {
  %y = graph.gemm %x, %w : (tensor<128x64xf32>, tensor<64x256xf32>) -> tensor<128x256xf32>
  %g = graph.gelu %y : tensor<128x256xf32> -> tensor<128x256xf32>
  %z = graph.add %g, %y : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  %u = graph.add %z, %g : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  %v = graph.add %u, %z : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  func.return %v : tensor<128x256xf32>
}
"""


def test_a_place_memory_overflow_names_the_users_source_line(tmp_path):
    """Every op fits on its own (graph-to-mid accepts each plan); the buffers live together do
    not: place-memory fails, pointing at the graph op whose value is the largest buffer."""
    source = tmp_path / "oom.mlir"
    source.write_text(OUT_OF_MEMORY)
    proc = subprocess.run(
        [sys.executable, "-m", "tools.ipu_run", str(source), "--tiles", "1", "--quiet"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"{source}:2:3: error: Out of interleaved memory on tile 0: interleaved buffers need "
        "393216 bytes, the interleaved region has 245760 bytes (buffers live together: y 131072, "
        "g 131072, z 131072)",
        "  %y = graph.gemm %x, %w : (tensor<128x64xf32>, tensor<64x256xf32>) -> "
        "tensor<128x256xf32>",
        "  ^",
    ]
