"""A seeded corpus of mutated IR and corrupted packages through every tool that reads them.

The cases and their classification are `bench/robustness.py`'s (which runs a larger corpus);
here a few hundred tool runs, in-process. No run may end in a traceback, a hang or click's
bare "Aborted.", and no corrupted package may run to a wrong answer through `ipu-run DIR`
without saying so (its reference check FAILs instead).
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
    tally = robustness.Tally({}, [])
    robustness.run_ir_corpus(tally, IR_CASES, SEED, TIMEOUT, tmp_path)
    assert_clean(tally)
    assert sum(tally.counts["ipu-opt"].values()) == IR_CASES
    assert set(tally.counts) == {"ipu-opt", "ipu-opt -p ipu-pipeline", "ipu-run"}
    assert tally.counts["ipu-opt"]["diagnostic"] > IR_CASES // 2  # the mutations do bite


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
