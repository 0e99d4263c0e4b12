"""Which run ``mfp.log_metrics`` logs into: the run of the calling context, never another's.

A ``fingerprinted`` run makes its metric sink current for the duration of train() in a
``ContextVar`` (:func:`entered`), so two trainings in two threads (or two asyncio tasks) each log
into their own run, and a nested run shadows its outer one until it ends.

Threads started inside a run do not inherit context variables (``threading.Thread`` starts in an
empty context; ``contextvars.copy_context().run`` or an executor that copies the context does
inherit). A value logged where no ``fingerprinted`` run is current goes, in this order, to:

1. the active MLflow run of this thread (a plain ``mlflow.start_run()``), through that run's
   writer (the context provider's, or one opened for it on first use);
2. the one ``fingerprinted`` run open in this process, if exactly one is open: a helper thread of
   a single training logs where the user means it to;
3. nowhere, with one warning: no run at all, or several open, where picking one could put the
   value into the wrong run.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from ..errors import warn


class MetricSink(Protocol):
    """Where a run's metric values go: its writer, or a rank's routing (``ranks.RankMetrics``)."""

    @property
    def run_id(self) -> str | None: ...

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None: ...


_current: ContextVar[MetricSink | None] = ContextVar("mlflow_fingerprint_run", default=None)
# What to do when the current run ends (``on_leave``): one list per entered run.
_leaving: ContextVar[list[Callable[[], None]] | None] = ContextVar(
    "mlflow_fingerprint_leaving", default=None
)


class _OpenRuns:
    """The sinks of the ``fingerprinted`` runs open in this process: only ever asked whether
    exactly one is open (rule 2 above), never used to route a value in a context that has one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sinks: list[MetricSink] = []

    def add(self, sink: MetricSink) -> None:
        with self._lock:
            self._sinks.append(sink)

    def discard(self, sink: MetricSink) -> None:
        with self._lock:
            if sink in self._sinks:
                self._sinks.remove(sink)

    def only(self) -> tuple[MetricSink | None, int]:
        with self._lock:
            return (self._sinks[0] if len(self._sinks) == 1 else None), len(self._sinks)


_open = _OpenRuns()
_warned = threading.Event()


def current() -> MetricSink | None:
    """The ``fingerprinted`` run current in this context (the innermost one), if any."""
    return _current.get()


@contextmanager
def entered(sink: MetricSink) -> Iterator[None]:
    """Make ``sink`` the current run of this context (and an open run of the process) until the
    block ends. A run entered in one context and left in another (a generator resumed
    elsewhere) still leaves: the previous value is put back by hand."""
    previous = _current.get()
    token = _current.set(sink)
    callbacks: list[Callable[[], None]] = []
    previous_leaving = _leaving.get()
    leaving = _leaving.set(callbacks)
    _open.add(sink)
    try:
        yield
    finally:
        _open.discard(sink)
        for callback in reversed(callbacks):
            try:
                callback()
            except Exception as exc:  # one failing clean-up must not skip the others
                warn(f"mlflow-fingerprint: {exc}")
        try:
            _leaving.reset(leaving)
        except ValueError:
            _leaving.set(previous_leaving)
        try:
            _current.reset(token)
        except ValueError:  # left in another context than the one it was entered in
            _current.set(previous)


def on_leave(callback: Callable[[], None]) -> bool:
    """Call ``callback`` when the current ``fingerprinted`` run of this context ends (``mfp.watch``
    removes its hooks then); False, and nothing registered, where no run is current."""
    callbacks = _leaving.get()
    if callbacks is None or _current.get() is None:
        return False
    callbacks.append(callback)
    return True


class _Discarded:
    """The sink of a fetch the capture makes (``draws.measure``), not the training: a value a
    dataset logs from ``__getitem__`` then was not logged by the training, and must not reach the
    run a second time beside the training's own fetch of the same item."""

    run_id: str | None = None

    def log_metrics(self, values: Mapping[str, Any], step: int | None = None) -> None:
        del values, step


@contextmanager
def discarding() -> Iterator[None]:
    """Within the block, ``mfp.log_metrics`` in this context logs nowhere (no fallback to an
    active MLflow run or the one open run either)."""
    token = _current.set(_Discarded())
    try:
        yield
    finally:
        _current.reset(token)


def log_metrics(metrics: Mapping[str, Any], step: int | None = None) -> None:
    """Log metric values from the training loop without waiting for MLflow.

    The values go to the ``fingerprinted`` run of the calling context, else to this thread's
    active MLflow run (e.g. a plain ``mlflow.start_run()``), else to the only ``fingerprinted``
    run open in the process; otherwise they are dropped with one warning. The caller's cost is one
    deque append per value.
    """
    sink = _current.get() or _writer_for_active_run()
    if sink is None:
        sink, count = _open.only()
        if sink is None:
            _warn_once(count)
            return
    sink.log_metrics(metrics, step)


def _writer_for_active_run() -> MetricSink | None:
    mlflow = sys.modules.get("mlflow")
    if mlflow is None:
        return None
    run = mlflow.active_run()
    if run is None:
        return None
    from ..tracking.uploader import writer_for_run

    return writer_for_run(run.info.run_id, mlflow.get_tracking_uri())


def _warn_once(open_runs: int) -> None:
    if _warned.is_set():
        return
    _warned.set()
    why = (
        f"{open_runs} fingerprinted runs are open and this thread is in none of them (start it "
        "with contextvars.copy_context().run to log into the run that started it)"
        if open_runs
        else "no fingerprinted or active MLflow run"
    )
    warn(f"mlflow-fingerprint: log_metrics called with {why}; values dropped")
