"""One self-contained HTML file of an explain report: the split of the variance as one stacked
chart, strip plots of the metric per value of the top fields, and the tables.

No script and no external CSS or fonts: it must open offline, from an MLflow artifact or a CI
download, exactly as written. Every value from a record is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...explain.result import Explanation, Factor
from ..escape import html_text as escape
from ..html import STYLE as DIFF_STYLE
from ..html import code, table
from . import words
from .charts import stacked, strip

MAX_STRIPS = 4
STYLE = (
    DIFF_STYLE
    + """
.important{color:#2e7d32;font-weight:bold}.undecided{color:#b26a00}.ruled_out{color:#888}
.headline{font-size:1.15em}
"""
)


def _strip_factors(report: Explanation) -> list[Factor]:
    """The fields whose values the strip plots show: the important ones, else the undecided."""
    mains = [f for f in report.factors if f.kind == "main"]
    chosen = [f for f in mains if f.verdict == "important"] or [
        f for f in mains if f.verdict == "undecided"
    ]
    return chosen[:MAX_STRIPS]


def _fields(f: Factor) -> str:
    """A main effect's fields (the first three), an interaction's name."""
    if f.kind == "interaction":
        return code(f.label)
    shown = " + ".join(code(x) for x in f.fields[:3])
    return shown + (f" (+{len(f.fields) - 3})" if len(f.fields) > 3 else "")


def _rows(factors: Sequence[Factor]) -> list[tuple[str, ...]]:
    return [
        (
            _fields(f) + (" <em>confounded</em>" if f.confounded else ""),
            words.pct(f.share),
            words.interval(f),
            f'<span class="{escape(f.verdict)}">{escape(f.verdict)}</span>',
            escape(f.effect),
            escape(words.levels_text(f.by_value, limit=6, width=40)),
        )
        for f in factors
    ]


def render(report: Explanation) -> str:
    one = words.agreed(report)
    if one is not None:
        return f'<!DOCTYPE html>\n<html lang="en"><body><p>{escape(one)}</p></body></html>\n'
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(words.title(report))}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{escape(words.title(report))}</h1>",
        f'<p class="headline">{escape(words.headline(report))}</p>',
        f"<p>{escape(words.noise_line(report))}</p>",
        "<h2>Split of the variance</h2>",
        stacked(words.segments(report)),
    ]
    strips = _strip_factors(report)
    if strips:
        values = [v for f in strips for level in f.by_value for v in level.values]
        low, high = min(values), max(values)
        out.append(f"<h2>{escape(report.metric)} per value</h2>")
        for i, f in enumerate(strips):
            out += [f"<h3>{_fields(f)}</h3>", strip(f, low, high, i)]
    out += [
        "<h2>Fields that vary</h2>",
        table(
            ("factor", "share", "95% interval", "verdict", "effect", "mean per value"),
            _rows(report.factors),
        ),
    ]
    confounded = [f for f in report.factors if f.confounded]
    if confounded:
        out.append("<h2>Moved together</h2><ul>")
        for f in confounded:
            sep = words.separation(report, f)
            how = f" To separate them: {escape(sep.runs_needed)}." if sep else ""
            out.append(f"<li>{escape(words.confounded_line(report, f))}.{how}</li>")
        out.append("</ul>")
    if report.outliers:
        out += [
            "<h2>Outliers</h2>",
            table(
                ("run", "group", "z", report.metric, "what differs"),
                [
                    (
                        code(o.run_id),
                        escape(o.group),
                        f"{o.z:+.1f}",
                        words.num(o.value),
                        code(o.diff),
                    )
                    for o in report.outliers
                ],
            ),
        ]
    tail = [t for t in (words.missing_line(report), words.left_out_line(report)) if t]
    items = [*tail, *report.notes]
    if items:
        out.append("<ul>" + "".join(f"<li>{escape(t)}</li>" for t in items) + "</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
