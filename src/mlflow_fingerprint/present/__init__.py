"""Renderers of a comparator Report: text (rich on a terminal), json, markdown and html."""

from __future__ import annotations

import json

from ..compare.report import Report
from ..model.vocabulary import OUTPUT_FORMATS, OutputFormat

FORMATS = OUTPUT_FORMATS
EXTENSIONS: dict[OutputFormat, str] = {
    "text": "txt",
    "json": "json",
    "markdown": "md",
    "html": "html",
}


def render(
    report: Report, fmt: OutputFormat, include_none: bool = False, rich: bool = False
) -> str:
    """``report`` in ``fmt``. Text is the one-screen report unless ``include_none`` (``--all``)
    asks for everything, then ``rich`` picks coloured tables for a terminal."""
    if fmt == "json":
        return json.dumps(report.to_dict(include_none), indent=2, default=str) + "\n"
    if fmt == "markdown":
        from .markdown import render as markdown

        return markdown(report, include_none)
    if fmt == "html":
        from .html import render as html

        return html(report, include_none)
    if fmt == "text":
        from ..wrap import columns
        from .text import render_brief, render_plain, render_rich

        if not include_none:
            return render_brief(report, columns(), rich=rich)
        return (render_rich if rich else render_plain)(report, include_none)
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
