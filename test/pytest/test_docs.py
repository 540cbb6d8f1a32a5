"""The docs stay honest: what README.md and docs/internals.md name must exist in the code.

Cheap checks only (no compilation): repository paths, dotted Python names, pass pipelines and
emitters shown in the README, the README's pinned commands against `.ci/run`, and that the
Python and tile-IR examples of the docs still run / parse. The docstrings of the source are
held to the same: the repository paths and dotted names they name in backticks exist, and
they cite no file outside the repository.
"""

from __future__ import annotations

import ast
import importlib
import re
import shlex
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.arg_spec import parse_pipeline

import ipu_dialects.tile
from tools.ipu_opt import mlir_pipeline
from tools.registry import make_context, opt_passes
from tools.targets import get_all_targets

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
INTERNALS = ROOT / "docs" / "internals.md"
DOCS = [README, INTERNALS]

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
FILE_SUFFIXES = (".py", ".mlir", ".S", ".md", ".toml")
PACKAGES = ("ipu_dialects", "planning", "passes", "device", "tools", "interpreters", "frontend")
SOURCE_DIRS = (*PACKAGES, "bench")


def fenced_blocks(text: str, language: str | None = None) -> list[str]:
    return [body for lang, body in FENCE.findall(text) if language is None or lang == language]


def inline_code(text: str) -> list[str]:
    """Backticked spans outside fenced blocks (a span may wrap across lines)."""
    return re.findall(r"`([^`]+)`", FENCE.sub("", text))


def command_lines(text: str) -> list[str]:
    """Non-comment lines of the ```sh blocks, without trailing `# comments`."""
    lines = []
    for block in fenced_blocks(text, "sh"):
        for line in block.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                lines.append(line)
    return lines


def looks_like_path(token: str) -> bool:
    """`passes/schedule_exchange.py`, `device/model/`, `lit.cfg.py`, `.ci/run`; not
    `A16/B16x16/C16` or `init_symbol/accum_symbol`."""
    if token.startswith("../"):  # outside the repository (the shared design card)
        return False
    if token.startswith("."):  # `.ci/run`, not `.dispatch.init_symbol/accum_symbol`
        return re.fullmatch(r"\.\w+(/[\w.-]+)+", token) is not None
    if not re.match(r"[\w<*]", token):  # `//` comments, `/` operators
        return False
    if token.endswith(FILE_SUFFIXES):
        return "/" in token or token.endswith((".py", ".mlir", ".S"))
    return "/" in token and token.endswith("/")


def doc_paths(path: Path) -> list[str]:
    text = path.read_text()
    tokens = [t for span in inline_code(text) for t in re.findall(r"[\w.*<>/-]+", span)]
    tokens += [t for line in command_lines(text) for t in shlex.split(line)
               if t.endswith((".py", ".mlir", ".S"))]
    return sorted({t for t in tokens if looks_like_path(t)})


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_named_repository_paths_exist(doc: Path):
    paths = doc_paths(doc)
    assert len(paths) >= 10, f"{doc.name}: found only {paths}; is the path extraction broken?"
    missing = []
    for name in paths:
        # `passes/<pass_name>.py` -> a glob; `<pass>*.mlir` must not become `**`
        pattern = re.sub(r"\*+", "*", re.sub(r"<[^>]*>", "*", name))
        if not any(ROOT.glob(pattern.rstrip("/"))):
            missing.append(name)
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


