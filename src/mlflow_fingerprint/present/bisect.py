"""A bisect's result as text, JSON, markdown or HTML: the verdict, the proven cause(s), what the
reruns ruled out, what could not be set here, and every rerun with the curve it followed."""

from __future__ import annotations

import json
from typing import Any

from ..model.vocabulary import OutputFormat
from ..prove.results import BisectResult, Cause, Rerun
from ..wrap import columns, wrap
from .escape import html_text, markdown_code, markdown_text, one_line

HEADLINES = {
    "proven": "proven: {causes} turns A's curve into B's",
    "not_settable": "no cause proven: what differs cannot be set by a rerun here",
    "nondeterministic": "nondeterministic: A does not reproduce itself here",
    "not_reproducible": "no cause proven: no settable value of B turns A's curve into B's",
}
FOLLOWED = {"a": "A", "b": "B", "neither": "neither"}


def _value(value: Any) -> str:
    return "absent" if value is None else str(value)


def headline(report: BisectResult) -> str:
    causes = ", ".join(f"{c.field} ({_value(c.a)} -> {_value(c.b)})" for c in report.causes)
    line = HEADLINES[report.verdict].format(causes=causes)
    if report.verdict == "nondeterministic" and report.causes:
        c = report.causes[0]
        line += f"; with {c.field} switched ({_value(c.b)}) reruns agree"
    return line


def _cause_line(c: Cause) -> str:
    line = f"{c.field}: {_value(c.a)} -> {_value(c.b)} ({c.effect})"
    return line + (f", which set {', '.join(c.sets)}" if c.sets else "")


def _rerun_row(i: int, r: Rerun) -> tuple[str, str, str, str, str]:
    overrides = ", ".join(f"{k}={_value(v)}" for k, v in r.overrides.items()) or "(A as recorded)"
    parted = "-" if r.first_divergence_step is None else str(r.first_divergence_step)
    stopped = "-" if r.stopped_at is None else str(r.stopped_at)
    took = "" if r.wall_s is None else f", {r.wall_s:.1f} s"
    run = f"{r.run_id} (stopped at {stopped}{took})"
    return str(i), overrides, FOLLOWED[r.matches], parted, run


def _sections(report: BisectResult) -> list[tuple[str, list[str]]]:
    """Ruled out and cannot be set are always shown, "none" where empty: what a bisect did not
    look at matters as much as what it found."""
    return [
        ("Cause", [_cause_line(c) for c in report.causes]),
        ("Ruled out", list(report.ruled_out) or ["none"]),
        ("Cannot be set here", list(report.cannot_set) or ["none"]),
        ("Notes", list(report.notes)),
    ]


def window(until: int | None) -> str | None:
    """Where the reruns are compared, in the words the reruns table uses: a rerun stops at the
    first step past the window, which is the step its row says it stopped at."""
    if until is None:
        return None
    return f"reruns compared up to step {until}; each stops at the first step past it"


def text(report: BisectResult) -> str:
    """The report in ``columns()``: long items wrap at word and name boundaries."""
    width = columns()
    lines = [one_line(f"fingerprint bisect {report.a} {report.b}")]
    lines += wrap(one_line(headline(report)), width, "  ", "verdict: ")
    compared = window(report.until_step)
    if compared:
        lines.append(compared)
    if report.reruns:
        lines += wrap(report.cost(), width, "  ")
    for title, items in _sections(report):
        if items:
            lines.append(f"{title}:")
            for item in items:
                lines += wrap(one_line(item), width, "    ", "  - ")
    if report.reruns:
        lines.append("Reruns (# | set | follows | parts from A at | run):")
        for i, r in enumerate(report.reruns, start=1):
            lines += wrap(one_line(" | ".join(_rerun_row(i, r))), width, "      ", "  ")
    return "\n".join(lines) + "\n"


def markdown(report: BisectResult) -> str:
    a, b = markdown_code(str(report.a)), markdown_code(str(report.b))
    lines = [f"## fingerprint bisect {a} {b}", "", f"**{markdown_text(headline(report))}**", ""]
    for title, items in _sections(report):
        if items:
            lines += [
                f"### {title}",
                *(
                    f"- {markdown_code(i)}" if title != "Notes" else f"- {markdown_text(i)}"
                    for i in items
                ),
                "",
            ]
    if report.reruns:
        lines += [markdown_text(report.cost()), ""]
        lines += ["| # | set | follows | parts from A at | run |", "|---|---|---|---|---|"]
        lines += [
            "| " + " | ".join(map(markdown_text, _rerun_row(i, r))) + " |"
            for i, r in enumerate(report.reruns, 1)
        ]
    return "\n".join(lines) + "\n"


def html_page(report: BisectResult) -> str:
    e = html_text
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>fingerprint bisect</title></head>",
        f"<body><h1>fingerprint bisect {e(report.a)} {e(report.b)}</h1>",
        f"<p><strong>{e(headline(report))}</strong></p>",
    ]
    for title, items in _sections(report):
        if items:
            parts.append(f"<h2>{e(title)}</h2><ul>")
            parts += [f"<li>{e(i)}</li>" for i in items]
            parts.append("</ul>")
    if report.reruns:
        parts.append(f"<h2>Reruns</h2><p>{e(report.cost())}</p>")
        parts.append("<table><tr><th>#</th><th>set</th><th>follows</th>")
        parts.append("<th>parts from A at</th><th>run</th></tr>")
        for i, r in enumerate(report.reruns, start=1):
            parts.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in _rerun_row(i, r)) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def render(report: BisectResult, fmt: OutputFormat) -> str:
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2, default=str) + "\n"
    if fmt == "markdown":
        return markdown(report)
    if fmt == "html":
        return html_page(report)
    return text(report)
