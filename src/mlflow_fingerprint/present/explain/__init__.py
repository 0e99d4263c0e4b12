"""Renderers of an explain report: text (one screen; rich colours on a terminal), json,
markdown and html (self-contained, with the stacked variance chart and strip plots)."""

from __future__ import annotations

import json

from ...explain.result import Explanation
from ...model.vocabulary import OUTPUT_FORMATS, OutputFormat


def render(report: Explanation, fmt: OutputFormat, rich: bool = False) -> str:
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2) + "\n"
    if fmt == "markdown":
        from .markdown import render as markdown

        return markdown(report)
    if fmt == "html":
        from .html import render as html

        return html(report)
    if fmt == "text":
        from .text import render_plain, render_rich

        return (render_rich if rich else render_plain)(report)
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(OUTPUT_FORMATS)}")
