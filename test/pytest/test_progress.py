"""Progress bars: on a terminal's stderr after a delay, never when quiet or not a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tools import progress
from tools.ipu_run import EXIT_PASS, run_main

REPO = Path(__file__).resolve().parents[2]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal(monkeypatch):
    """A terminal as stderr, set up by the test itself: pytest's capture would replace a
    stderr set in a fixture."""
    def attach():
        stream = Terminal()
        monkeypatch.setattr("sys.stderr", stream)
        monkeypatch.setattr(progress, "DELAY_SECONDS", 0)
        return stream

    return attach


def test_a_bar_on_a_terminal_shows_the_description_and_the_total(terminal):
    stream = terminal()
    items = list(progress.terminal_progress()(range(7), "device model", 7))
    assert items == list(range(7))
    assert "device model" in stream.getvalue() and "/7" in stream.getvalue()


def test_quiet_prints_nothing_and_still_yields_every_item(terminal):
    stream = terminal()
    assert list(progress.terminal_progress(quiet=True)(range(7), "device model", 7)) == list(
        range(7))
    assert stream.getvalue() == ""


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setattr(progress, "DELAY_SECONDS", 0)
    assert list(progress.terminal_progress()(range(3), "compile", 3)) == [0, 1, 2]
    assert stream.getvalue() == ""


def test_ipu_run_shows_compile_and_model_bars_unless_quiet(terminal):
    example = REPO / "examples" / "gemm_f16.mlir"
    stream = terminal()
    assert run_main(example, tiles=4) == EXIT_PASS
    assert "compile" in stream.getvalue() and "device model" in stream.getvalue()
    stream = terminal()
    assert run_main(example, tiles=4, quiet=True) == EXIT_PASS
    assert stream.getvalue() == ""
