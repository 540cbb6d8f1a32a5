"""`ipu-run --json` and `ipu-run --report DIR`: the numbers are the run's, the files are what
their readers (scripts, a browser, ui.perfetto.dev) expect."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from e2e_support import ROW_PLANS

from device.isa import Send, encode
from device.package import ExchangeStep, Package
from device.target import IPU21
from tools.ipu_run import EXIT_DIAGNOSTIC, EXIT_PASS, compile_module, parse_module, run_main
from tools.run_summary import code_bytes_per_tile, exchange_bytes_per_tile, memory_per_tile

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "examples" / "gemm_f16.mlir"  # 256x320 @ 320x192 in f16
STAGES = ["graph-to-mid", "insert-conversions", "normalize-repeats", "mid-to-tile", "place-memory",
          "schedule-exchange"]


def run_json(capsys, *args, **options) -> tuple[int, dict]:
    status = run_main(*args, json_output=True, **options)
    out = capsys.readouterr().out
    return status, json.loads(out)  # exactly one JSON document, nothing else on stdout


def test_json_summary_holds_the_runs_numbers(capsys):
    status, summary = run_json(capsys, GEMM, tiles=4)
    assert status == EXIT_PASS and summary["check"] == "PASS"
    # the same run in text mode prints the same check and cycles
    assert run_main(GEMM, tiles=4) == EXIT_PASS
    text = capsys.readouterr().out
    assert f"modeled cycles: {summary['modeled_cycles']['total']}\n" in text
    assert f"tiles used: {summary['tiles_used']} of 4" in text
    max_abs = float(re.search(r"max abs error: (\S+)", text).group(1))
    assert summary["max_abs_error"] == pytest.approx(max_abs, rel=1e-2)
    assert 0 < summary["max_rel_error"] < 1e-2
    cycles = summary["modeled_cycles"]
    for breakdown in ("by_phase", "by_graph_op"):
        assert sum(cycles[breakdown].values()) == cycles["total"]
    assert set(cycles["by_phase"]) == {"sync", "exchange", "compute"}
    assert sum(cycles["by_kernel"].values()) == cycles["by_phase"]["compute"]
    assert list(cycles["by_graph_op"]) == ["graph.gemm %c"]
    per_pass = summary["compile_seconds"]["per_pass"]
    assert [k for k in per_pass if k.startswith("ipu-pipeline/")] == [
        f"ipu-pipeline/{stage}" for stage in STAGES]
    assert per_pass["ipu-pipeline"] >= sum(per_pass[f"ipu-pipeline/{s}"] for s in STAGES) * 0.999
    assert summary["tiles"] == 4 and summary["function"] == "gemm"


def test_json_reports_a_diagnostic_as_an_object_too(capsys, tmp_path):
    bad = tmp_path / "bad.mlir"  # a parse error
    bad.write_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %a\n}\n")
    big = tmp_path / "big.mlir"  # a compile diagnostic: an output-row tile does not fit
    big.write_text(
        "func.func @f(%a: tensor<2944x1024xf16>, %b: tensor<1024x1024xf16>) -> tensor<2944x1024xf16> {\n"
        "  %c = graph.gemm %a, %b : (tensor<2944x1024xf16>, tensor<1024x1024xf16>) -> tensor<2944x1024xf16>\n"
        "  func.return %c : tensor<2944x1024xf16>\n}\n")
    for source, line in ((bad, 3), (big, 2)):
        status = run_main(source, json_output=True)
        captured = capsys.readouterr()
        summary = json.loads(captured.out)
        assert status == EXIT_DIAGNOSTIC and summary["check"] == "DIAGNOSTIC"
        assert summary["diagnostic"] in captured.err
        assert f"{source.name}:{line}:" in summary["diagnostic"]


def test_exchange_bytes_add_up_to_the_broadcast_rhs():
    """Each 64x64 f16 block of the 320x192 rhs is sent once, by its home tile (the row plan)."""
    package = compile_module(parse_module(GEMM), 4, "pad", catalog=ROW_PLANS)
    sent = exchange_bytes_per_tile(package)
    assert sent.sum() == 320 * 192 * 2
    assert sent[3] == 0 and (sent[:3] > 0).all()  # 15 blocks on home tiles j // 2 ... of 3


def test_exchange_bytes_count_the_words_of_64_bit_items():
    """A 64-bit stream sends two words per event: 8 bytes per item."""
    row = np.asarray(encode([Send(5, 0x14000, 5)], IPU21.memory_base), np.uint32)
    step = ExchangeStep(IPU21.memory_base, np.array([0, -1], np.int32))
    package = Package(IPU21.name, 2, [row], [step], [], [])
    assert exchange_bytes_per_tile(package).tolist() == [6 * 8, 0]


def test_memory_per_tile_counts_buffers_and_rows():
    module = parse_module(GEMM)
    package = compile_module(module, 4, "pad", catalog=ROW_PLANS)  # the layout described below
    usage = memory_per_tile(module, package)
    assert set(usage) == {"input (standard)", "output (interleaved)", "scratch (standard)",
                          "scratch (interleaved)", "exchange rows (code)"}
    # a: 64x320 f16 shard (+16 bytes AMP access tail) on every tile; b: 320x64 on tiles 0-2
    assert usage["input (standard)"].tolist() == [81936, 81936, 81936, 40976]
    assert usage["output (interleaved)"].tolist() == [64 * 192 * 2] * 4
    # the rhs receive slot (64x64 f16) and the f32 partials panel (64 rows x 64 columns)
    assert usage["scratch (standard)"].tolist() == [64 * 64 * 2] * 4
    assert usage["scratch (interleaved)"].tolist() == [64 * 64 * 4] * 4
    # the rows the loader writes, each (tile, slot) once
    slow = [sum(4 * len(words) for words in dict(package.tile_image(t)).values())
            for t in range(package.tiles)]
    assert code_bytes_per_tile(package).tolist() == slow


def test_report_writes_html_pictures_and_a_perfetto_trace(capsys, tmp_path):
    status, summary = run_json(capsys, GEMM, tiles=4, report_dir=tmp_path / "rep")
    assert status == EXIT_PASS
    directory = tmp_path / "rep"
    page = (directory / "report.html").read_text()
    for picture in ("memory.png", "cycles.png", "exchange.png"):
        assert f'src="{picture}"' in page
        assert (directory / picture).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"<td>{summary['modeled_cycles']['total']} (" in page
    trace = json.loads((directory / "trace.json").read_text())
    events = trace["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    assert all({"name", "ts", "dur", "pid", "tid"} <= set(e) for e in slices)
    device = [e for e in slices if e["pid"] == 1]
    assert {e["cat"] for e in device} == {"sync", "exchange", "compute"}
    # the last slice ends at the run's end on the modeled clock
    clock = trace["otherData"]["clock_hz"]
    total_us = summary["modeled_cycles"]["total"] / clock * 1e6
    assert max(e["ts"] + e["dur"] for e in device) == pytest.approx(total_us)
    for tid in {e["tid"] for e in device}:  # every tile group syncs at every exchange step
        synced = sum(e["args"]["cycles"] for e in device if e["cat"] == "sync" and e["tid"] == tid)
        assert synced == summary["modeled_cycles"]["by_phase"]["sync"]
    tracks = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"
              and e["pid"] == 1]
    assert tracks and all(name.startswith("tiles ") for name in tracks)
    compiler = [e["name"] for e in slices if e["pid"] == 2]
    assert compiler == ["ipu-pipeline", *STAGES, "build-package"]


def test_report_pictures_are_drawn_from_the_numbers():
    """The memory bars stack exactly the per-tile usage, under the tile's SRAM line; the cycle
    bars are the breakdown's."""
    from tools import report

    usage = {"input (standard)": np.array([1024, 2048]), "scratch (standard)": np.array([512, 0])}
    fig = report.memory_figure(usage, report.IPU21)
    (ax,) = fig.axes
    drawn = {c.get_label(): [bar.get_height() for bar in c] for c in ax.containers}
    assert drawn == {"input (standard)": [1.0, 2.0], "scratch (standard)": [0.5, 0.0]}
    bottoms = [bar.get_y() for bar in ax.containers[1]]
    assert bottoms == [1.0, 2.0]  # stacked on the inputs
    assert [line.get_ydata()[0] for line in ax.lines] == [report.IPU21.sram_bytes / 1024]
    report.pyplot().close(fig)
    cycles = {"by_phase": {"sync": 90, "exchange": 10, "compute": 400},
              "by_graph_op": {"graph.gemm %c": 300, "graph.add %d": 200}}
    fig = report.cycles_figure(cycles)
    phases, ops = fig.axes
    assert [bar.get_height() for bar in phases.containers[0]] == [90, 10, 400]
    assert [bar.get_width() for bar in ops.containers[0]] == [200, 300]
    assert [t.get_text() for t in ops.get_yticklabels()] == ["graph.add %d", "graph.gemm %c"]
    report.pyplot().close(fig)


