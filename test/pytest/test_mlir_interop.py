"""Upstream MLIR reads what we print, and we read what it prints back.

For every example (`examples/*.mlir` and the imported `examples/onnx/gpt2_block/model.mlir`)
and every level of the default pipeline, the generic form we print is parsed by
`mlir-opt --allow-unregistered-dialect`, which prints it again, once in generic form and once
in its own default form (builtin and func ops in their custom syntax, ours generic); `ipu-opt`'s
parser reads both, and the module must be the one we started from (structurally: MLIR renames
SSA values; and it simplifies an affine map when it reads it, `(d0 mod 1) * 8192` to `0`,
so affine maps are compared by their values, `same_maps_as`). The levels:

- graph: the input as written;
- mid: after graph-to-mid, insert-conversions and normalize-repeats (formats and plans);
- tile: after mid-to-tile (per-tile work, no addresses yet);
- placed: after place-memory (addresses);
- exchange: after schedule-exchange (encoded exchange rows): what `ipu-pipeline` prints.

The levels of one example are made by one run of the stages, in process; each level is one
`mlir-opt` process per printed form.

mlir-opt is found on PATH as `mlir-opt` or `mlir-opt-NN`, or as Debian installs it
(`/usr/lib/llvm-NN/bin/mlir-opt`, `apt-get install mlir-19-tools`; `.ci/run` does). Without it
the tests skip with a reason saying so; `IPU_REQUIRE_MLIR_OPT=1` (set by `.ci/run`) makes its
absence a failure instead.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
from functools import cache
from io import StringIO
from pathlib import Path

import pytest
from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, ModuleOp
from xdsl.ir import Attribute
from xdsl.ir.affine import AffineMap
from xdsl.printer import Printer

from passes.ipu_pipeline import IpuPipelinePass
from tools.registry import make_context
from tools.source_locations import parse_located_module

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.relative_to(ROOT / "examples").as_posix()
                  for p in [*(ROOT / "examples").glob("*.mlir"),
                            ROOT / "examples" / "onnx" / "gpt2_block" / "model.mlir"])
# The stage after which each level is printed ("graph": before the first).
LEVELS = {"graph": None, "mid": "normalize-repeats", "tile": "mid-to-tile",
          "placed": "place-memory", "exchange": "schedule-exchange"}
TILES = 4


def find_mlir_opt() -> str | None:
    candidates = ["mlir-opt", *(f"mlir-opt-{v}" for v in range(30, 14, -1))]
    for name in candidates:
        if found := shutil.which(name):
            return found
    installed = sorted(glob.glob("/usr/lib/llvm-*/bin/mlir-opt"),
                       key=lambda p: int(p.split("llvm-")[1].split("/")[0]))
    return installed[-1] if installed else None


@pytest.fixture(scope="module")
def mlir_opt() -> str:
    found = find_mlir_opt()
    if found is None:
        message = ("mlir-opt is not on PATH (Debian: apt-get install mlir-19-tools): the "
                   "upstream-MLIR round trip was NOT checked")
        if os.environ.get("IPU_REQUIRE_MLIR_OPT"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def generic(module: ModuleOp) -> str:
    stream = StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(module)
    return stream.getvalue() + "\n"


@cache
def levels_of(example: str) -> dict[str, str]:
    """The generic text of `example` at every level, from one run of the stages."""
    module = parse_located_module(make_context(), (ROOT / "examples" / example).read_text(),
                                  example)
    texts = {"graph": generic(module)}
    ctx = make_context()
    for stage in IpuPipelinePass(tiles=TILES).stage_passes():
        stage.apply(ctx, module)
        module.verify()
        for level, after in LEVELS.items():
            if after == stage.name:
                texts[level] = generic(module)
    assert set(texts) == set(LEVELS)
    return texts


def test_the_levels_hold_what_they_are_named_for():
    texts = levels_of("gemm_f16.mlir")
    assert '"graph.gemm"' in texts["graph"] and "#mid.plan" in texts["mid"]
    assert '"tile.' in texts["tile"] and "address" not in texts["tile"]
    assert "address" in texts["placed"] and '"exchange.row"' not in texts["placed"]
    assert '"exchange.row"' in texts["exchange"]


def through_mlir_opt(mlir_opt: str, text: str, *flags: str) -> str:
    done = subprocess.run([mlir_opt, "--allow-unregistered-dialect", *flags],
                          input=text, capture_output=True, text=True)
    assert done.returncode == 0, f"mlir-opt rejected our generic output:\n{done.stderr}"
    return done.stdout


def parsed(text: str, name: str) -> ModuleOp:
    module = parse_located_module(make_context(), text, name)
    module.verify()
    return module


def same_values(a: AffineMap, b: AffineMap) -> bool:
    """The two maps agree at every point of a small grid (negative points included, for
    floordiv and mod): enough to tell MLIR's simplification from a changed map."""
    if (a.num_dims, a.num_symbols, len(a.results)) != (b.num_dims, b.num_symbols, len(b.results)):
        return False
    width = a.num_dims + a.num_symbols
    values = range(-3, 10) if width <= 3 else range(-1, 5)
    points = itertools.islice(itertools.product(values, repeat=width), 5000)
    return all(a.eval(p[:a.num_dims], p[a.num_dims:]) == b.eval(p[:a.num_dims], p[a.num_dims:])
               for p in points)


