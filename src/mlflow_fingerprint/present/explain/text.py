"""The terminal report of ``explain``: one screen, most telling first.

Plain aligned columns; on a terminal, rich colours the verdicts (and nothing else changes), so
what a person sees and what a pipe gets say the same.
"""

from __future__ import annotations

import io
import shutil
import textwrap

from ...explain.result import Explanation
from ...wrap import columns, fit
from ...wrap import wrap as fitted
from ..escape import terminal
from ..text import aligned
from . import words

MAX_FACTORS = 8
MAX_OUTLIERS = 3
MAX_NOTES = 3
HEADER = ("#", "factor", "share", "95% interval", "verdict", "mean per value")
# The factor column's width: the table's columns before "mean per value" then take 90 of a
# 100-column terminal, and the means wrap beneath their own column.
FACTOR_CHARS = 44
MEANS_INDENT = " " * 5  # where a row's wrapped means go on


def _factor_rows(report: Explanation) -> list[tuple[str, ...]]:
    shown = [f for f in report.factors if f.verdict != "ruled_out"][:MAX_FACTORS]
    return [
        (
            str(i),
            words.short(f.label + (" *" if f.confounded else ""), FACTOR_CHARS),
            words.pct(f.share),
            words.interval(f),
            f.verdict,
            words.levels_text(f.by_value),
        )
        for i, f in enumerate(shown, start=1)
    ]


WIDTH = 100  # prose wraps here; table rows run free, as diff's do


def wrap(text: str, first: str = "", rest: str = "") -> list[str]:
    return textwrap.wrap(
        text, WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
    )


def table(rows: list[tuple[str, ...]], width: int) -> list[str]:
    """The factors aligned; a row wider than ``width`` wraps its last column (the means per
    value, which run free) onto indented lines below, so the columns before it stay aligned."""
    out: list[str] = []
    table_lines = aligned(HEADER, rows)
    start = table_lines[0].index(HEADER[-1])
    for line in table_lines:
        if len(line) <= width or start >= width - 8:
            out.append(line)  # fits, or too narrow a terminal to hang anything: fit() wraps it
            continue
        out += fitted(line[start:], width, MEANS_INDENT, line[:start])
    return out


def lines(report: Explanation) -> list[str]:
    one = words.agreed(report)
    if one is not None:
        return [one]
    out = [words.title(report), *wrap(words.headline(report)), "", *wrap(words.noise_line(report))]
    rows = _factor_rows(report)
    if rows:
        out += ["", "Fields that vary, by their share of the variance:", *table(rows, columns())]
    hidden = sum(1 for f in report.factors if f.verdict != "ruled_out") - len(rows)
    if hidden > 0:
        out.append(f"  … and {hidden} more (--format json lists them all)")
    if report.ruled_out:
        shown = ", ".join(report.ruled_out[:6]) + (" …" if len(report.ruled_out) > 6 else "")
        out.append(
            f"Ruled out (within the noise, at most {words.pct(0.05)} of the variance): {shown}"
        )
    confounded = [f for f in report.factors if f.confounded]
    if confounded:
        out += ["", "* Moved together in these runs:"]
        for f in confounded:
            out += wrap(f"{words.confounded_line(report, f)}.", "  - ", "    ")
            sep = words.separation(report, f)
            if sep is not None:
                out += wrap(f"To separate them: {sep.runs_needed}.", "    ", "    ")
    if report.outliers:
        out += ["", "Outliers (far from their replicates):"]
        for o in report.outliers[:MAX_OUTLIERS]:
            out.append(f"  - {o.run_id} ({o.group}, z {o.z:+.1f}, {words.num(o.value)}): {o.diff}")
    tail = [
        part
        for line in (words.missing_line(report), words.left_out_line(report))
        if line
        for part in wrap(line, "", "  ")
    ]
    notes = [part for n in report.notes[:MAX_NOTES] for part in wrap(n, "note: ", "      ")]
    if len(report.notes) > MAX_NOTES:
        notes.append(f"note: {len(report.notes) - MAX_NOTES} more in --format json")
    if tail or notes:
        out += ["", *tail, *notes]
    return out


def render_plain(report: Explanation) -> str:
    return fit("\n".join(map(terminal, lines(report)))) + "\n"


COLOURS = {"important": "bold green", "undecided": "yellow", "ruled_out": "dim"}


def render_rich(report: Explanation) -> str:
    """The same lines, with the verdict words coloured."""
    from rich.console import Console
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=shutil.get_terminal_size().columns)
    for line in lines(report):
        text = Text(terminal(line))  # a Text is never read as markup
        for word, style in COLOURS.items():
            text.highlight_words([f" {word} "], style)
        console.print(text, highlight=False, soft_wrap=True)
    return buffer.getvalue()
