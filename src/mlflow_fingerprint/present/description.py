"""The one line a run's MLflow description holds: how it differs from the run before it.

The run page of the MLflow UI shows the description first; a person scanning an experiment's runs
reads there what changed (the verdict and the most likely cause) without opening a report.
"""

from __future__ import annotations

from ..compare.report import Report
from . import common
from .escape import one_line
from .wrap import shorten

# MLflow shows the description as markdown: the line stays short and plain.
MAX_CHARS = 300


def description(report: Report) -> str:
    """``vs run <A>: <verdict>; most likely <field> (<a> -> <b>)``, one line, at most
    ``MAX_CHARS`` characters, cut at a word or name boundary."""
    ref = report.a
    name = f"{ref.name} ({ref.run_id[:8]})" if ref.name and ref.run_id else ref.label
    line = f"mlflow-fingerprint: vs run {one_line(name)}: {report.verdict}"
    effective = report.effective_differences
    if effective:
        top = effective[0]
        a, b = common.value_text(top.a, 40), common.value_text(top.b, 40)
        more = len(effective) - 1
        line += f"; most likely {top.field} ({one_line(a)} -> {one_line(b)})"
        if more:
            line += f" and {common.plural(more, 'other change')}"
    elif report.verdict == "same_results":
        line += "; nothing that can change results differs"
    return shorten(line, MAX_CHARS)