def test_report_says_which_buffer_fills_a_tile_when_and_splits_each_op(capsys, tmp_path):
    """Memory on tile 0 over the program with its buffers named (the inputs a and b live from
    the start, the output to the end), and each graph op's cycles as sync + exchange +
    compute with conversions apart, as tables that add up to the run's cycles."""
    from tools.report_memory import op_phases, tile_liveness

    status, summary = run_json(capsys, ROOT / "examples" / "mlp_f16.mlir", tiles=4,
                               report_dir=tmp_path / "rep")
    assert status == EXIT_PASS
    page = (tmp_path / "rep" / "report.html").read_text()
    for picture in ("liveness_tile0.png", "op_phases.png"):
        assert f'src="{picture}"' in page
    assert "<h2>Memory on tile 0 over the program</h2>" in page
    assert "(conversion)" in page  # the mlp's plans differ: conversions are bars of their own

    module = parse_module(ROOT / "examples" / "mlp_f16.mlir")
    package = compile_module(module, 4, "pad", with_assembly=False)
    live = tile_liveness(module, package, 0)
    assert len(live.buffers) == 10 and f"<td>{live.buffers[0].name}</td>" in page
    assert sum(band[live.peak_position] for band in live.bands.values()) == live.peak_bytes
    every = tile_liveness(module, package, 0, named=1000)  # every buffer of tile 0 named
    names = {b.name: b for b in every.buffers}
    assert names["x"].start == 0 and names["out"].stop == every.positions - 1
    assert (sum(every.bands.values()) == sum(live.bands.values())).all()
    from xdsl.dialects.func import FuncOp

    from device.model import run_package
    from device.model.host import values_of_stored
    from tools.run_io import random_inputs

    func = next(op for op in parse_module(ROOT / "examples" / "mlp_f16.mlir").walk()
                if isinstance(op, FuncOp))
    feeds = {t.name: values_of_stored(t, a)
             for t, a in zip(package.inputs, random_inputs(func, 0), strict=True)}
    outcome = run_package(package, feeds)
    split = op_phases(package, outcome.cycles_by_step)
    assert sum(sum(p.values()) for p in split.values()) == summary["modeled_cycles"]["total"]
    assert any(name.endswith("(conversion)") for name in split)


