"""`ipu-report-compare A B`: two `ipu-run --report` directories side by side, in one page.

Reads `A/summary.json` and `B/summary.json` (written with each report) and writes one HTML
page (`-o`, default `compare.html`): the check, errors, modeled cycles in total, by phase and
by graph op (with B's change against A), memory (allocated per tile, peak live), tiles used
and compile time per pass, then each picture of A next to B's. A report directory without
`summary.json` (an older report, or not a report) is a usage error.
"""

from __future__ import annotations

import html
import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from tools.usage import EXIT_USAGE
from tools.version import version_callback

KIB = 1024


def load(directory: Path) -> dict:
    path = directory / "summary.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise typer.BadParameter(f"{path}: not a report's summary ({error}); write the report "
                                 "again with ipu-run --report DIR") from None


def change(a: float, b: float) -> str:
    if a == b:
        return "="
    if a == 0:
        return "new"
    return f"{100 * (b - a) / a:+.1f}%"


def row(name: str, a: str, b: str, delta: str = "") -> str:
    cells = "".join(f'<td class="num">{html.escape(v)}</td>' for v in (a, b, delta))
    return f"<tr><th>{html.escape(name)}</th>{cells}</tr>"


def number_rows(pairs: list[tuple[str, float | None, float | None]], unit: str = "") -> list[str]:
    rows = []
    for name, a, b in pairs:
        shown_a = "-" if a is None else f"{a:g}{unit}"
        shown_b = "-" if b is None else f"{b:g}{unit}"
        rows.append(row(name, shown_a, shown_b,
                        "" if a is None or b is None else change(a, b)))
    return rows


def comparison_rows(a: dict, b: dict) -> list[str]:
    ca, cb = a["modeled_cycles"], b["modeled_cycles"]
    rows = [row("file", a["file"], b["file"]), row("check", a["check"], b["check"])]
    rows += number_rows([("max abs error", a["max_abs_error"], b["max_abs_error"]),
                         ("max rel error", a["max_rel_error"], b["max_rel_error"]),
                         ("tiles used", a["tiles_used"], b["tiles_used"]),
                         ("modeled cycles", ca["total"], cb["total"])])
    rows += number_rows([(f"  {phase}", ca["by_phase"].get(phase), cb["by_phase"].get(phase))
                         for phase in ("sync", "exchange", "compute")])
    ops = list(dict.fromkeys([*ca["by_graph_op"], *cb["by_graph_op"]]))
    rows += number_rows([(f"  {op}", ca["by_graph_op"].get(op), cb["by_graph_op"].get(op))
                         for op in ops])
    ra, rb = a.get("report", {}), b.get("report", {})
    for label in dict.fromkeys([*ra.get("memory_per_tile", {}), *rb.get("memory_per_tile", {})]):
        peak_a = max(ra.get("memory_per_tile", {}).get(label, [0]), default=0) / KIB
        peak_b = max(rb.get("memory_per_tile", {}).get(label, [0]), default=0) / KIB
        rows += number_rows([(f"memory {label}, largest tile (KiB)", round(peak_a, 1),
                              round(peak_b, 1))])
    live_a, live_b = ra.get("peak_live_bytes", {}), rb.get("peak_live_bytes", {})
    if "0" in live_a or "0" in live_b:
        rows += number_rows([("peak live on tile 0 (KiB)",
                              round(live_a["0"] / KIB, 1) if "0" in live_a else None,
                              round(live_b["0"] / KIB, 1) if "0" in live_b else None)])
    sa, sb = a["compile_seconds"], b["compile_seconds"]
    rows += number_rows([("compile seconds", round(sa["total"], 3), round(sb["total"], 3))])
    passes = list(dict.fromkeys([*sa["per_pass"], *sb["per_pass"]]))
    rows += number_rows([(f"  {p}", round(sa["per_pass"][p], 3) if p in sa["per_pass"] else None,
                          round(sb["per_pass"][p], 3) if p in sb["per_pass"] else None)
                         for p in passes])
    return rows


def compare_page(a_dir: Path, b_dir: Path, out: Path) -> str:
    a, b = load(a_dir), load(b_dir)
    pictures = list(dict.fromkeys([*a.get("report", {}).get("pictures", []),
                                   *b.get("report", {}).get("pictures", [])]))

    def image(directory: Path, name: str) -> str:
        if not (directory / name).exists():
            return "<td>(none)</td>"
        source = os.path.relpath(directory / name, out.parent)
        return f'<td><img src="{html.escape(source)}" alt="{html.escape(name)}"></td>'

    images = "".join(f"<tr>{image(a_dir, p)}{image(b_dir, p)}</tr>" for p in pictures)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ipu-run reports: {html.escape(str(a_dir))} vs
{html.escape(str(b_dir))}</title>
<style>body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
th, td {{ text-align: left; padding: 2px 12px; border-bottom: 1px solid #eee; }}
th {{ font-weight: normal; color: #555; }} .num {{ text-align: right; }}
td img {{ width: 100%; }} table.pictures td {{ width: 50%; vertical-align: top; }}</style>
</head><body>
<h1>A: {html.escape(str(a_dir))} &nbsp; B: {html.escape(str(b_dir))}</h1>
<table><tr><th></th><th class="num">A</th><th class="num">B</th><th class="num">B vs A</th></tr>
{"".join(comparison_rows(a, b))}</table>
<h2>Pictures (A left, B right)</h2>
<table class="pictures">{images}</table>
</body></html>
"""


app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.command()
def compare(
    a: Annotated[Path, typer.Argument(help="report directory A (ipu-run --report A)")],
    b: Annotated[Path, typer.Argument(help="report directory B")],
    output: Annotated[Path, typer.Option("-o", "--output", help="the page to write")] = Path(
        "compare.html"),
    version: Annotated[bool, typer.Option(
        "--version", callback=version_callback("ipu-report-compare"), is_eager=True,
        help="print the version and exit")] = False,
) -> None:
    """Two ipu-run reports side by side: cycles, memory, compile time, pictures."""
    try:
        page = compare_page(a, b, output)
        output.write_text(page, encoding="utf-8")
    except typer.BadParameter as error:
        print(f"ipu-report-compare: error: {error}", file=sys.stderr)
        raise typer.Exit(EXIT_USAGE) from None
    except OSError as error:
        print(f"ipu-report-compare: error: {error}", file=sys.stderr)
        raise typer.Exit(EXIT_USAGE) from None
    print(output)


def main() -> None:
    app(prog_name="ipu-report-compare")


if __name__ == "__main__":
    main()
