"""The one line a run's MLflow description holds: how it differs from the run before it.

The run page of the MLflow UI shows the description first; a person scanning an experiment's runs
reads there what changed (the verdict and the most likely cause) without opening a report. The UI
renders it as Markdown, so every name and value in it (a run name, an option, a param: anyone's
words) is escaped (``markdown_text``): it shows as text, never as a link, an image or a tag.
"""

from __future__ import annotations

from ..compare.report import Report
from ..wrap import shorten
from . import common
from .escape import markdown_text

# MLflow shows the description as markdown: the line stays short and plain. Each part is cut to
# its share before it is escaped (an escape cut in two would be markup again).
NAME_CHARS = 60
FIELD_CHARS = 60
VALUE_CHARS = 40


def description(report: Report) -> str:
    """``vs run <A>: <verdict>; most likely <field> (<a> -> <b>)``, one line of about 300
    characters of text at most, each name and value cut at a word or name boundary."""
    ref = report.a
    if ref.name and ref.run_id:
        name = f"{shorten(ref.name, NAME_CHARS)} ({ref.run_id[:8]})"
    else:
        name = shorten(ref.label, NAME_CHARS)
    line = f"mlflow-fingerprint: vs run {markdown_text(name)}: {report.verdict}"
    effective = report.effective_differences
    if effective:
        top = effective[0]
        a, b = (common.value_text(v, VALUE_CHARS) for v in (top.a, top.b))
        field = shorten(top.field, FIELD_CHARS)
        line += f"; most likely {markdown_text(field)} ({markdown_text(a)} -> {markdown_text(b)})"
        more = len(effective) - 1
        if more:
            line += f" and {common.plural(more, 'other change')}"
    elif report.verdict == "same_results":
        line += "; nothing that can change results differs"
    return line
