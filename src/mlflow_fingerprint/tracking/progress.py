"""One progress line on stderr while a long read runs (``explain`` over a team's history).

Why: reading 100,000 runs from a server takes minutes, and a command silent for minutes looks
hung. The line appears only once a read has taken :data:`AFTER_S`, only where stderr is a
terminal (a log file or a test's captured stream gets no carriage returns), never on stdout, and
``--quiet`` turns it off. It is rewritten in place and cleared when the read ends.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

AFTER_S = 2.0  # a read shorter than this shows nothing
EVERY_S = 0.25  # the line is redrawn at most this often


class Progress:
    """A count of things read, shared by the threads reading them; :meth:`add` is cheap."""

    def __init__(self, enabled: bool, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._on = enabled and self._stream.isatty()
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._drawn = 0.0
        self._shown = False
        self.what = ""
        self.done = 0
        self.total: int | None = None

    def stage(self, what: str, total: int | None = None) -> None:
        """A new stage: ``what`` is being read, ``total`` of them where known."""
        with self._lock:
            self.what, self.done, self.total = what, 0, total
        self.add(0)

    def add(self, count: int) -> None:
        with self._lock:
            self.done += count
            now = time.monotonic()
            if not self._on or now - self._start < AFTER_S or now - self._drawn < EVERY_S:
                return
            self._drawn, self._shown = now, True
            of = f" of {self.total:,}" if self.total is not None else ""
            line = (
                f"fingerprint: reading {self.what}: {self.done:,}{of} ({now - self._start:.0f} s)"
            )
            self._stream.write(f"\r\033[K{line}")
            self._stream.flush()

    def close(self) -> None:
        """Clear the line, where one was drawn."""
        with self._lock:
            if self._shown:
                self._stream.write("\r\033[K")
                self._stream.flush()
                self._shown = False
