"""Escaping for each output format: what a record holds is data, never markup or a command to the
terminal that shows it.

Field values, run names, params and error text come from records and stores anyone could have
written. Printed raw, ``\\x1b]52;...`` rewrites a terminal's clipboard, ``\\x1b[2J`` clears it, a
right-to-left override reorders what a reader sees, ``<script>`` runs in an HTML report (and in
a Markdown one rendered by anything less strict than GitHub), and ``[/]`` breaks a rich table.
So every renderer passes what it did not write itself through the escaper of its format.
"""

from __future__ import annotations

import html
import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides/isolates.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# What Markdown (GFM) reads as markup anywhere in running text, and at the start of a block.
_MARKDOWN = re.compile(r"([\\`*_\[\]|~])")
_BLOCK_START = re.compile(r"^(\d*)([#>=+\-.)])")
# What a Markdown renderer turns into a link by itself (GFM's and showdown's autolinks: a URL,
# ``www.``, an e-mail address) or what a link may lead to (``javascript:``, ``data:``): such a
# word of a record is written as code, which no renderer links.
_LINKABLE = re.compile(
    r"(?i)\b(?:[a-z][a-z0-9+.\-]*://|www\.|(?:javascript|vbscript|data|mailto|file):)\S*"
    r"|[\w.+\-]+@[\w\-]+\.[\w.\-]+"
)


def _visible(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def terminal(text: str) -> str:
    """``text`` with every control character a terminal acts on written out (``\\u001b``): the
    same escape JSON uses, so a JSON document stays valid and means the same."""
    return _CONTROLS.sub(_visible, text)


def one_line(text: str) -> str:
    """``terminal`` on one line: newlines and tabs become spaces (a table cell, an error)."""
    return terminal(text).replace("\r", " ").replace("\n", " ").replace("\t", " ")


def markdown_text(text: str) -> str:
    """Running text in Markdown, on one line: markup characters backslash-escaped and ``<``,
    ``>``, ``&`` as entities, and a word a renderer would link (``_LINKABLE``) as code, so
    nothing in it becomes a tag, a link, an image or a table column."""
    line = one_line(text)
    pieces, done = [], 0
    for found in _LINKABLE.finditer(line):
        pieces += [_markdown_plain(line[done : found.start()]), markdown_code(found.group())]
        done = found.end()
    pieces.append(_markdown_plain(line[done:]))
    return _BLOCK_START.sub(r"\1\\\2", "".join(pieces))


def _markdown_plain(text: str) -> str:
    return _MARKDOWN.sub(r"\\\1", html.escape(text, quote=False))


def markdown_code(text: str) -> str:
    """A Markdown code span (shown literally, HTML included); a backtick would end it, so it
    becomes a look-alike, and a pipe is escaped (GFM splits table cells on it, code or not)."""
    return "`" + one_line(text).replace("`", "ˋ").replace("|", "\\|") + "`"


def html_text(text: str) -> str:
    """Text inside an HTML element or attribute value."""
    return html.escape(terminal(text), quote=True)
