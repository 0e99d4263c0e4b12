"""Writing a command's result to stdout or ``--output FILE`` with one error path."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from ..errors import UsageError
from ..present.escape import terminal


def coloured(output: str | None) -> bool:
    """Whether a text report may be drawn in colour: written to a terminal, and ``$NO_COLOR``
    (https://no-color.org) not set to anything."""
    return output in (None, "-") and sys.stdout.isatty() and not os.environ.get("NO_COLOR")


# Characters escaped and written at once where a report comes in pieces: a JSON report of
# 100,000 runs is 14 MB of text, and held whole, with its escaped copy, it was the command's
# peak.
BLOCK = 1 << 16


def emit(text: str | Iterable[str], output: str | None, *, styled: bool = False) -> None:
    """Write ``text`` (whole, or in pieces written as they come), ending in a newline; control
    characters from what it quotes (a record, a run name) are written out
    (``present.escape.terminal``), except in ``styled`` text, whose colour codes are the
    renderer's own (and which escaped what it quotes itself)."""
    parts = [text] if isinstance(text, str) else text
    if output is None or output == "-":
        if sys.stdout is None:  # started with its standard output closed (``>&-``)
            raise UsageError("standard output is closed: give --output FILE")
        _write(parts, sys.stdout, styled)
        return
    if not output.strip():
        raise UsageError("--output names no file: give a path, or - for standard output")
    try:
        with open(output, "w", encoding="utf-8") as stream:
            _write(parts, stream, styled)
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None


def _write(parts: Iterable[str], stream: TextIO, styled: bool) -> None:
    last = ""
    for block in _blocks(parts):
        stream.write(block if styled else terminal(block))
        last = block
    if not last.endswith("\n"):
        stream.write("\n")


def _blocks(parts: Iterable[str]) -> Iterator[str]:
    """``parts`` joined into blocks of about :data:`BLOCK` characters (a control character is
    one, so escaping block by block is escaping the whole)."""
    held: list[str] = []
    count = 0
    for part in parts:
        held.append(part)
        count += len(part)
        if count >= BLOCK:
            yield "".join(held)
            held, count = [], 0
    if held:
        yield "".join(held)
