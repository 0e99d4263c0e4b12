"""Renderers of an explain report: text (one screen; rich colours on a terminal), json,
markdown and html (self-contained, with the stacked variance chart and strip plots)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ...explain.result import Explanation
from ...model.vocabulary import OUTPUT_FORMATS, OutputFormat

INDENT = "  "


def pieces(report: Explanation, fmt: OutputFormat, rich: bool = False) -> Iterator[str]:
    """:func:`render`'s text in pieces, made as they are written: a JSON report lists every
    run's value under each factor (14 MB of text at 100,000 runs), and its text and the list
    of pieces it is joined from were held at once. JSON is made a part at a time
    (``Explanation.parts``), a factor or a group at a time: the same text
    ``json.dumps(report.to_dict(), indent=2)`` writes, without the whole dict."""
    if fmt == "json":
        yield from _json(report)
        yield "\n"
    else:
        yield render(report, fmt, rich)


def _json(report: Explanation) -> Iterator[str]:
    yield "{"
    for n, (key, value) in enumerate(report.parts()):
        yield f"{',' if n else ''}\n{INDENT}{json.dumps(key)}: "
        if isinstance(value, Iterator):
            yield from _listed(value)
        else:
            yield from _nested(value, 1)
    yield "\n}"


def _listed(items: Iterator[Any]) -> Iterator[str]:
    """A list of the top level's, one item at a time (``[]`` when empty, as json writes it)."""
    opened = False
    for item in items:
        yield f"{',' if opened else '['}\n{INDENT * 2}"
        yield from _nested(item, 2)
        opened = True
    yield f"\n{INDENT}]" if opened else "[]"


def _nested(value: Any, depth: int) -> Iterator[str]:
    """``value`` as json writes it ``depth`` levels in, in the encoder's pieces (a factor
    lists every run's value: its text whole, and the pieces it is joined from, were held at
    once). No string json writes holds a line break of its own (it writes ``\\n``), so every
    line break is the indent's."""
    for piece in json.JSONEncoder(indent=2).iterencode(value):
        yield piece.replace("\n", "\n" + INDENT * depth)


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
