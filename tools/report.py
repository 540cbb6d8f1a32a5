"""`ipu-run --report DIR`: `DIR/report.html`, its pictures (PNG, drawn with matplotlib) and
`DIR/trace.json` (`tools/trace.py`).

Pictures: memory per tile, stacked by buffer kind and memory class, against the tile's SRAM;
memory over the program on tile 0 (and on the tile with the highest peak, when another), with
its largest buffers named and the exchange rows (code) apart (`tools/report_memory.py`);
modeled cycles by phase and by graph op; each graph op's cycles split into sync, exchange and
compute, with the format conversions between plans as bars of their own; exchange bytes each
tile sends. Each picture has its figures as a table under it. The numbers are those of
`tools/run_summary.py`, the same as `ipu-run --json` prints; `DIR/summary.json` holds them
with the report's own (memory per tile, peak live bytes, cycles per op and phase), which
`ipu-report-compare A B` reads (`tools/report_compare.py`).
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from device.target import IPU21, Target
from tools.pass_timing import PassTimer
from tools.report_memory import TileLiveness, op_phases, tile_liveness
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


def liveness_figure(live: TileLiveness, target: Target):
    """Bytes live on one tile over the program, stacked by its largest buffers (named)."""
    fig, ax = pyplot().subplots(figsize=(10, 5))
    positions = np.arange(live.positions)
    palette = pyplot().get_cmap("tab20").colors
    colours = [palette[i % len(palette)] for i in range(len(live.bands))]
    for i, label in enumerate(live.bands):  # the rest grey, the code dark: not buffers named
        if label.endswith("other buffers"):
            colours[i] = "#bbbbbb"
        elif label.startswith("exchange rows"):
            colours[i] = "#333333"
    ax.stackplot(positions, *[band / KIB for band in live.bands.values()],
                 labels=list(live.bands), colors=colours, step="post", linewidth=0)
    limit = target.sram_bytes / KIB
    top = min(limit * 1.1, max(live.peak_bytes / KIB * 1.4, 1.0))
    if top > limit:
        ax.axhline(limit, color="black", linestyle="--", linewidth=1)
        ax.text(live.positions - 1, limit, f" {limit:.0f} KiB SRAM", va="bottom", ha="right")
    else:
        ax.text(live.positions - 1, top, f"(SRAM: {limit:.0f} KiB, above) ", va="top",
                ha="right", fontsize="small", color="#555555")
    ax.axvline(live.peak_position, color="#c44e52", linewidth=1)
    ax.annotate(f"peak {live.peak_bytes / KIB:.1f} KiB at {live.peak_op}",
                (live.peak_position, live.peak_bytes / KIB), xytext=(6, 6),
                textcoords="offset points", color="#c44e52", fontsize="small")
    ax.set_ylim(0, top)
    ax.set_xlim(0, max(live.positions - 1, 1))
    ax.set_ylabel("KiB live")
    ax.set_xlabel("program position (ops of the tile program, in order)")
    ax.set_title(f"Memory on tile {live.tile} over the program, by buffer")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small")
    return fig


def op_phase_figure(split: dict[str, dict[str, int]]):
    """Per graph op, cycles as sync + exchange + compute; conversions are bars of their own."""
    names = list(split)[::-1]
    height = max(3.0, 0.28 * len(names) + 1.2)
    fig, ax = pyplot().subplots(figsize=(10, height))
    left = np.zeros(len(names))
    for phase, colour in (("sync", "#999999"), ("exchange", "#4c72b0"), ("compute", "#dd8452")):
        values = np.array([split[n][phase] for n in names], dtype=float)
        ax.barh(names, values, left=left, color=colour, label=phase, height=0.6)
        left += values
    for tick in ax.get_yticklabels():
        if tick.get_text().endswith("(conversion)"):
            tick.set_color("#8172b3")
    ax.set_xlabel("modeled cycles")
    ax.set_title("Cycles per graph op: sync, exchange, compute (conversions apart)")
    ax.legend(loc="lower right", fontsize="small")
    ax.tick_params(axis="y", labelsize="small")
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


def grid(header: list[str], rows: list[list[str]], numeric_from: int = 1) -> str:
    """A table with a header row; columns from `numeric_from` on are right-aligned."""
    def cell(i: int, value: str, tag: str) -> str:
        align = ' class="num"' if i >= numeric_from else ""
        return f"<{tag}{align}>{html.escape(value)}</{tag}>"

    head = "".join(cell(i, h, "th") for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell(i, v, "td") for i, v in enumerate(row)) + "</tr>"
                   for row in rows)
    return f'<table class="grid"><tr>{head}</tr>{body}</table>'


def liveness_table(live: TileLiveness) -> str:
    rows = [[b.name, str(b.kind), str(b.memory), f"{b.bytes / KIB:.1f}", f"{b.start}-{b.stop}",
             b.opened_by, b.closed_by]
            for b in live.buffers]
    return grid(["buffer", "kind", "memory", "KiB", "live (positions)", "from", "to"], rows,
                numeric_from=3)


def memory_table(usage: dict[str, np.ndarray]) -> str:
    tiles = len(next(iter(usage.values())))
    total = sum(usage.values(), np.zeros(tiles, np.int64))
    rows = [[label, f"{per_tile[0] / KIB:.1f}", f"{per_tile.max() / KIB:.1f}",
             str(int(per_tile.argmax()))] for label, per_tile in usage.items()]
    rows.append(["all (allocated, live or not)", f"{total[0] / KIB:.1f}",
                 f"{total.max() / KIB:.1f}", str(int(total.argmax()))])
    return grid(["buffer kind (memory class)", "KiB on tile 0", "largest KiB", "on tile"], rows)


def cycles_table(split: dict[str, dict[str, int]]) -> str:
    total = max(sum(sum(p.values()) for p in split.values()), 1)
    rows = [[name, str(p["sync"]), str(p["exchange"]), str(p["compute"]),
             str(sum(p.values())), f"{100 * sum(p.values()) / total:.1f}%"]
            for name, p in split.items()]
    return grid(["graph op", "sync", "exchange", "compute", "cycles", "share"], rows)


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
th { font-weight: normal; color: #555; } img { max-width: 100%; }
table.grid { margin: 0.5em 0 2em; font-size: 90%; }
table.grid th { border-bottom: 1px solid #aaa; } table.grid td { border-bottom: 1px solid #eee; }
.num { text-align: right; font-variant-numeric: tabular-nums; }"""


