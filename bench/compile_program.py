"""Compile-time benchmark of whole programs: the examples through the default pipeline at
several tile counts.

Prints, per example and tile count, the wall time of each stage of `ipu-pipeline`
(`IpuPipelinePass.stage_passes()`) and of the package build, and the number of xDSL ops after
each level. The scale rule (docs/internals.md, "What we build"): the op count after every
level must not grow with the tile count; `--check` exits 1, naming the level, when it does.
`test/pytest/test_compile_program_scale.py` asserts the same on the transformer block and
the MLP.
Usage: python bench/compile_program.py [--tiles 4 64 1472] [--check] [EXAMPLE.mlir ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException

from tools.ipu_run import make_context

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DEFAULT_EXAMPLES = ("transformer_block.mlir", "mlp_f16.mlir", "attention.mlir", "fp8_mlp.mlir")
GRAPH_LEVEL = "graph (parsed)"


@dataclass(frozen=True)
class Stage:
    name: str
    seconds: float
    ops: int | None  # None: the stage stopped with a diagnostic (in `note`), or the package
    note: str = ""
    by_name: Counter[str] = field(default_factory=Counter)  # ops per op name after the stage


def level(name: str, seconds: float, module: ModuleOp) -> Stage:
    by_name = Counter(op.name for op in module.walk())
    return Stage(name, seconds, sum(by_name.values()), by_name=by_name)


def compile_stages(text: str, tiles: int, with_package: bool = True) -> list[Stage]:
    """Parse `text`, run the default pipeline's stages for `tiles` tiles one by one (verifying
    after each, as ipu-pipeline does) and, if they all succeed, build the package."""
    from passes.ipu_pipeline import IpuPipelinePass
    from tools.package_writer import build_package

    ctx = make_context()
    module = Parser(ctx, text, "example").parse_module()
    stages = [level(GRAPH_LEVEL, 0.0, module)]
    for stage in IpuPipelinePass(tiles=tiles).stage_passes():
        started = time.perf_counter()
        try:
            stage.apply(ctx, module)
            module.verify()
        except DiagnosticException as error:
            stages.append(Stage(stage.name, time.perf_counter() - started, None,
                                f"diagnostic: {error}"))
            return stages
        stages.append(level(stage.name, time.perf_counter() - started, module))
    if with_package:
        started = time.perf_counter()
        package = build_package(module, with_assembly=False)
        stages.append(Stage("package", time.perf_counter() - started, None,
                            f"{len(package.steps)} steps, {len(package.rows)} unique rows"))
    return stages


def op_counts(stages: list[Stage]) -> dict[str, int]:
    return {s.name: s.ops for s in stages if s.ops is not None}


def growth(by_tiles: dict[int, list[Stage]]) -> list[str]:
    """Levels whose op count differs from the smallest tile count's (the scale rule)."""
    counts = {tiles: op_counts(stages) for tiles, stages in sorted(by_tiles.items())}
    first_tiles, first = next(iter(counts.items()))
    problems = []
    for tiles, levels in counts.items():
        for level, ops in levels.items():
            if level in first and ops != first[level]:
                problems.append(f"{level}: {first[level]} ops at {first_tiles} tiles, "
                                f"{ops} at {tiles}")
    return problems


def count_table(example: str, by_tiles: dict[int, list[Stage]]) -> str:
    """A markdown table: one row per level, one column per tile count."""
    tiles = sorted(by_tiles)
    counts = {t: op_counts(by_tiles[t]) for t in tiles}
    levels = list(dict.fromkeys(level for t in tiles for level in counts[t]))
    lines = [f"| {example} | " + " | ".join(f"{t} tiles" for t in tiles) + " |",
             "|---" * (len(tiles) + 1) + "|"]
    for name in levels:
        cells = [str(counts[t].get(name, "-")) for t in tiles]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    seconds = [sum(s.seconds for s in by_tiles[t] if s.name != "package") for t in tiles]
    lines.append("| passes (s) | " + " | ".join(f"{x:.2f}" for x in seconds) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("examples", nargs="*", type=Path,
                        default=[EXAMPLES / name for name in DEFAULT_EXAMPLES])
    parser.add_argument("--tiles", type=int, nargs="+", default=[4, 64, 1472])
    parser.add_argument("--no-package", action="store_true", help="stop after the passes")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if an op count grows with the tile count")
    args = parser.parse_args()
    problems, tables = [], []
    for path in args.examples:
        text = path.read_text()
        by_tiles = {}
        for tiles in args.tiles:
            print(f"== {path.name}, tiles={tiles}")
            stages = compile_stages(text, tiles, not args.no_package)
            by_tiles[tiles] = stages
            for s in stages:
                shown = s.ops if s.ops is not None else s.note
                print(f"  {s.name:<20} {s.seconds:8.3f} s   ops/result: {shown}")
            print(f"  {'total':<20} {sum(s.seconds for s in stages):8.3f} s")
        problems += [f"{path.name}: {p}" for p in growth(by_tiles)]
        tables.append(count_table(path.name, by_tiles))
    print("\n== op count after each level, by tile count")
    for table in tables:
        print(table)
    print("\n== levels whose op count differs from the first tile count's")
    for problem in problems or ["the op counts do not grow with the tile count"]:
        print(f"  {problem}")
    if args.check and problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
