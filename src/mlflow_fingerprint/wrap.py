"""Fitting text to a width without cutting a word: lines wrap at spaces, and a word longer than
the line (a dotted field name, a path) breaks after one of its own separators; a value too long
for its cell is shortened after a space, a dot or a slash (never inside a snake_case name) and
marked ``…``."""

from __future__ import annotations

import os
import re

WIDTH = 100  # the columns of every default text output: a terminal of 100 shows it unwrapped
NARROWEST = 40  # below this a line of a report no longer reads: wrap to this rather than less

# After these a long word may break: the parts of a dotted name, a path, a snake_case name.
_BOUNDARY = re.compile(r"(?<=[./_:=,-])")
# A number is one word whatever its length: ``0.003044605`` split at its dot reads as two.
NUMBER = re.compile(r"[-+]?(\d[\d_]*\.?\d*|\.\d+)([eE][-+]?\d+)?%?")


def pieces(word: str, width: int) -> list[str]:
    """``word`` in parts of at most ``width`` characters, split after separators where it has
    them (a part with no separator inside ``width`` is left whole and overflows)."""
    if len(word) <= width or NUMBER.fullmatch(word):
        return [word]
    parts: list[str] = []
    current = ""
    for part in _BOUNDARY.split(word):
        if current and len(current) + len(part) > width:
            parts.append(current)
            current = ""
        current += part
    return [*parts, current] if current else parts


def wrap(
    text: str, width: int, indent: str = "", first: str = "", whole_words: bool = False
) -> list[str]:
    """``text`` on lines of at most ``width`` characters: ``first`` leads the first line,
    ``indent`` every other (both counted in the width). A text that fits is kept as it is,
    spaces and all (an aligned table row). ``whole_words``: a word longer than a line stays
    whole and overflows (a path in a command to copy), rather than breaking at a separator."""
    if len(first) + len(text) <= width and "\n" not in text:
        return [first + text]
    lines: list[str] = []
    line = first
    start = len(first)
    for word in text.split():
        room = width - len(indent)
        for piece in [word] if whole_words else pieces(word, room):
            gap = "" if len(line) == start else " "
            if len(line) + len(gap) + len(piece) > width and len(line) > start:
                lines.append(line)
                line, start, gap = indent, len(indent), ""
            line += gap + piece
    lines.append(line)
    return [ln.rstrip() for ln in lines]


def shorten(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, cut at the last space or separator before the
    limit (not inside a word) and marked ``…``."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    cut = max(head.rfind(" "), *(head.rfind(c) + 1 for c in "./:=,"))
    return (head[:cut] if cut > limit // 3 else head).rstrip(" ") + "…"


def columns() -> int:
    """The width to fit: ``$COLUMNS`` where set (never under ``NARROWEST``), else ``WIDTH``, or
    fewer where the terminal written to is narrower. A value that is no number is ignored."""
    import shutil

    told = os.environ.get("COLUMNS", "")
    if told.isdigit() and int(told) > 0:
        return max(NARROWEST, int(told))
    return max(NARROWEST, min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns))


def fit(text: str, width: int | None = None) -> str:
    """Every line of ``text`` in ``width`` columns (``columns()`` where not given): a longer
    line wraps at word and path boundaries, its continuation lines indented two more than it."""
    width = width or columns()
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        body = line.lstrip(" ")
        lead = line[: len(line) - len(body)]
        out += wrap(body, width, lead + "  ", lead)
    return "\n".join(out)


def command_lines(command: str, width: int | None = None, indent: str = "  ") -> str:
    """A shell command to copy, in ``width`` columns: broken at its spaces with a trailing
    backslash, so the lines paste back as the one command; a word longer than a line (a path)
    stays whole and overflows."""
    width = width or columns()
    # never inside a word: a path or URI broken there would no longer paste back whole
    lines = wrap(command, width - 2, indent + "  ", indent, whole_words=True)
    return " \\\n".join(lines)
