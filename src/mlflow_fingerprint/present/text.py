"""The terminal report: rich tables on a terminal, plain aligned columns when piped or saved.

rich is imported only when a terminal will show its colours, so ``fingerprint diff a.json b.json
| grep`` stays light.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Sequence

from ..compare.report import Report
from ..model.vocabulary import Effect
from . import common

DIFF_HEADER = ("#", "field", "A", "B", "effect", "why")
METRIC_HEADER = ("metric", "A", "B", "|Δ|", "rel", "equal", "first divergence", "noise")


def _rows(
    report: Report, include_none: bool
) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    diffs = [
        (
            str(d.rank),
            d.field,
            common.value_text(d.a, 30),
            common.value_text(d.b, 30),
            d.effect,
            d.explanation,
        )
        for d in report.shown_differences(include_none)
    ]
    metrics = [common.metric_cells(m) for m in report.metrics]
    return diffs, metrics


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to width; the last column runs free so long explanations stay whole."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]

    def line(cells: Sequence[str]) -> str:
        padded = [c.ljust(w) for c, w in zip(cells, widths, strict=False)]
        return "  ".join([*padded, cells[-1]]).rstrip()

    return [line(header), *(line(r) for r in rows)]


def _where_lines(report: Report) -> list[str]:
    """Where inside a step each parting curve starts (runs that ``mfp.watch`` their model)."""
    out: list[str] = []
    for metric in common.located(report):
        out += ["", f"Where {common.where_line(metric)}"]
        out += ["  " + line for line in aligned(common.WHERE_HEADER, common.around_cells(metric))]
    return out


def _lines_after_tables(report: Report, include_none: bool) -> list[str]:
    out: list[str] = _where_lines(report)
    if common.show_enablers(report, include_none):
        out += ["", "Enablers (present in both runs):"]
        out += [f"  - {e.field}: {e.explanation} Fix: {e.fix}" for e in report.enablers]
    if report.notes:
        out += ["", *(f"note: {n}" for n in report.notes)]
    return out


def render_plain(report: Report, include_none: bool = False) -> str:
    diffs, metrics = _rows(report, include_none)
    out = [
        f"verdict: {report.verdict}  ({common.verdict_sentence(report)})",
        f"A: {report.a.label}",
        f"B: {report.b.label}",
    ]
    if diffs:
        out += ["", "Differences, most likely cause first:", *aligned(DIFF_HEADER, diffs)]
    else:
        out += ["", "No differences that can change results."]
    hidden = common.hidden_line(report, include_none)
    if hidden:
        out.append(hidden)
    if metrics:
        out += ["", "Metrics:", *aligned(METRIC_HEADER, metrics)]
    out += _lines_after_tables(report, include_none)
    return "\n".join(out) + "\n"


def render_rich(report: Report, include_none: bool = False) -> str:
    """The same content as ``render_plain``, as ANSI-coloured rich tables."""
    from rich.console import Console
    from rich.table import Table

    colours: dict[Effect, str] = {
        "recipe": "magenta",
        "randomness": "yellow",
        "numerics": "cyan",
        "none": "dim",
    }
    verdict_style = "green" if report.verdict == "same_results" else "bold red"
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=shutil.get_terminal_size().columns)
    console.print(
        f"[{verdict_style}]verdict: {report.verdict}[/]  {common.verdict_sentence(report)}",
        highlight=False,
    )
    console.print(f"A: {report.a.label}\nB: {report.b.label}", highlight=False)
    diffs, metrics = _rows(report, include_none)
    if diffs:
        table = Table(title="Differences, most likely cause first", title_justify="left")
        for name in DIFF_HEADER:
            table.add_column(name, overflow="fold")
        for row in diffs:
            table.add_row(*row[:4], f"[{colours[row[4]]}]{row[4]}[/]", row[5])
        console.print(table)
    else:
        console.print("No differences that can change results.")
    hidden = common.hidden_line(report, include_none)
    if hidden:
        console.print(f"[dim]{hidden}[/]", highlight=False)
    if metrics:
        table = Table(title="Metrics", title_justify="left")
        for name in METRIC_HEADER:
            table.add_column(name, overflow="fold")
        for row in metrics:
            table.add_row(*row)
        console.print(table)
    for line in _lines_after_tables(report, include_none):
        console.print(line, highlight=False, markup=False)
    return buffer.getvalue()
