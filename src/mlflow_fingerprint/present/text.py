"""The terminal report. By default one screen (``render_brief``: at most ``WIDTH`` columns, about
25 lines for a one-change pair): the verdict, each change with what it set folded under it and one
line of why, the metrics that differ with their first divergence and noise band, the notes. With
``--all`` the full tables: rich tables on a terminal, plain aligned columns when piped or saved.

rich is imported only when a terminal will show its colours, so ``fingerprint diff a.json b.json
| grep`` stays light.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Sequence

from ..compare.report import Difference, Report
from ..model.vocabulary import Effect
from ..wrap import WIDTH, shorten, wrap
from . import common
from .escape import one_line, terminal

BRIEF_VALUE_CHARS = 48
BRIEF_WHYS = 2  # explanations per change shown before --all
BRIEF_CHANGES = 5  # changes shown before --all, most likely first

DIFF_HEADER = ("#", "field", "A", "B", "effect", "why")
# --all's columns whose words may fold where the terminal is too narrow for every column whole:
# values (JSON, shortened) and prose, never names or numbers.
NAME_COLUMNS = frozenset({"#", "field", "metric", "effect"})
VALUE_COLUMNS = frozenset({"A", "B"})
VALUE_CHARS = 12
PROSE_WORD = 12
BORDERS = 3  # what a rich column takes beside its text: a space each side, and a separator
METRIC_HEADER = ("metric", "A", "B", "|Δ|", "rel", "equal", "first divergence", "noise")


# A row of the differences table: rank, field, A, B, effect (which picks the colour), explanation.
DiffRow = tuple[str, str, str, str, Effect, str]


def _rows(report: Report, include_none: bool) -> tuple[list[DiffRow], list[tuple[str, ...]]]:
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


def _pair(d: Difference) -> str:
    a = one_line(common.value_text(d.a, BRIEF_VALUE_CHARS))
    b = one_line(common.value_text(d.b, BRIEF_VALUE_CHARS))
    return f"{a} -> {b}"


def _folded(consequences: Sequence[Difference]) -> list[str]:
    """One line per parent: fields of one parent are folded
    (``data.loaders.0.generator: initial_seed 0 -> null, present true -> false``)."""
    groups: dict[str, list[Difference]] = {}
    for c in consequences:
        groups.setdefault(c.field.rsplit(".", 1)[0] if "." in c.field else c.field, []).append(c)
    out = []
    for parent, members in groups.items():
        if len(members) == 1:
            out.append(f"{one_line(members[0].field)}: {_pair(members[0])}")
        else:
            parts = ", ".join(f"{one_line(m.field[len(parent) + 1 :])} {_pair(m)}" for m in members)
            out.append(f"{one_line(parent)}: {parts}")
    return out


def _change_lines(d: Difference, width: int) -> list[str]:
    """One change: its field and values, what it set (folded), and why: a line for each of its
    first ``BRIEF_WHYS`` explanations (``--all`` has every one, whole)."""
    lines = wrap(f"{d.field}: {_pair(d)}  ({d.effect})", width, "     ", f"{d.rank:<3}")
    shown = [c for c in d.consequences if c.effect != "none"]
    for line in _folded(shown):
        lines += wrap(line, width, "       ", "   ↳ ")
    own = [d.explanation] if common.says_more_than_its_consequences(d) or not shown else []
    whys = list(dict.fromkeys([*own, *(c.explanation for c in shown)]))
    for why in whys[:BRIEF_WHYS]:
        lines.append(shorten("     " + one_line(why), width))
    return lines


def _brief_metrics(report: Report, width: int) -> list[str]:
    """The metrics that differ (values, relative gap, first divergence), then their noise band
    against replicates of the same recipe, one line per wording; equal metrics by name."""
    differ = [m for m in report.metrics if not m.equal]
    equal = [one_line(m.name) for m in report.metrics if m.equal]
    out: list[str] = []
    if differ:
        rows = [
            (
                one_line(m.name),
                common.number(m.a),
                common.number(m.b),
                common.percent(m.rel_diff),
                common.divergence_text(m),
            )
            for m in differ
        ]
        header = ("metric", "A", "B", "rel", "first divergence")
        title = "Metrics that differ" + (f" (equal: {', '.join(equal)})" if equal else "")
        out += ["", *wrap(title + ":", width, "  ")]
        for line in aligned(header, rows):
            out += wrap(line, width, " " * 6)
        bands: dict[str, list[str]] = {}
        for m in differ:
            bands.setdefault(common.spread_text(m) or "no band looked for", []).append(m.name)
        for band, names in bands.items():
            out += wrap(f"{', '.join(map(one_line, names))}: {band}", width, "  ", "noise band: ")
    elif equal:
        out += ["", *wrap(", ".join(equal), width, "  ", "Equal metrics: ")]
    for metric in common.located(report):
        out += wrap(one_line(common.where_line(metric)), width, "  ", "Where ")
    return out


def render_brief(report: Report, width: int = WIDTH, rich: bool = False) -> str:
    """The one-screen report (see the module's docstring); ``--all`` shows everything. ``rich``
    colours the verdict (a terminal)."""
    out = wrap(
        terminal(common.verdict_sentence(report)), width, "  ", f"verdict: {report.verdict}  "
    )
    if rich:
        colour = "32" if report.verdict == "same_results" else "1;31"
        out[0] = out[0].replace(report.verdict, f"\x1b[{colour}m{report.verdict}\x1b[0m", 1)
    ab = f"A: {one_line(report.a.label)}    B: {one_line(report.b.label)}"
    if len(ab) <= width:
        out.append(ab)
    else:
        out += [shorten(f"A: {one_line(report.a.label)}", width)]
        out += [shorten(f"B: {one_line(report.b.label)}", width)]
    changes = report.effective_differences
    if changes:
        out += [f"{common.differences_title(report)}:"]
        for d in changes[:BRIEF_CHANGES]:
            out += _change_lines(d, width)
    else:
        out += ["No differences that can change results."]
    if common.show_enablers(report, False):
        out += ["", "Enablers (present in both runs):"]
        out += [
            shorten(f"  - {e.field}: {one_line(e.explanation)}", width) for e in report.enablers
        ]
    out += _brief_metrics(report, width)
    if report.notes:
        out.append("")
        for note in report.notes:  # whole: a note may be the hedge the verdict rests on
            out += wrap(one_line(note), width, "  ", "note: ")
    more = max(0, len(changes) - BRIEF_CHANGES)
    hidden = len(report.differences) - len(changes)
    parts = [f"{more} more that can change results"] if more else []
    parts += [f"{common.plural(hidden, 'difference')} that change nothing"] if hidden else []
    head = f"{' and '.join(parts)} hidden;" if parts else ""
    tail = "--all shows them, the full tables and every explanation."
    out += [f"{head} {tail}".lstrip()] if len(head) + len(tail) < width else [head, tail]
    return "\n".join(out) + "\n"


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
        out += ["No differences that can change results."]
    hidden = common.hidden_line(report, include_none)
    if hidden:
        out.append(hidden)
    if metrics:
        out += ["", "Metrics:", *aligned(METRIC_HEADER, metrics)]
    out += _lines_after_tables(report, include_none)
    return "\n".join(out) + "\n"


def _widths(header: Sequence[str], rows: Sequence[Sequence[str]], total: int) -> list[int]:
    """--all's column widths on a terminal of ``total`` columns. A name (the field, the metric)
    keeps its whole cell on one line, a number or a word is never folded (``program.options.n``
    / ``um-workers`` read as two words); a value is at most ``VALUE_CHARS`` wide (it folds, as
    shortened JSON); the prose column (why, noise) takes what is left, at least ``PROSE_WORD``."""
    widths = []
    for i, name in enumerate(header):
        cells = [name, *(r[i] for r in rows)]
        if name in NAME_COLUMNS:
            widths.append(max(map(len, cells)))
        elif name in VALUE_COLUMNS and header is DIFF_HEADER:
            widths.append(min(VALUE_CHARS, max(map(len, cells))))
        else:
            widths.append(max((len(w) for c in cells for w in c.split()), default=1))
    prose = len(header) - 1  # the last column: why, noise
    room = total - (sum(widths) - widths[prose]) - BORDERS * len(header) - 1
    widths[prose] = max(PROSE_WORD, min(widths[prose], room) if room < widths[prose] else room)
    return widths


def render_rich(report: Report, include_none: bool = False) -> str:
    """The same content as ``render_plain``, as ANSI-coloured rich tables."""
    from rich.box import SIMPLE_HEAD
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
        table = Table(title=common.differences_title(report), title_justify="left", box=SIMPLE_HEAD)
        for name, width in zip(
            DIFF_HEADER, _widths(DIFF_HEADER, diffs, console.width), strict=True
        ):
            table.add_column(name, width=width, overflow="fold")
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
        table = Table(title="Metrics", title_justify="left", box=SIMPLE_HEAD)
        widths = _widths(METRIC_HEADER, metrics, console.width)
        for name, width in zip(METRIC_HEADER, widths, strict=True):
            table.add_column(name, width=width, overflow="fold")
        for metric_row in metrics:
            table.add_row(*map(escape, metric_row))
        console.print(table)
    for line in _lines_after_tables(report, include_none):
        console.print(line, highlight=False, markup=False)
    return buffer.getvalue()
