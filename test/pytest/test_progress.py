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


class Stage:
    def __init__(self, name: str):
        self.name = name


def test_a_long_item_shows_from_the_first_second_with_its_name(terminal, monkeypatch):
    """The bar is drawn while one item is still running (not only when it ends), with the
    name of what runs: a 20-second stage is not 20 seconds of silence."""
    import time

    stream = terminal()
    monkeypatch.setattr(progress, "TICK_SECONDS", 0.02)
    seen_during = []
    for _stage in progress.terminal_progress()([Stage("graph-to-mid"), Stage("mid-to-tile")],
                                               "compile", 2):
        time.sleep(0.3)
        seen_during.append(stream.getvalue())
    assert "compile" in seen_during[0] and "graph-to-mid" in seen_during[0]
    assert "mid-to-tile" in seen_during[1] and "1/2" in seen_during[1]


def test_a_phase_is_one_step_with_its_own_bar(terminal):
    import time

    stream = terminal()

    def work():
        time.sleep(0.3)
        return 42

    assert progress.phase(progress.terminal_progress(), "reference (NumPy)", work) == 42
    assert "reference (NumPy)" in stream.getvalue()
    stream = terminal()
    assert progress.phase(progress.terminal_progress(quiet=True), "listing", work) == 42
    assert stream.getvalue() == ""
    assert progress.phase(progress.no_progress, "listing", lambda: 7) == 7


def test_ipu_opt_shows_its_passes_on_a_terminal(terminal, capsys):
    from tools.ipu_opt import IpuOptMain

    stream = terminal()
    IpuOptMain(args=[str(REPO / "examples" / "gemm_f16.mlir"), "-p", "ipu-pipeline{tiles=4}"]).run()
    assert "ipu-opt" in stream.getvalue() and "/6" in stream.getvalue()  # the six stages
    assert "exchange.row" in capsys.readouterr().out