def test_two_reports_side_by_side(capsys, tmp_path):
    """`ipu-report-compare A B`: the figures of both runs (B's change against A) and their
    pictures next to each other; a directory that is not a report is a usage error."""
    from typer.testing import CliRunner

    from tools.report_compare import app

    for tiles in (4, 8):
        assert run_main(GEMM, tiles=tiles, report_dir=tmp_path / f"t{tiles}", quiet=True) == EXIT_PASS
    capsys.readouterr()
    a = json.loads((tmp_path / "t4" / "summary.json").read_text())
    b = json.loads((tmp_path / "t8" / "summary.json").read_text())
    out = tmp_path / "compare.html"
    done = CliRunner().invoke(app, [str(tmp_path / "t4"), str(tmp_path / "t8"), "-o", str(out)])
    assert done.exit_code == 0, done.output
    page = out.read_text()
    total_a, total_b = a["modeled_cycles"]["total"], b["modeled_cycles"]["total"]
    change = f"{100 * (total_b - total_a) / total_a:+.1f}%"
    assert (f'<tr><th>modeled cycles</th><td class="num">{total_a}</td>'
            f'<td class="num">{total_b}</td><td class="num">{change}</td></tr>') in page
    assert '<tr><th>tiles used</th><td class="num">4</td><td class="num">8</td>' in page
    common = set(a["report"]["pictures"]) & set(b["report"]["pictures"])
    assert {"memory.png", "liveness_tile0.png", "op_phases.png"} <= common
    for picture in common:
        assert f'<td><img src="t4/{picture}" alt="{picture}"></td><td><img src="t8/{picture}"' in page
    done = CliRunner().invoke(app, [str(tmp_path / "t4"), str(tmp_path), "-o", str(out)])
    assert done.exit_code == 2 and "not a report's summary" in done.output
    assert "write the report again with ipu-run --report DIR" in done.output
