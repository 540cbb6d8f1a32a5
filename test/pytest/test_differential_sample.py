"""A seeded sample of the random whole-program differential (`bench/differential.py`): random
graphs of 2-10 ops over every op kind and precision, compiled and run on the device model
against the NumPy reference. The full run (300 cases) is the bench script."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from differential import generate, verdict


@pytest.mark.parametrize("seed", range(1000, 1016))
def test_random_program_matches_the_reference(seed):
    program = generate(seed)
    result, detail = verdict(program, seed)
    assert result in ("PASS", "DIAGNOSTIC"), f"[{program.description}] {result}: {detail}"
    if result == "DIAGNOSTIC":  # only a program that cannot fit may be refused
        assert "memory" in detail.lower() or "fits" in detail, detail