def write_report(directory: Path, facts: RunFacts, module: ModuleOp, timer: PassTimer,
                 target: Target = IPU21) -> Path:
    """Write the pictures, `trace.json` and `report.html` (returned) into `directory`;
    `module` is the compiled (tile-level, placed) module."""
    directory.mkdir(parents=True, exist_ok=True)
    summary = facts.summary(target)
    usage = memory_per_tile(module, facts.package)
    total = sum(usage.values(), np.zeros(facts.package.tiles, np.int64))
    lives = [tile_liveness(module, facts.package, 0, target=target)]
    busiest = int(total.argmax())
    if busiest != 0:
        lives.append(tile_liveness(module, facts.package, busiest, target=target))
    split = op_phases(facts.package, facts.cycles_by_step, target)
    sections = [("Memory per tile", saved(memory_figure(usage, target), directory / "memory.png"),
                 memory_table(usage))]
    for live in lives:
        sections.append((f"Memory on tile {live.tile} over the program",
                         saved(liveness_figure(live, target),
                               directory / f"liveness_tile{live.tile}.png"),
                         f"<p>Peak {live.peak_bytes / KIB:.1f} KiB at program position "
                         f"{live.peak_position} ({html.escape(live.peak_op)}). The buffers "
                         f"that hold the most of tile {live.tile} (bytes times positions live), "
                         "with the graph ops whose work opens and closes their lifetime:</p>"
                         + liveness_table(live)))
    sections += [
        ("Modeled cycles", saved(cycles_figure(summary["modeled_cycles"]),
                                 directory / "cycles.png"), ""),
        ("Cycles per graph op", saved(op_phase_figure(split), directory / "op_phases.png"),
         cycles_table(split)),
        ("Exchange", saved(exchange_figure(exchange_bytes_per_tile(facts.package)),
                           directory / "exchange.png"), ""),
    ]
    write_trace(directory / "trace.json", facts.package, facts.cycles_by_step, timer, target)
    images = "\n".join(f'<h2>{html.escape(title)}</h2>\n<p><img src="{p.name}" alt="{p.stem}">'
                       f"</p>\n{extra}" for title, p, extra in sections)
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
    figures = {**summary, "report": {
        "memory_per_tile": {label: per_tile.tolist() for label, per_tile in usage.items()},
        "peak_live_bytes": {str(live.tile): live.peak_bytes for live in lives},
        "op_phases": split,
        "pictures": [p.name for _, p, _ in sections]}}
    (directory / "summary.json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return path
