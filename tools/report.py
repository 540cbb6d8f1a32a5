"""`ipu-run --report DIR`: `DIR/report.html`, its pictures (PNG, drawn with matplotlib) and
`DIR/trace.json` (`tools/trace.py`).

Pictures: memory per tile, stacked by buffer kind and memory class, against the tile's SRAM;
modeled cycles by phase and by graph op; exchange bytes each tile sends. The numbers behind
them are those of `tools/run_summary.py`, the same as `ipu-run --json` prints.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from device.target import IPU21, Target
from tools.pass_timing import PassTimer
from tools.run_summary import RunFacts, exchange_bytes_per_tile, memory_per_tile
from tools.trace import write_trace

KIB = 1024


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def per_tile_axis(ax, tiles: int) -> None:
    ax.set_xlabel("tile")
    ax.set_xlim(-0.5, tiles - 0.5)


def saved(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    pyplot().close(fig)
    return path


def memory_figure(usage: dict[str, np.ndarray], target: Target):
    """Bars per tile, stacked by buffer kind (memory class), in KiB, with the SRAM line."""
    fig, ax = pyplot().subplots(figsize=(10, 4.5))
    tiles = np.arange(len(next(iter(usage.values()))))
    bottom = np.zeros(tiles.size)
    for label, per_tile in usage.items():
        ax.bar(tiles, per_tile / KIB, bottom=bottom, width=1.0, label=label, linewidth=0)
        bottom += per_tile / KIB
    limit = target.sram_bytes / KIB
    ax.axhline(limit, color="black", linestyle="--", linewidth=1)
    ax.text(tiles.size - 0.5, limit, f" {limit:.0f} KiB SRAM", va="bottom", ha="right")
    ax.set_ylim(0, limit * 1.1)
    ax.set_ylabel("KiB")
    ax.set_title("Memory per tile by buffer kind (memory class)")
    per_tile_axis(ax, tiles.size)
    ax.legend(loc="upper left", fontsize="small", ncol=2)
    return fig


def cycles_figure(cycles: dict):
    fig, (by_phase, by_op) = pyplot().subplots(1, 2, figsize=(10, 4),
                                          gridspec_kw={"width_ratios": [1, 2]})
    phases = cycles["by_phase"]
    by_phase.bar(list(phases), list(phases.values()), color=["#999999", "#4c72b0", "#dd8452"])
    by_phase.set_title("Modeled cycles by phase")
    by_phase.set_ylabel("cycles")
    ops = sorted(cycles["by_graph_op"].items(), key=lambda item: item[1])
    by_op.barh([name for name, _ in ops], [value for _, value in ops], color="#55a868",
               height=0.5)
    by_op.set_title("Modeled cycles by graph op")
    by_op.set_xlabel("cycles")
    return fig


def exchange_figure(sent: np.ndarray):
    fig, ax = pyplot().subplots(figsize=(10, 3.5))
    ax.bar(np.arange(sent.size), sent / KIB, width=1.0, color="#4c72b0", linewidth=0)
    ax.set_ylabel("KiB sent")
    ax.set_title("Exchange bytes sent per tile (whole run)")
    per_tile_axis(ax, sent.size)
    return fig


def table(rows: list[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                    for k, v in rows)
    return f"<table>{cells}</table>"


def summary_rows(summary: dict) -> list[tuple[str, str]]:
    def error(value):
        return "not finite" if value is None else f"{value:.3g}"

    cycles = summary["modeled_cycles"]
    rows = [("function", f"@{summary['function']} in {summary['file']}"),
            ("check", summary["check"]),
            ("max abs error", error(summary["max_abs_error"])),
            ("max rel error", error(summary["max_rel_error"])),
            ("modeled cycles", f"{cycles['total']} ({summary['modeled_seconds'] * 1e6:.1f} µs)"),
            ("tiles used", f"{summary['tiles_used']} of {summary['tiles']}"),
            ("compile time", f"{summary['compile_seconds']['total']:.3f} s")]
    rows += [(f"  {name}", f"{seconds * 1e3:.1f} ms")
             for name, seconds in summary["compile_seconds"]["per_pass"].items()]
    return rows


STYLE = """body { font-family: sans-serif; max-width: 1050px; margin: 2em auto; }
table { border-collapse: collapse; } th, td { text-align: left; padding: 2px 12px; }
th { font-weight: normal; color: #555; } img { max-width: 100%; }"""


def write_report(directory: Path, facts: RunFacts, module: ModuleOp, timer: PassTimer,
                 target: Target = IPU21) -> Path:
    """Write the pictures, `trace.json` and `report.html` (returned) into `directory`;
    `module` is the compiled (tile-level, placed) module."""
    directory.mkdir(parents=True, exist_ok=True)
    summary = facts.summary(target)
    usage = memory_per_tile(module, facts.package)
    pictures = [
        saved(memory_figure(usage, target), directory / "memory.png"),
        saved(cycles_figure(summary["modeled_cycles"]), directory / "cycles.png"),
        saved(exchange_figure(exchange_bytes_per_tile(facts.package)),
              directory / "exchange.png"),
    ]
    write_trace(directory / "trace.json", facts.package, facts.cycles_by_step, timer, target)
    images = "\n".join(f'<p><img src="{p.name}" alt="{p.stem}"></p>' for p in pictures)
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ipu-run: @{html.escape(facts.function)}</title>
<style>{STYLE}</style></head><body>
<h1>ipu-run report: @{html.escape(facts.function)}</h1>
{table(summary_rows(summary))}
{images}
<p><a href="trace.json">trace.json</a>: open it in <a href="https://ui.perfetto.dev">ui.perfetto.dev</a>
(compute, exchange and sync per tile group; compile time of each pass).</p>
<details><summary>summary (the <code>--json</code> object)</summary>
<pre>{html.escape(json.dumps(summary, indent=1))}</pre></details>
</body></html>
"""
    path = directory / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
