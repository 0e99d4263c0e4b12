"""GitHub-flavoured Markdown, for a pull-request comment or a CI job summary."""

from __future__ import annotations

from collections.abc import Sequence

from ..compare.report import Report
from . import common
from .escape import markdown_code as code
from .escape import markdown_text as cell


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def render(report: Report, include_none: bool = False) -> str:
    out = [
        f"### fingerprint diff: **{report.verdict}**",
        "",
        cell(common.verdict_sentence(report)),
        "",
        f"- A: {code(report.a.label)}",
        f"- B: {code(report.b.label)}",
        "",
    ]
    shown = report.shown_differences(include_none)
    if shown:
        out += table(
            ("#", "field", "A", "B", "effect", "why"),
            [
                (
                    rank,
                    code(field),
                    code(common.value_text(d.a)),
                    code(common.value_text(d.b)),
                    cell(d.effect),
                    cell(d.explanation),
                )
                for rank, field, d in common.difference_rows(report, include_none)
            ],
        )
    else:
        out.append("No differences that can change results.")
    hidden = common.hidden_line(report, include_none)
    if hidden:
        out += ["", f"_{hidden}_"]
    if report.metrics:
        out += [
            "",
            *table(
                ("metric", "A", "B", "\\|Δ\\|", "rel", "equal", "first divergence", "noise"),
                [
                    (code(name), *middle, cell(noise))
                    for name, *middle, noise in map(common.metric_cells, report.metrics)
                ],
            ),
        ]
    for metric in common.located(report):
        out += ["", f"**Where** {cell(common.where_line(metric))}", ""]
        out += table(
            common.WHERE_HEADER,
            [(cell(p), code(t), code(k), e, r) for p, t, k, e, r in common.around_cells(metric)],
        )
    if common.show_enablers(report, include_none):
        out += ["", "**Enablers** (present in both runs):", ""]
        out += [
            f"- {code(e.field)}: {cell(e.explanation)} Fix: {code(e.fix)}" for e in report.enablers
        ]
    if report.notes:
        out += ["", *(f"> {cell(n)}" for n in report.notes)]
    return "\n".join(out) + "\n"
