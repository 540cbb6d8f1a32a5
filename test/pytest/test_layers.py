"""The import graph of the project follows the layer rule of docs/internals.md ("Layers").

The graph is built from the source text (`ast`), not by importing: every `import` statement
of a module counts, wherever it stands (top level, inside a function, under `TYPE_CHECKING`),
since a deferred or type-only import hides a dependency without removing it. The implicit
import of a package's `__init__` when one of its modules is imported does not count (that is
Python's mechanics, not a dependency the module chose).

Checked: (a) no cycle between modules; (b) every import goes from a module to one of its own
layer or of a layer below it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("device", "ipu_dialects", "planning", "passes", "tools", "interpreters",
               "frontend", "bench")

# Layer -> the layers directly below it (each layer may import its own modules and those of
# every layer reachable downwards). Keep in step with docs/internals.md, "Layers".
BELOW: dict[str, tuple[str, ...]] = {
    "device": (),
    "dialect support": ("device",),
    "graph dialect": ("dialect support",),
    "mid dialect": ("graph dialect",),
    "exchange dialect": ("dialect support",),
    "tile dialect": ("exchange dialect",),
    "dialect registry": ("mid dialect", "tile dialect"),
    "interpreters": ("graph dialect",),
    "importers": ("graph dialect",),
    "planning": ("mid dialect", "tile dialect"),
    "operators": ("planning",),
    "passes": ("operators", "dialect registry"),
    "package": ("planning",),
    "tools": ("passes", "package", "interpreters", "importers"),
    "drivers": ("tools",),
}

# The layer of a module: the entry with the longest matching dotted prefix.
LAYER_OF_PREFIX: dict[str, str] = {
    "device": "device",
    "ipu_dialects.shapes": "dialect support",
    "ipu_dialects.locations": "dialect support",
    "ipu_dialects.tile_iteration": "dialect support",
    "ipu_dialects.shared_attrs": "dialect support",
    "ipu_dialects.graph": "graph dialect",
    "ipu_dialects.mid": "mid dialect",
    "ipu_dialects.mid_attrs": "mid dialect",
    "ipu_dialects.mid_config": "mid dialect",
    "ipu_dialects.exchange": "exchange dialect",
    "ipu_dialects.tile": "tile dialect",
    "ipu_dialects.tile_schedule": "tile dialect",
    "ipu_dialects.tile_syntax": "tile dialect",
    "ipu_dialects.tile_checks": "tile dialect",
    "ipu_dialects": "dialect registry",
    "interpreters": "interpreters",
    "frontend": "importers",
    "frontend.run": "drivers",
    "planning": "planning",
    "passes.operators": "operators",
    "passes": "passes",
    "tools.package_writer": "package",
    "tools.package_loops": "package",
    "tools.asm_listing": "package",
    "tools.asm_loops": "package",
    "tools.asm_shared": "package",
    "tools.asm_statements": "package",
    "tools.emit_asm": "package",
    "tools.emit_rows": "package",
    "tools.progress": "package",
    "tools": "tools",
    "bench": "drivers",
}

# Imports against the rule that stay until the modules they name move; each one is listed with
# why. The test fails when one of them is gone, so that the list never outlives its reason.
PENDING: dict[tuple[str, str], str] = {}

# Cycles that stay for now, as sets of modules, with why.
PENDING_CYCLES: dict[frozenset[str], str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def project_modules() -> dict[str, Path]:
    modules = {}
    for directory in SOURCE_DIRS:
        for path in sorted((ROOT / directory).rglob("*.py")):
            if ".venv" not in path.parts:
                modules[module_name(path)] = path
    return modules


def resolve(name: str) -> str | None:
    """The project module `name` is or lies in (`passes.operators.base.Operator` ->
    `passes.operators.base`); None outside the project."""
    modules = project_modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imported_names(module: str, path: Path) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:  # `from passes.operators import base`: the module
                submodule = f"{source}.{alias.name}"
                yield submodule if submodule in project_modules() else source


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """Module -> the project modules it imports (itself excluded)."""
    graph = {}
    for module, path in project_modules().items():
        targets = {resolve(name) for name in imported_names(module, path)}
        graph[module] = frozenset(t for t in targets if t is not None and t != module)
    return graph


def layer_of(module: str) -> str:
    prefixes = [p for p in LAYER_OF_PREFIX if module == p or module.startswith(p + ".")]
    assert prefixes, f"{module} is in no layer: add it to LAYER_OF_PREFIX and the docs"
    return LAYER_OF_PREFIX[max(prefixes, key=len)]


@cache
def reachable(layer: str) -> frozenset[str]:
    """`layer` and every layer below it."""
    return frozenset({layer}).union(*(reachable(b) for b in BELOW[layer]))


def strongly_connected(graph: dict[str, frozenset[str]]) -> list[frozenset[str]]:
    """Tarjan's algorithm, iterative; components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(frozenset(component))
    return components


def layer_violations() -> set[tuple[str, str]]:
    graph = import_graph()
    return {(module, target) for module, targets in graph.items() for target in targets
            if layer_of(target) not in reachable(layer_of(module))}


def test_the_graph_sees_the_project():
    graph = import_graph()
    assert len(graph) > 100, sorted(graph)
    # a top-level import, a relative-free `from package import module`, a deferred import
    assert "device.target" in graph["device.layouts"]
    assert "passes.operators.base" in graph["passes.operators"]
    assert "passes.graph_to_mid" in graph["passes.ipu_pipeline"]


def test_layers_are_acyclic_and_cover_every_module():
    for layer in BELOW:
        assert layer not in set().union(*(reachable(b) for b in BELOW[layer])), layer
    assert set(LAYER_OF_PREFIX.values()) == set(BELOW)
    for module in project_modules():
        layer_of(module)


def test_no_import_cycle_between_modules():
    cycles = set(strongly_connected(import_graph()))
    unexpected = cycles - set(PENDING_CYCLES)
    assert not unexpected, "import cycles: " + "; ".join(
        " <-> ".join(sorted(c)) for c in sorted(unexpected, key=sorted))
    gone = set(PENDING_CYCLES) - cycles
    assert not gone, f"these cycles are gone: remove them from PENDING_CYCLES: {gone}"


def test_every_import_obeys_the_layer_rule():
    violations = layer_violations()
    unexpected = sorted(violations - set(PENDING))
    assert not unexpected, "imports against the layer rule (docs/internals.md, Layers): " + "; ".join(
        f"{a} ({layer_of(a)}) imports {b} ({layer_of(b)})" for a, b in unexpected)
    gone = sorted(set(PENDING) - violations)
    assert not gone, f"these imports are fixed: remove them from PENDING: {gone}"


@pytest.mark.parametrize("module, target", [
    ("ipu_dialects.mid", "passes.graph_to_mid"),
    ("device.target", "ipu_dialects.graph"),
    ("tools.package_writer", "passes.place_memory"),
    ("passes.operators.add", "passes.mid_to_tile"),
    ("ipu_dialects.exchange", "ipu_dialects.tile"),
])
def test_the_rule_rejects_upward_imports(module: str, target: str):
    assert layer_of(target) not in reachable(layer_of(module))


def test_cycle_finder_finds_a_cycle():
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}),
             "d": frozenset({"a"})}
    assert strongly_connected(graph) == [frozenset({"a", "b", "c"})]
