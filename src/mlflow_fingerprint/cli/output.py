"""Writing a command's result to stdout or ``--output FILE`` with one error path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import UsageError
from ..present.escape import terminal


def coloured(output: str | None) -> bool:
    """Whether a text report may be drawn in colour: written to a terminal, and ``$NO_COLOR``
    (https://no-color.org) not set to anything."""
    return output in (None, "-") and sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def emit(text: str, output: str | None, *, styled: bool = False) -> None:
    """Write ``text``; control characters from what it quotes (a record, a run name) are
    written out (``present.escape.terminal``), except in ``styled`` text, whose colour codes
    are the renderer's own (and which escaped what it quotes itself)."""
    if not styled:
        text = terminal(text)
    if not text.endswith("\n"):
        text += "\n"
    if output is None or output == "-":
        if sys.stdout is None:  # started with its standard output closed (``>&-``)
            raise UsageError("standard output is closed: give --output FILE")
        sys.stdout.write(text)
        return
    if not output.strip():
        raise UsageError("--output names no file: give a path, or - for standard output")
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
