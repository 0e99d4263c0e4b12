"""Fitting text to a width without cutting a word: lines wrap at spaces, and a word longer than
the line (a dotted field name, a path) breaks after one of its own separators; a value too long
for its cell is shortened after a space, a dot or a slash (never inside a snake_case name) and
marked ``…``."""

from __future__ import annotations

import re

# After these a long word may break: the parts of a dotted name, a path, a snake_case name.
_BOUNDARY = re.compile(r"(?<=[./_:=,-])")


def pieces(word: str, width: int) -> list[str]:
    """``word`` in parts of at most ``width`` characters, split after separators where it has
    them (a part with no separator inside ``width`` is left whole and overflows)."""
    if len(word) <= width:
        return [word]
    parts: list[str] = []
    current = ""
    for part in _BOUNDARY.split(word):
        if current and len(current) + len(part) > width:
            parts.append(current)
            current = ""
        current += part
    return [*parts, current] if current else parts


def wrap(text: str, width: int, indent: str = "", first: str = "") -> list[str]:
    """``text`` on lines of at most ``width`` characters: ``first`` leads the first line,
    ``indent`` every other (both counted in the width). A text that fits is kept as it is,
    spaces and all (an aligned table row)."""
    if len(first) + len(text) <= width and "\n" not in text:
        return [first + text]
    lines: list[str] = []
    line = first
    start = len(first)
    for word in text.split():
        room = width - len(indent)
        for piece in pieces(word, room):
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