def same_maps_as(original: ModuleOp, reread: ModuleOp) -> ModuleOp:
    """`reread`, with every affine map that has the values of the original's map at the same
    place replaced by the original's spelling (a different op sequence is left as it is, for
    the structural comparison to report)."""
    def unify(ours: Attribute, theirs: Attribute) -> Attribute:
        if (isinstance(ours, AffineMapAttr) and isinstance(theirs, AffineMapAttr)
                and same_values(ours.data, theirs.data)):
            return ours
        if (isinstance(ours, ArrayAttr) and isinstance(theirs, ArrayAttr)
                and len(ours.data) == len(theirs.data)):
            return ArrayAttr(unify(o, t) for o, t in zip(ours.data, theirs.data))
        return theirs

    for x, y in zip(original.walk(), reread.walk()):
        if x.name != y.name:
            break
        for mine, theirs in ((x.properties, y.properties), (x.attributes, y.attributes)):
            for key in theirs.keys() & mine.keys():
                theirs[key] = unify(mine[key], theirs[key])
    return reread


CASES = [(example, level) for example in EXAMPLES for level in LEVELS]


def test_every_example_and_level_is_covered():
    assert len(EXAMPLES) >= 9 and "transformer_block.mlir" in EXAMPLES
    assert len(CASES) == 5 * len(EXAMPLES)


@pytest.mark.parametrize(("example", "level"), CASES)
def test_mlir_opt_round_trip(mlir_opt: str, example: str, level: str):
    ours = levels_of(example)[level]
    original = parsed(ours, "ipu-opt")
    for form, flags in [("generic", ("--mlir-print-op-generic",)), ("default", ())]:
        theirs = through_mlir_opt(mlir_opt, ours, *flags)
        if level in ("tile", "placed", "exchange"):
            assert "#tile.tiles<" in theirs
        assert ('"exchange.row"' in theirs) == ('"exchange.row"' in ours)
        reread = same_maps_as(original, parsed(theirs, f"mlir-opt ({form})"))
        assert original.is_structurally_equivalent(reread), (
            f"{example} at the {level} level changed through mlir-opt ({form} form):\n{theirs}")


def test_old_tile_range_spelling_is_what_mlir_opt_rejected(mlir_opt: str):
    """The reason for `#tile.tiles<0 to 4>`: MLIR's pretty-name lexer needs balanced
    brackets, so the half-open `[0, 4)` of earlier versions could not be read upstream."""
    old = '"test.op"() {tiles = #tile.tiles<[0, 4)>} : () -> ()\n'
    done = subprocess.run([mlir_opt, "--allow-unregistered-dialect"], input=old,
                          capture_output=True, text=True)
    assert done.returncode != 0 and "unbalanced '['" in done.stderr
    new = '"test.op"() {tiles = #tile.tiles<0 to 4>, listed = #tile.tiles<[0, 1, 5]>} : () -> ()\n'
    done = subprocess.run([mlir_opt, "--allow-unregistered-dialect"], input=new,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
