"""One self-contained HTML file: the verdict, the differences, the curves, the metrics.

No script and no external CSS or fonts: it must open offline, from an MLflow artifact or a CI
download, exactly as written. Every value from a record is escaped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..compare.report import MetricComparison, Report
from . import common
from .escape import html_text as escape
from .svg import chart

# Sized for MLflow's artifact viewer (about 870 px wide) and anything down to 800 px: no table
# wider than the page; a name breaks only after a dot or an underscore (``<wbr>``), never inside
# a word; why and source take a row of their own under each difference.
STYLE = """
body{font-family:system-ui,sans-serif;margin:1em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;width:100%}
td,th{border:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
td.why{border-top:none;color:#444;padding-bottom:.6em}
tr.change td:not(.why){border-bottom:none}
.source{font-size:.85em;color:#666;overflow-wrap:anywhere}
[class^=effect-]{white-space:nowrap}
th{background:#f3f3f3}
code{font-size:.9em;overflow-wrap:normal;word-break:normal}
.verdict{font-size:1.3em}
.same_results{color:#2e7d32}.explained,.nondeterministic,.unexplained{color:#c62828}
.effect-recipe{color:#8e24aa}.effect-randomness{color:#ef6c00}.effect-numerics{color:#00838f}
.effect-none{color:#888}
.equal-no{color:#c62828;font-weight:bold}
svg{max-width:100%;height:auto}
"""


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def code(text: str) -> str:
    return f"<code>{escape(text)}</code>"


def name(text: str) -> str:
    """A dotted field or metric name that may break after its dots and underscores only."""
    parts = re.split(r"(?<=[._])", text)
    return "<code>" + "<wbr>".join(escape(p) for p in parts) + "</code>"


def _source(text: str) -> str:
    """A rule's citation with its public pages as links (opened by the reader, never fetched)."""
    parts = text.split("; ")
    return "; ".join(
        f'<a href="{escape(p)}">{escape(p)}</a>' if p.startswith("https://") else escape(p)
        for p in parts
    )


def _has_history(metric: MetricComparison) -> bool:
    """A curve is worth drawing only where a run logged the metric at more than one step; a
    final value (``val_error``, ``steps``) is read better in the table than as a lone dot."""
    return max(len(metric.curve_a.steps), len(metric.curve_b.steps)) > 1


def _differences(report: Report, include_none: bool) -> list[str]:
    """The differences, most likely cause first: a row per field (its values and effect), and
    under it a row across the table with why and the sources, so no column is cut at 800 px."""
    shown = report.shown_differences(include_none)
    out = [f"<h2>{escape(common.differences_title(report))}</h2>"]
    if not shown:
        return [*out, "<p>No differences that can change results.</p>"]
    rows = []
    for rank, field, d in common.difference_rows(report, include_none):
        effect = f'<span class="effect-{escape(d.effect)}">{escape(d.effect)}</span>'
        values = f"{code(common.value_text(d.a))} → {code(common.value_text(d.b))}"
        rows.append(
            f'<tr class="change"><td>{rank}</td><td>{name(field)}</td><td>{values}</td>'
            f"<td>{effect}</td></tr>"
            f'<tr><td></td><td class="why" colspan="3">{escape(d.explanation)}'
            f'<div class="source">{_source(d.source)}</div></td></tr>'
        )
    head = "".join(f"<th>{h}</th>" for h in ("#", "field", "A → B", "effect"))
    return [*out, f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"]


def render(report: Report, include_none: bool = False) -> str:
    a, b = report.a.label, report.b.label
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>fingerprint diff: {escape(report.verdict)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f'<p class="verdict">Verdict: <strong class="{escape(report.verdict)}">'
        f"{escape(report.verdict)}</strong></p>",
        f"<p>{escape(common.verdict_sentence(report))}</p>",
        f"<p>A: {code(a)}<br>B: {code(b)}</p>",
        *_differences(report, include_none),
    ]
    hidden = common.hidden_line(report, include_none)
    if hidden:
        out.append(f"<p><em>{escape(hidden)}</em></p>")
    for metric in report.metrics:
        if _has_history(metric):
            out += [f"<h3>{escape(metric.name)}</h3>", chart(metric, a, b)]
    if report.metrics:
        out += [
            "<h2>Metrics</h2>",
            table(
                ("metric", "A", "B", "|Δ|", "rel", "equal", "first divergence", "noise"),
                [
                    (
                        name(m.name),
                        common.number(m.a),
                        common.number(m.b),
                        common.number(m.abs_diff),
                        common.percent(m.rel_diff),
                        escape(common.equal_text(m)),
                        escape(common.divergence_text(m)),
                        escape(common.spread_text(m)),
                    )
                    for m in report.metrics
                ],
            ),
        ]
    located = common.located(report)
    if located:
        out.append("<h2>Where the curves part</h2>")
    for metric in located:
        out += [
            f"<p>{escape(common.where_line(metric))}</p>",
            table(
                common.WHERE_HEADER,
                [
                    (
                        escape(p),
                        name(t),
                        code(k),
                        f'<span class="equal-{escape(e)}">{escape(e)}</span>',
                        escape(r),
                    )
                    for p, t, k, e, r in common.around_cells(metric)
                ],
            ),
        ]
    if common.show_enablers(report, include_none):
        out.append("<h2>Enablers (present in both runs)</h2><ul>")
        out += [
            f"<li>{name(e.field)}: {escape(e.explanation)} Fix: {code(e.fix)}</li>"
            for e in report.enablers
        ]
        out.append("</ul>")
    if report.notes:
        out.append("<ul>" + "".join(f"<li>{escape(n)}</li>" for n in report.notes) + "</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
