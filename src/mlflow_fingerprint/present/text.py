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
from .escape import one_line, terminal

DIFF_HEADER = ("#", "field", "A", "B", "effect", "why")
METRIC_HEADER = ("metric", "A", "B", "|Δ|", "rel", "equal", "first divergence", "noise")


def _rows(
    report: Report, include_none: bool
) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    diffs = [
        (
            rank,
            one_line(field),
            one_line(common.value_text(d.a, 30)),
            one_line(common.value_text(d.b, 30)),
            d.effect,
            one_line(d.explanation),
        )
        for rank, field, d in common.difference_rows(report, include_none)
    ]
    metrics = [tuple(map(one_line, common.metric_cells(m))) for m in report.metrics]
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
        rows = [tuple(map(one_line, row)) for row in common.around_cells(metric)]
        out += ["", f"Where {one_line(common.where_line(metric))}"]
        out += ["  " + line for line in aligned(common.WHERE_HEADER, rows)]
    return out


def _lines_after_tables(report: Report, include_none: bool) -> list[str]:
    out: list[str] = _where_lines(report)
    if common.show_enablers(report, include_none):
        out += ["", "Enablers (present in both runs):"]
        out += [one_line(f"  - {e.field}: {e.explanation} Fix: {e.fix}") for e in report.enablers]
    if report.notes:
        out += ["", *(f"note: {one_line(n)}" for n in report.notes)]
    return out


def render_plain(report: Report, include_none: bool = False) -> str:
    diffs, metrics = _rows(report, include_none)
    out = [
        f"verdict: {report.verdict}  ({terminal(common.verdict_sentence(report))})",
        f"A: {one_line(report.a.label)}",
        f"B: {one_line(report.b.label)}",
    ]
    if diffs:
        out += ["", f"{common.differences_title(report)}:", *aligned(DIFF_HEADER, diffs)]
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
    from rich.markup import escape
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
    sentence = escape(terminal(common.verdict_sentence(report)))
    console.print(f"[{verdict_style}]verdict: {report.verdict}[/]  {sentence}", highlight=False)
    console.print(
        f"A: {one_line(report.a.label)}\nB: {one_line(report.b.label)}",
        highlight=False,
        markup=False,
    )
    diffs, metrics = _rows(report, include_none)
    if diffs:
        table = Table(title=common.differences_title(report), title_justify="left")
        for name in DIFF_HEADER:
            table.add_column(name, overflow="fold")
        for row in diffs:
            cells = [escape(c) for c in row]
            table.add_row(*cells[:4], f"[{colours[row[4]]}]{cells[4]}[/]", cells[5])
        console.print(table)
    else:
        console.print("No differences that can change results.")
    hidden = common.hidden_line(report, include_none)
    if hidden:
        console.print(f"[dim]{escape(hidden)}[/]", highlight=False)
    if metrics:
        table = Table(title="Metrics", title_justify="left")
        for name in METRIC_HEADER:
            table.add_column(name, overflow="fold")
        for row in metrics:
            table.add_row(*map(escape, row))
        console.print(table)
    for line in _lines_after_tables(report, include_none):
        console.print(line, highlight=False, markup=False)
    return buffer.getvalue()