def resolve_dotted(name: str) -> object:
    """Import the longest module prefix of `name`, then follow attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_named_python_objects_exist(doc: Path):
    """`planning.exchange_rows.instantiate`, `device.model.ModelError`, ... resolve."""
    pattern = re.compile(rf"^(?:{'|'.join(PACKAGES)})(?:\.\w+)+")
    names = sorted({m.group(0) for span in inline_code(doc.read_text())
                    if (m := pattern.match(span.strip()))})
    unresolved = []
    for name in names:
        try:
            resolve_dotted(name)
        except (ImportError, AttributeError):
            unresolved.append(name)
    assert not unresolved, f"{doc.name} names Python objects that do not exist: {unresolved}"


@cache
def docstrings() -> tuple[tuple[str, str], ...]:
    """(where, text) of every module, class and function docstring of the source."""
    found = []
    for directory in SOURCE_DIRS:
        for path in sorted((ROOT / directory).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(), where)):
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    text = ast.get_docstring(node, clean=False)
                    if text:
                        found.append((f"{where}:{getattr(node, 'lineno', 1)}", text))
    return tuple(found)


def docstring_paths(text: str) -> set[str]:
    """The repository paths a docstring names in backticks: as in the docs, but a path needs a
    `/` (a bare `source.mlir` is a package's file, `file.mlir` any file) and a placeholder
    directory (`DIR/model.mlir`) is none."""
    tokens = [t for span in inline_code(text) for t in re.findall(r"[\w.*<>/-]+", span)]
    return {t for t in tokens
            if "/" in t and looks_like_path(t) and not t.split("/", 1)[0].isupper()}


def test_docstring_paths_exist():
    named = [(where, name) for where, text in docstrings() for name in docstring_paths(text)]
    assert len(named) >= 100, f"found only {named}; is the path extraction broken?"
    missing = []
    for where, name in named:
        pattern = re.sub(r"\*+", "*", re.sub(r"<[^>]*>", "*", name))
        if not any(ROOT.glob(pattern.rstrip("/"))):
            missing.append(f"{where}: {name}")
    assert not missing, f"docstrings name paths that do not exist: {missing}"


def test_docstring_python_names_exist():
    """`passes.operators.base.TileLowering`, `device.model.run_package`, ... resolve."""
    pattern = re.compile(rf"^(?:{'|'.join(PACKAGES)})(?:\.\w+)+")
    named = sorted({(where, m.group(0)) for where, text in docstrings()
                    for span in inline_code(text) if (m := pattern.match(span.strip()))})
    assert len(named) >= 30, f"found only {named}; is the name extraction broken?"
    unresolved = []
    for where, name in named:
        try:
            resolve_dotted(name)
        except (ImportError, AttributeError):
            unresolved.append(f"{where}: {name}")
    assert not unresolved, f"docstrings name Python objects that do not exist: {unresolved}"


def test_docstrings_cite_no_file_outside_the_repository():
    """A reader of the repository has neither `../shared/...` nor the design card; what they
    hold that the code relies on is in docs/internals.md. (The user's specification is cited
    by its documents' names, as docs/internals.md cites it.)"""
    outside = re.compile(r"\.\./[\w.-]+|\bDESIGN\.md\b")
    cited = [f"{where}: {m.group(0)}" for where, text in docstrings()
             for m in outside.finditer(text)]
    assert not cited, f"docstrings cite files outside the repository: {cited}"


def test_docstring_sections_of_internals_exist():
    """`docs/internals.md, "Layers"` names a section: a heading that starts so."""
    headings = [line.lstrip("#").strip() for line in INTERNALS.read_text().splitlines()
                if line.startswith("#")]
    cite = re.compile(r'docs/internals\.md`?,?\s+"([^"]+)"')
    named = [(where, " ".join(m.group(1).split())) for where, text in docstrings()
             for m in cite.finditer(text)]
    assert len(named) >= 10, f"found only {named}; is the extraction broken?"
    unknown = [f"{where}: {name}" for where, name in named
               if not any(heading.startswith(name) for heading in headings)]
    assert not unknown, f"docstrings cite sections docs/internals.md does not have: {unknown}"


def readme_pipelines() -> list[str]:
    specs = []
    for line in command_lines(README.read_text()):
        words = shlex.split(line)
        if not words or words[0] != "ipu-opt":
            continue
        for index, word in enumerate(words):
            if word in ("-p", "--passes"):
                specs.append(words[index + 1])
            elif word.startswith("--pass-pipeline="):
                specs.append(mlir_pipeline(word.split("=", 1)[1]))
    return specs


def test_readme_pass_pipelines_use_registered_passes_and_options():
    specs = readme_pipelines()
    assert specs, "the README shows no ipu-opt pipeline"
    registry = opt_passes()
    for spec in specs:
        for pass_spec in parse_pipeline(spec):
            assert pass_spec.name in registry, f"README pipeline '{spec}': no pass {pass_spec.name}"
            # builds the pass: an option the pass does not have raises here
            registry[pass_spec.name]().from_pass_spec(pass_spec)


def test_readme_emitters_are_registered():
    targets = [words[words.index("-t") + 1]
               for words in map(shlex.split, command_lines(README.read_text()))
               if "-t" in words]
    assert targets, "the README shows no -t emitter"
    unknown = sorted(set(targets) - set(get_all_targets()))
    assert not unknown, f"README uses unknown -t emitters {unknown}"


def test_readme_first_commands_are_what_users_and_ci_run():
    first, second = command_lines(README.read_text())[:2]
    ci_command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1].strip()
    assert second == ci_command
    # the main job: install, then compile and run the FP16 GEMM example for 16 tiles
    assert first == "pip install -e . && ipu-run examples/gemm_f16.mlir --tiles 16"
    assert ci_command.startswith("pip install -e '.[test]' && ")


def test_readme_python_examples_run(monkeypatch):
    """The builder example (reference and device run) and the embedding snippet (plain xDSL
    Context and PassPipeline with our registries)."""
    builder_example, embedding = fenced_blocks(README.read_text(), "python")
    monkeypatch.chdir(ROOT)  # the snippets open examples/ by relative path
    namespace: dict = {}
    exec(compile(builder_example, "README.md", "exec"), namespace)
    result = namespace["result"]
    assert result.shape == (128, 768) and result.dtype == np.float16
    run = namespace["run"]
    assert run.passed and run.summary["check"] == "PASS"
    assert run.outputs["result0"].shape == (256, 192) and run.cycles > 0
    namespace = {}
    exec(compile(embedding, "README.md", "exec"), namespace)
    module = namespace["module"]
    assert any(op.name.startswith("exchange.") for op in module.walk())


def test_tile_dialect_docs_example_parses_and_verifies():
    """The worked example of docs/internals.md ("The tile syntax, by example") is real IR."""
    text = INTERNALS.read_text()
    section = text.index("### The tile syntax, by example")
    start = text.index("```\nfunc.func @gemm() {", section) + len("```\n")
    end = text.index("\n```", start)
    doc = text
    ctx = make_context()
    module = Parser(ctx, "builtin.module {\n" + doc[start:end] + "\n}\n").parse_module()
    module.verify()
    exchanges = [op for op in module.walk() if isinstance(op, ipu_dialects.tile.ExchangeOp)]
    assert exchanges and all(op.schedule is not None for op in exchanges)
