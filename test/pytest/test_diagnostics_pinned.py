"""Every diagnostic the code base raises is pinned by a test that checks its text.

The test walks the source packages with `ast`, finds each raise site (`raise X(msg)`,
`parser.raise_error(msg)`, `self.fail(msg)`), takes the longest literal fragment of the message
and asserts that it occurs in some file under test/. A site no input can reach (a consistency
check between two of our own modules) goes into ALLOWED with its reason instead.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("ipu_dialects", "passes", "planning", "tools", "device", "interpreters", "frontend")
TEST_SUFFIXES = (".py", ".mlir", ".s", ".txt")
MIN_FRAGMENT = 8
PUNCTUATION = " :;,.'\"()[]{}"

# (file, distinctive fragment of the message): why no input can reach the site.
ALLOWED: dict[tuple[str, str], str] = {
    ("ipu_dialects/mid_attrs.py", "format: tiling entry"):
        "the #mid.format parser builds every tiling entry as a #mid.axis",
    ("ipu_dialects/mid_attrs.py", "has no operand"):
        "mid.gemm's verifier requires a plan entry for lhs, rhs and out, the only names asked",
    ("ipu_dialects/tile.py", "bounds must be"):
        "the #tile.tiles parser derives a list's bounds from its ids",
    ("ipu_dialects/tile_iteration.py", "cannot evaluate affine expression"):
        "tile's check_map rejects maps with symbols before any map is evaluated",
    ("ipu_dialects/tile_iteration.py", "indices, iterations have"):
        "tile's check_map rejects a map whose dimension count differs from the iv depth",
    ("passes/operators/repeat.py", "mid-to-tile: cannot nest"):
        "operator lowerings emit only tile.loop, tile.kernel and tile.exchange work",
    ("passes/ipu_pipeline.py", "is not available"):
        "the pipeline's stages are fixed names of passes/stages.py's registry",
    ("passes/mid_to_tile.py", "before it is computed"):
        "SSA dominance: a verified single-block body defines a value before using it",
    ("passes/mid_to_tile.py", "does not end with func.return"):
        "a verified func.func body ends with a terminator, and func.return is the only one "
        "allowed directly in it",
    ("interpreters/graph.py", "no reference semantics for element type"):
        "check_runnable (check_graph_signature) and the graph op verifiers allow only "
        "f32, f16 and f8E4M3FNUZ",
    ("frontend/onnx/importer.py", "is produced by no node, initializer or graph input"):
        "import_onnx runs onnx.checker.check_model first, which refuses a node input or graph "
        "output no node, initializer or graph input defines (and an empty name for a required "
        "input); the handlers skip empty optional inputs, and a pattern consumes an "
        "intermediate only when it is its sole use and not a graph output",
    ("interpreters/graph.py", "block has no terminator"):
        "run_function verifies the module first; a verified body ends with func.return "
        "or graph.yield",
}


@dataclass(frozen=True)
class RaiseSite:
    file: str
    line: int
    fragment: str  # the longest literal piece of the message
    text: str  # all literal pieces, joined, for matching ALLOWED entries

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.fragment!r}"


def literal_pieces(node: ast.AST) -> list[str]:
    """The literal text of a message built from constants, f-strings and `+`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant)]
    if isinstance(node, ast.BinOp):
        return literal_pieces(node.left) + literal_pieces(node.right)
    return []


def message_of(node: ast.AST) -> ast.AST | None:
    """The message argument if `node` raises a diagnostic."""
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
        call = node.exc
    elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("raise_error", "fail"):
        call = node
    else:
        return None
    return call.args[0] if call.args else None


def raise_sites() -> list[RaiseSite]:
    sites = []
    for directory in SOURCE_DIRS:
        for path in sorted((REPO / directory).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                message = message_of(node)
                if message is None:
                    continue
                pieces = [p.strip(PUNCTUATION) for p in literal_pieces(message)]
                long_pieces = [p for p in pieces if len(p) >= MIN_FRAGMENT]
                if long_pieces:
                    sites.append(RaiseSite(str(path.relative_to(REPO)), node.lineno,
                                           max(long_pieces, key=len), " ".join(pieces)))
    return sites


def text_of_test_files() -> str:
    """Every test file's text, plus each Python test's string constants with adjacent literals
    joined and regex escapes removed (`match=r"... \\(x\\)"` pins the text "(x)")."""
    texts = []
    for path in (REPO / "test").rglob("*"):
        if not path.is_file() or path.suffix not in TEST_SUFFIXES:
            continue
        text = path.read_text(errors="replace")
        texts.append(text)
        if path.suffix == ".py":
            for node in ast.walk(ast.parse(text)):
                for piece in literal_pieces(node):
                    texts.append(re.sub(r"\\(.)", r"\1", piece))
    return "\n".join(texts)


def is_allowed(site: RaiseSite) -> bool:
    return any(site.file == file and fragment in site.text for file, fragment in ALLOWED)


def test_every_diagnostic_is_pinned_by_a_test():
    tests = text_of_test_files()
    unpinned = [s for s in raise_sites() if s.fragment not in tests and not is_allowed(s)]
    assert not unpinned, (
        "these diagnostics have no test that checks their text; pin each one (a lit "
        "--verify-diagnostics case or a pytest assertion on the message), or, if no input can "
        "reach it, add it to ALLOWED with the reason:\n" + "\n".join(map(str, unpinned))
    )


def test_every_allowlist_entry_names_a_raise_site():
    sites = raise_sites()
    stale = [key for key in ALLOWED
             if not any(s.file == key[0] and key[1] in s.text for s in sites)]
    assert not stale, f"ALLOWED entries that match no raise site any more: {stale}"
