"""Renderers of an explain report: text (one screen; rich colours on a terminal), json,
markdown and html (self-contained, with the stacked variance chart and strip plots)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from ...explain.result import Explanation
from ...model.vocabulary import OUTPUT_FORMATS, OutputFormat


def pieces(report: Explanation, fmt: OutputFormat, rich: bool = False) -> Iterator[str]:
    """:func:`render`'s text in pieces, made as they are written: a JSON report lists every
    run's value under each factor (14 MB of text at 100,000 runs), and its text and the list
    of pieces it is joined from were held at once."""
    if fmt == "json":
        yield from json.JSONEncoder(indent=2).iterencode(report.to_dict())
        yield "\n"
    else:
        yield render(report, fmt, rich)


def render(report: Explanation, fmt: OutputFormat, rich: bool = False) -> str:
    if fmt == "json":
        return "".join(pieces(report, fmt))
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
