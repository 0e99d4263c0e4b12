"""SIGTERM and SIGHUP end a rerun as Ctrl-C does.

Python's default for SIGTERM ends the process at once: no ``finally`` runs, so the training's
process group would run on, its worktree stay behind and its MLflow run stay RUNNING. While a
rerun or a bisect runs, those signals raise :class:`~mlflow_fingerprint.errors.Terminated` (a
KeyboardInterrupt) in the main thread instead; SIGINT keeps Python's own KeyboardInterrupt. The
handlers are put back on the way out; a signal the process ignores (SIGHUP under ``nohup``)
stays ignored. Off the main thread (where Python allows no handler) the
caller's own handling stands.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from ..errors import Terminated

SIGNALS = tuple(s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


def _raise(signum: int, frame: FrameType | None) -> None:
    del frame
    raise Terminated(signum)


@contextlib.contextmanager
def ending_on_signals() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise ``Terminated`` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved: dict[int, Any] = {}
    try:
        for s in SIGNALS:
            if signal.getsignal(s) is not signal.SIG_IGN:  # ``nohup``: a hangup stays ignored
                saved[s] = signal.signal(s, _raise)
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
