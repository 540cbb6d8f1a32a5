"""A seeded corpus of mutated and hand-built inputs through every tool that reads them.

The cases and their classification are `bench/robustness.py`'s (which runs a larger corpus);
here a small run of each category, in-process: mutated IR at every level through every
emitter and a package, corrupted and hand-crafted (FP8) packages, malformed ONNX, output paths
and a sample of the resource bombs. No run may end in a bad outcome (a traceback, a hang,
click's bare "Aborted.", a wrong verdict, a write outside its place, an output left behind),
and no corrupted package may run to a wrong answer through `ipu-run DIR` without saying so (its
reference check FAILs instead).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "robustness.py"
IR_CASES, PACKAGE_CASES, SEED, TIMEOUT = 120, 100, 13, 20.0


@pytest.fixture(scope="module")
def robustness():
    spec = importlib.util.spec_from_file_location("robustness", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def assert_clean(tally) -> None:
    assert not tally.bad, "\n".join(tally.bad[:10])
    for tool, counter in tally.counts.items():
        assert counter["traceback"] == counter["hang"] == counter["aborted"] == 0, tool


@pytest.mark.slow
def test_mutated_ir_through_ipu_opt_and_ipu_run(robustness, tmp_path):
    """The larger corpus: IR_CASES mutants over every seed and level."""
    tally = robustness.Tally({}, [])
    robustness.run_ir_corpus(tally, IR_CASES, SEED, TIMEOUT, tmp_path)
    assert_clean(tally)
    parsed = [f"ipu-opt [{level}]" for level in robustness.LEVELS]
    assert sum(sum(tally.counts[tool].values()) for tool in parsed) == IR_CASES
    assert sum(tally.counts[tool]["diagnostic"] for tool in parsed) > IR_CASES // 2  # they bite
    assert sum(tally.counts["ipu-run --package [graph]"].values()) == IR_CASES // len(
        robustness.LEVELS)


@pytest.mark.slow
def test_corrupted_packages_through_every_reader(robustness, tmp_path):
    tally = robustness.Tally({}, [])
    robustness.run_package_corpus(tally, PACKAGE_CASES, SEED, TIMEOUT, tmp_path, big=5_000_000)
    assert_clean(tally)
    assert tally.counts["ipu-run DIR"]["wrong-silent"] == 0
    for tool in ("ipu-objdump --package", "ipu-run DIR", "Package.load+run_package"):
        assert sum(tally.counts[tool].values()) == PACKAGE_CASES
        assert tally.counts[tool]["diagnostic"] > PACKAGE_CASES // 2


def test_a_hang_and_a_traceback_are_seen(robustness):
    """The harness itself: it must notice what it is there to count."""
    def spin() -> int:
        while True:
            pass

    def crash() -> int:
        return {}["missing"]

    assert robustness.run_tool(spin, 0.2).kind == "hang"
    assert robustness.run_tool(crash, 5).kind == "traceback"
    assert robustness.run_tool(lambda: (_ for _ in ()).throw(SystemExit(2)), 5).kind == \
        "diagnostic"


def test_a_sample_of_resource_bombs_is_refused_in_time_and_memory(robustness, tmp_path):
    """Three of `bench/robustness.py --bombs` (each in its own process): a package looping
    2**40 times, graph.repeat 1e9 under the reference, /dev/zero as an input file."""
    wanted = ("package: loops of 2**20 x 2**20", "graph.repeat 1e9, reference", "--input a=/dev/zero")
    cases = [c for c in robustness.bomb_cases(tmp_path) if c[0].startswith(wanted)]
    assert len(cases) == len(wanted)
    for what, command in cases:
        outcome = robustness.run_bomb(what, command, seconds=60)  # a loaded machine starts slowly
        assert outcome.refused, robustness.bomb_report([outcome])
        assert outcome.peak_bytes < robustness.BOMB_BYTES, robustness.bomb_report([outcome])
        assert outcome.cpu_seconds < robustness.BOMB_SECONDS, robustness.bomb_report([outcome])


# ---- the wider corpus (issue 25, second pass): every IR level, FP8, ONNX, output paths ------


def test_mutated_ir_at_every_level_through_every_emitter(robustness, tmp_path):
    """Two mutants of each seed at each level (graph, mid, tile, placed, exchange), each through
    ipu-opt, -t ipu-asm, -t ipu-rows and a package (ipu-run --package or the package writer),
    and what was packaged through ipu-run DIR."""
    count = 2 * len(robustness.ir_seeds())
    tally = robustness.Tally({}, [])
    robustness.run_ir_corpus(tally, count, SEED, TIMEOUT, tmp_path)
    assert_clean(tally)
    for level in robustness.LEVELS:
        writer = "ipu-run --package" if level == "graph" else "package writer"
        for tool in ("ipu-opt", "ipu-opt -t ipu-asm", "ipu-opt -t ipu-rows", writer):
            assert sum(tally.counts[f"{tool} [{level}]"].values()) == count // len(robustness.LEVELS)


def test_every_seed_compiles_and_passes_at_every_level(robustness, tmp_path):
    """The corpus starts from programs every tool accepts: a mutant's diagnostic is the
    mutation's, and a packaged seed passes ipu-run DIR against its graph."""
    tally = robustness.Tally({}, [])
    for name, level, text in robustness.ir_seeds():
        case = robustness.IrCase(name, level, text)
        path = tmp_path / f"{name}-{level}.mlir"
        path.write_text(text)
        for tool, call in robustness.ir_runs(case, path, tmp_path):
            robustness.run_case(tally, tool, call, path.name, 60)
        tool, call = robustness.ir_package_run(case, tmp_path / f"{path.stem}.pkg")
        robustness.run_case(tally, tool, call, path.name, 60)
    assert {kind for counter in tally.counts.values() for kind in counter} == {"accepted"}, \
        "\n".join(f"{k}: {v[:3]}" for k, v in tally.cases.items() if k != "accepted")


def test_hand_crafted_fp8_packages_get_their_verdicts(robustness, tmp_path):
    """An FP8 package as written PASSes under ipu-run DIR; a scale, precision or source edit is
    refused; a source computing another function FAILs."""
    tally = robustness.Tally({}, [])
    wrong = robustness.run_fp8_package_cases(tally, tmp_path, TIMEOUT)
    assert not wrong, "\n".join(wrong)
    assert_clean(tally)
    counts = tally.counts["ipu-run DIR [fp8, hand-crafted]"]
    assert counts["accepted"] >= 3 and counts["diagnostic"] >= 10 and counts["check-fail"] >= 1


def test_malformed_onnx_through_ipu_import(robustness, tmp_path):
    pytest.importorskip("onnx")
    tally = robustness.Tally({}, [])
    robustness.run_onnx_corpus(tally, 80, SEED, TIMEOUT, tmp_path)
    assert_clean(tally)
    assert sum(tally.counts["ipu-import"].values()) == 80
    assert tally.counts["ipu-import"]["diagnostic"] > 40  # the mutations do bite
    assert tally.counts["ipu-import"]["accepted"] >= 1  # and some still import, and run


def test_output_paths_of_the_tools_that_compile_nothing(robustness, tmp_path):
    """ipu-opt -o and ipu-import -o to every kind of destination (symlinks in and out, a
    directory, a FIFO, under a file, under /proc): refused or written in place, and nothing
    outside changes, nothing is left behind."""
    pytest.importorskip("onnx")
    options = {k: v for k, v in robustness.OUTPUT_OPTIONS.items()
               if k.startswith(("ipu-opt -o", "ipu-import -o"))}
    tally = robustness.Tally({}, [])
    robustness.run_output_corpus(tally, TIMEOUT, tmp_path, options)
    assert_clean(tally)
    assert len(tally.counts) == len(options) == 4


@pytest.mark.slow
def test_output_paths_of_every_option(robustness, tmp_path):
    pytest.importorskip("onnx")
    tally = robustness.Tally({}, [])
    robustness.run_output_corpus(tally, TIMEOUT, tmp_path)
    assert_clean(tally)
    assert set(tally.counts) == {f"outputs: {k}" for k in robustness.OUTPUT_OPTIONS}


def test_the_output_judge_sees_a_write_through_a_symlink_and_a_half_written_file(robustness,
                                                                               tmp_path):
    """The harness again: a writer that follows the link, and one that truncates then fails."""
    def naive(work, dst):
        def call() -> int:
            Path(dst).write_text("overwritten")
            return 0
        return call

    def truncating(work, dst):
        def call() -> int:
            Path(dst).write_text("")
            return 2
        return call

    tally = robustness.Tally({}, [])
    robustness.run_output_corpus(tally, 1.0, tmp_path, {  # the naive open of a FIFO hangs
        "naive": ("file", naive), "truncating": ("file", truncating)})
    assert tally.counts["outputs: naive"]["hang"] == 1
    assert tally.counts["outputs: naive"]["wrote-outside"] >= 1
    assert tally.counts["outputs: truncating"]["left-behind"] >= 1
    assert len(tally.bad) >= 2


def test_mutated_input_files_through_a_run_and_a_package_run(robustness, tmp_path):
    tally = robustness.Tally({}, [])
    robustness.run_input_corpus(tally, 40, SEED, TIMEOUT, tmp_path)
    assert_clean(tally)
    for tool in ("ipu-run FILE --input", "ipu-run DIR --input", "ipu-run FILE --inputs",
                 "ipu-run DIR --inputs"):
        assert tally.counts[tool]["diagnostic"] >= 5, tool
        assert tally.counts[tool]["accepted"] >= 1, tool  # the good file is read
