"""Fast metric logging: the training thread appends to a deque and returns; two background threads
do the rest.

- the *spool* thread sleeps until ``log_metrics`` (or any record) wakes it, waits INTERVAL_S to
  gather a batch, writes the records to the run's spool in one fsync'd append, and wakes the
  uploader. So a value is on disk at most INTERVAL_S (50 ms) after ``log_metrics`` returns, plus
  the time of that one write: a SIGKILL later than that cannot lose it. The wake-up is what makes
  the bound hold after a quiet spell too (a timer that backs off while nothing is logged would
  leave the first value after it in memory for up to the back-off);
- the *uploader* thread replays the spool into MLflow (``sync.replay``), a batch of up to 1000
  values per ``log_batch`` call, and stops at the first sign of an outage, probing again every
  RETRY_S.

The two are separate so that a tracking server stuck in MLflow's retry back-off never holds back
the write to local disk. Everything is drained and uploaded (within a time limit) when the run
closes or the process exits normally.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import posixpath
import random
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import warn
from ..redact import strip_url_credentials
from . import local_store
from .events import Artifact, Event, Item, JoinRun, encode, encode_metric
from .spool import Spool, open_spool
from .values import STEP_MAX, STEP_MIN, Refusal, number, refused_key, storable

_log = logging.getLogger("mlflow_fingerprint")

# The durability bound: a value logged is on disk this long after the call, plus one write.
INTERVAL_S = 0.05
RETRY_S = 5.0
CLOSE_TIMEOUT_S = 30.0
# A sqlite file locked by another process's write (``errors.Busy``) is tried again after a short
# jittered wait (the sweep's processes do not retry in step), and only reported once it has
# stayed locked this long.
BUSY_RETRY_S = (0.2, 2.0)
BUSY_PATIENCE_S = 60.0
# The metric names a writer remembers as valid; past that many (a name per step, say), a new
# name is checked on every call instead: still right, only slower.
KNOWN_NAMES = 10_000


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(eq=False)
class Signals:
    """How the writer's threads wake each other: the caller's, the spool thread and the uploader."""

    spool_wake: threading.Event = field(default_factory=threading.Event)  # something is queued
    wake: threading.Event = field(default_factory=threading.Event)  # the uploader's
    started: threading.Event = field(default_factory=threading.Event)  # run id known, or offline
    closing: threading.Event = field(default_factory=threading.Event)  # close() or discard() began
    passes: threading.Condition = field(default_factory=threading.Condition)  # after each pass


@dataclass(eq=False)
class RunState:
    """One run as its writer knows it: the MLflow run once created or joined, what the last
    upload pass found (written by the uploader thread under ``Signals.passes``), the warnings
    already given, and the handshake over who releases the spool (under ``RunWriter``'s release
    lock): ``close()`` and the uploader thread each say when they are done, the later one
    releases."""

    run_id: str | None = None
    run: Any = None  # the Run object, when the uploader created it
    pass_count: int = 0
    last_error: str | None = None
    stuck: bool = False  # the last pass stopped for this spool's sake, not the store's
    unauthorized: bool = False  # the last pass was refused for its credentials (401/403)
    busy_since: float | None = None  # the store has answered "locked" since then
    answered: bool = False  # the server answered its health probe: it is up, working on the run
    warned: set[str] = field(default_factory=set)
    closed: bool = False
    released: bool = False
    uploader_done: bool = False


class RunWriter:
    """One run's pipeline from the training thread to the spool to MLflow. Its state is a
    ``RunState``; the threads coordinate through ``Signals``. The queue, the spool thread's
    wake-up, the names already checked and whether this process is a fork of the writer's stay
    attributes of their own: ``log_metrics`` touches nothing else."""

    def __init__(self, spool: Spool, uri: str) -> None:
        from .credentials import for_mlflow

        self.spool = spool
        self.uri = for_mlflow(uri)  # on the caller's thread: the one write to the environment
        self.state = RunState()
        self.signals = Signals()
        # Frames of four, each added by one ``extend`` (atomic under the GIL): a metric value's
        # (name, value, step, time in ns), or an event's (event, data, None, None). Flat, so that
        # what the queue keeps is no tuple the garbage collector counts: a value logged does not
        # bring the interpreter's next collection nearer (a full one, in a process that imported
        # MLflow and torch, stalls training for tenths of a second).
        self._queue: deque[Any] = deque()
        self._spool_wake = self.signals.spool_wake  # the caller's hot path
        self._spool_woken = self._spool_wake.is_set
        self._names: set[str] = set()  # metric names MLflow takes (``values.valid_key``)
        self._forked = False  # set in a forked child (``_mark_forked``): it has none of our threads
        self._disk = threading.Lock()
        self._release_lock = threading.Lock()
        self._lock = spool.locked()
        if not self._lock.__enter__():
            raise RuntimeError(f"spool {spool.path} is already being written")
        _WRITERS.add(self)
        self._spooler = threading.Thread(target=self._spool_loop, name="mfp-spool", daemon=True)
        self._uploader = threading.Thread(target=self._upload_loop, name="mfp-upload", daemon=True)

    @property
    def run_id(self) -> str | None:
        """The MLflow run's id, once the uploader has created or joined it."""
        return self.state.run_id

    @property
    def run(self) -> Any:
        """The MLflow ``Run``, when the uploader created it."""
        return self.state.run

    def start(self) -> RunWriter:
        from . import client as mlflow_io

        mlflow_io.quiet_retry_warnings()
        self._spooler.start()
        self._uploader.start()
        _OPEN.add(self)
        return self

    # -- caller side -------------------------------------------------------------------------

    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Append to the buffer: no I/O, no lock, one tuple per value. What MLflow cannot store (a
        bad step, name or value) is refused here with one warning per kind, so it never reaches
        the uploader.

        The common call (a ``dict`` of floats under names this writer has seen, an ``int`` step
        or none) is checked by types and set membership alone; anything else is converted or
        refused by ``values`` (``_log_checked``, ``_log_one``)."""
        if (
            type(metrics) is not dict
            or self._forked
            or not (step is None or (type(step) is int and STEP_MIN <= step <= STEP_MAX))
        ):
            self._log_checked(metrics, step)
            return
        ts = time.time_ns()
        names = self._names
        for key, value in metrics.items():
            if type(value) is float and type(key) is str and key in names:
                self._queue.extend((key, value, step, ts))
            else:
                self._log_one(key, value, step, ts)
        if not self._spool_woken():
            self._spool_wake.set()

    def _log_one(self, key: Any, value: Any, step: int | None, ts: int) -> None:
        """One value of a checked call whose name is new to this writer or whose value is not a
        ``float``: the name is checked (and remembered), the value converted, or either refused."""
        known = type(key) is str and key in self._names
        checked = number(key, value) if known else (refused_key(key) or number(key, value))
        if isinstance(checked, Refusal):
            self.warn_once(f"refused:{checked.kind}", checked.message)
            return
        if len(self._names) < KNOWN_NAMES:
            self._names.add(key)
        self._queue.extend((key, checked, step, ts))

    def _log_checked(self, metrics: Any, step: Any) -> None:
        """A call the fast path does not take: not a ``dict``, a step to convert or refuse, or in
        a forked child."""
        checked = storable(metrics, step)
        for refusal in checked.refused:
            self.warn_once(f"refused:{refusal.kind}", refusal.message)
        ts = time.time_ns()
        if self._forked:
            self._log_from_fork(checked.values, checked.step, ts)
            return
        for key, value in checked.values:
            self._queue.extend((key, value, checked.step, ts))
        if checked.values and not self._spool_woken():
            self._spool_wake.set()

    def _log_from_fork(self, values: list[tuple[str, float]], step: int | None, ts: int) -> None:
        """Deliver values logged in a forked child (``__getitem__``, ``worker_init_fn`` of a
        DataLoader worker) that inherited this writer but none of its threads: appended straight
        to the spool, one ``O_APPEND`` write each (atomic among processes), where the parent's
        uploader picks them up. Refused with one warning where the spool lives in memory.
        ``values`` are checked (``values.storable``), ``ts`` in ns."""
        ms = ts // 1_000_000
        lines = [encode_metric(k, v, step, ms) for k, v in values]
        if not lines:
            return
        if self.spool.full is not None:
            self.warn_once(
                "fork",
                "values logged in a forked process (e.g. a DataLoader worker) are not logged: "
                "this run's spool is in memory (its disk refused writes); log them in the "
                "training process instead",
            )
            return
        try:
            self.spool.append(lines)
        except OSError as exc:
            self.warn_once("fork", f"values logged in a forked process are not logged: {exc}")

    def record(self, event: Event, data: Callable[[], bytes] | None = None) -> None:
        """Queue a non-metric event, in order with the metrics; ``data`` produces an artifact's
        content, on the spool thread."""
        self._queue.extend((event, data, None, None))
        self._spool_wake.set()

    def wait_started(self, timeout_s: float, answered_s: float | None = None) -> bool:
        """Wait until the uploader knows the run id or has found the store unreachable: at most
        ``timeout_s``, or ``answered_s`` in all where the server has answered its health probe.
        A server that is down is found in seconds; one that is up but busy (a sweep's processes
        all creating their runs at once) is worth waiting for, or every ``mlflow.log_*`` call in
        train() would miss its run."""
        started = self.signals.started
        if not started.wait(timeout_s) and answered_s is not None and self.state.answered:
            started.wait(max(0.0, answered_s - timeout_s))
        return self.state.run_id is not None

    @property
    def stuck(self) -> str | None:
        """Why this run cannot be uploaded whatever the store does (its start refused), if so."""
        return self.state.last_error if self.state.stuck else None

    def _stop_threads(self) -> None:
        """Tell the spool and upload threads to end, wait briefly for them, forget this writer."""
        self.signals.closing.set()
        self.signals.wake.set()
        self._spool_wake.set()
        self._spooler.join(timeout=5.0)
        self._uploader.join(timeout=1.0)
        _OPEN.discard(self)

    def discard(self) -> None:
        """Stop both threads and delete the spool: for a run refused before training began,
        whose spool holds nothing but its start (the caller raises instead of training)."""
        self._stop_threads()
        with self._release_lock:
            self.state.closed = self.state.released = True
            self.spool.remove()
            self._lock.__exit__(None, None, None)

    def flush(self, timeout_s: float) -> bool:
        """Write everything buffered to the spool now and wait (at most ``timeout_s``) until MLflow
        has acknowledged all of it. False if the store is unreachable or too slow."""
        self.drain()
        size = self.spool.size()
        deadline = time.monotonic() + timeout_s
        state, passes = self.state, self.signals.passes
        with passes:
            first_pass = state.pass_count + 1
            self.signals.wake.set()
            while self.spool.acked().offset < size:
                remaining = deadline - time.monotonic()
                failed = state.last_error and state.busy_since is None  # busy: it is retried
                if remaining <= 0 or (state.pass_count >= first_pass and failed):
                    return False
                passes.wait(min(remaining, 0.5))
        return True

    def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> bool:
        """Flush, stop both threads, release the spool, and delete it when all of it is stored.
        Warns once (and keeps the spool for ``fingerprint sync``) otherwise.

        An uploader still inside an MLflow call (a hung server) keeps the spool locked until
        that call returns, so ``fingerprint sync`` cannot work on the same records meanwhile."""
        if self.signals.closing.is_set():
            return False
        done = self.flush(timeout_s)
        self._stop_threads()
        run_id = self.state.run_id
        if run_id is not None and _BY_RUN_ID.get(run_id) is self:
            del _BY_RUN_ID[run_id]
        with self._release_lock:
            self.state.closed = True
            if self.state.uploader_done:
                self._release()
        if not done:
            self.warn_offline()
        return done

    def _release(self) -> None:
        """Unlock the spool (once), deleting it first if MLflow has stored all of it."""
        if self.state.released:
            return
        self.state.released = True
        if self.spool.settled():
            self.spool.remove()
        self._lock.__exit__(None, None, None)

    # -- warnings ----------------------------------------------------------------------------

    def warn_once(self, kind: str, message: str) -> None:
        if kind in self.state.warned:
            return
        self.state.warned.add(kind)
        warn(f"mlflow-fingerprint: {message}")

    def warn_offline(self) -> None:
        self.warn_once("offline", self._offline_message())

    def _offline_message(self) -> str:
        reason = self.state.last_error or "no answer in time"
        uri = strip_url_credentials(self.uri)
        state = "refuses the credentials" if self.state.unauthorized else "is not answering"
        if self.state.stuck:
            return (
                f"this run cannot be uploaded to {uri}: {reason}; its fingerprint and metrics "
                f"are kept in {self.spool.path}, for `fingerprint sync` once that is fixed."
            )
        if local_store.sqlite_file(self.uri) is not None:  # a file: no server to wait for
            if local_store.broken(self.uri, reason):
                return local_store.half_migrated(self.uri, reason, self.spool.path)
            return (
                f"{local_store.failure(self.uri, reason)}; training goes on and this run's "
                f"fingerprint and metrics are kept in {self.spool.path}. They are written to "
                "the file once it can be used again; if this process ends first, run "
                "`fingerprint sync`."
            )
        return (
            f"tracking server {uri} {state} ({reason}); training "
            f"goes on and this run's fingerprint and metrics are kept in {self.spool.path}. "
            "They are uploaded when the server answers again; if this process ends first, "
            "run `fingerprint sync`."
        )

    # -- spool thread ------------------------------------------------------------------------

    def drain(self) -> bool:
        """Move everything queued to disk in one fsync'd append (spool thread, or the caller when
        it needs the records durable now: the lock keeps the order). True if it wrote anything."""
        with self._disk:
            lines: list[bytes] = []
            queue, pop = self._queue, self._queue.popleft
            while queue:  # whole frames: each was added by one extend
                head, second, third, ts = pop(), pop(), pop(), pop()
                if type(head) is str:  # a metric value, checked by log_metrics
                    lines.append(encode_metric(head, second, third, ts // 1_000_000))
                    continue
                event, data = head, second
                if data is not None and isinstance(event, Artifact):
                    try:
                        path = self._write_artifact(event.file, data)
                    except Exception as exc:  # an artifact we cannot produce is left out
                        self.warn_once(f"artifact:{event.file}", f"{event.file} left out: {exc}")
                        continue
                    event = dataclasses.replace(event, file=path)
                lines.append(encode(event))
            if not lines:
                return False
            self.spool.append(lines)
            if self.spool.full is not None:
                self.warn_once(
                    "disk",
                    f"the spool's disk refused a write ({self.spool.full}); values are kept in "
                    "memory and uploaded directly, but are lost if this process dies first",
                )
            self.signals.wake.set()
            return True

    def _write_artifact(self, file: str, data: Callable[[], bytes]) -> str:
        """Produce and spool an artifact; its path relative to the spool when it is inside."""
        folder, name = posixpath.split(file)
        path = self.spool.write_artifact(folder, name, data())
        return str(
            path.relative_to(self.spool.path) if path.is_relative_to(self.spool.path) else path
        )

    def _spool_loop(self) -> None:
        """Sleep until something is queued, gather for INTERVAL_S, write it all in one append.
        A run that logs nothing (e.g. one opened by the context provider) costs no wake-up."""
        while True:
            self._spool_wake.wait()
            self._spool_wake.clear()  # before draining: a value queued after this wakes us again
            closing = self.signals.closing.wait(INTERVAL_S)
            try:
                self.drain()
            except OSError as exc:  # disk full, spool removed: say so once, keep training
                self.warn_once("disk", f"cannot write the spool {self.spool.path}: {exc}")
            if closing:
                return

    # -- uploader thread ---------------------------------------------------------------------

    def _on_start(self, run_id: str, run: Any) -> None:
        self.state.run_id, self.state.run = run_id, run
        _BY_RUN_ID[run_id] = self
        self.signals.started.set()

    def _upload_pass(self) -> str | None:
        """One replay of everything new; the reason it stopped short, if it did."""
        from .client import reachable
        from .sync import replay

        if not reachable(self.uri):
            return "connection failed"
        self.state.answered = True
        outcome = replay(
            self.spool,
            self.uri,
            search=False,
            stop=self.signals.closing.is_set,
            on_start=self._on_start,
        )
        for refusal in outcome.rejected:
            self.warn_once(
                "rejected",
                f"the tracking store refused {refusal}; kept with the reason in "
                f"{self.spool.path} (`fingerprint sync` shows it)",
            )
        state = self.state
        state.stuck = outcome.stuck is not None
        state.unauthorized = outcome.unauthorized
        if not outcome.busy:
            state.busy_since = None
        elif state.busy_since is None:
            state.busy_since = time.monotonic()
        return outcome.error or outcome.stuck

    def _upload_loop(self) -> None:
        from .client import abandon_on

        try:
            with abandon_on(self.signals.closing):
                self._upload_until_closed()
        finally:
            with self._release_lock:
                self.state.uploader_done = True
                if self.state.closed:  # close() gave up waiting for us: the spool is ours now
                    self._release()

    def _upload_until_closed(self) -> None:
        signals, state = self.signals, self.state
        wait: float | None = 0.0
        while True:
            signals.wake.wait(wait)
            signals.wake.clear()
            if signals.closing.is_set():
                return
            try:
                error = self._upload_pass()
            except Exception as exc:  # e.g. the spool removed under a call that outlived close()
                if signals.closing.is_set():
                    return
                error = f"{type(exc).__name__}: {exc}"
            with signals.passes:
                state.last_error = error
                state.pass_count += 1
                signals.passes.notify_all()
            if error and state.busy_since is not None:  # locked by a sweep's other processes
                busy_for = time.monotonic() - state.busy_since
                if busy_for < BUSY_PATIENCE_S:
                    wait = random.uniform(*BUSY_RETRY_S)
                    continue
            if error:
                signals.started.set()  # the caller stops waiting for a run id: we are offline
                if not (state.stuck and state.run_id is None):  # the caller raises for that one
                    self.warn_offline()
            wait = RETRY_S if error else None


# Writers not yet closed, flushed at normal interpreter exit.
_OPEN: set[RunWriter] = set()
# Every writer of this process, for ``_mark_forked``.
_WRITERS: weakref.WeakSet[RunWriter] = weakref.WeakSet()


def _mark_forked() -> None:
    """In a forked child (a DataLoader worker), every inherited writer delivers what it is given
    straight to the spool (``_log_from_fork``): the child has none of its threads. A flag set
    here, rather than ``os.getpid()`` compared on every call (a system call), keeps the check off
    the hot path; a fork made by C code without CPython's fork hooks is not seen, as CPython
    itself does not support one that goes on running Python."""
    for writer in list(_WRITERS):
        writer._forked = True


os.register_at_fork(after_in_child=_mark_forked)
# Open writers by MLflow run id, so ``log_metrics`` inside a plain ``mlflow.start_run()`` finds the
# writer already open for that run (the context provider's, or one it opened before), and the
# integrations' records for a run go through the one writer of that run.
_BY_RUN_ID: dict[str, RunWriter] = {}
_by_run_id_lock = threading.Lock()


def open_writer(uri: str, root: Path | None = None) -> RunWriter:
    """A started writer on a new spool (under a temporary directory, with one warning, where the
    spool cannot be created)."""
    spool, problem = open_spool(root)
    writer = RunWriter(spool, uri).start()
    if problem:
        writer.warn_once("disk", problem)
    return writer


def _start_record(run_id: str, uri: str) -> JoinRun:
    return JoinRun(run_id, strip_url_credentials(uri))


def writer_for_run(run_id: str, uri: str, root: Path | None = None) -> RunWriter:
    """The writer of an existing run (one this package did not create), opened on first use
    with a spool under ``root`` (default: the configured spool root)."""
    with _by_run_id_lock:
        writer = _BY_RUN_ID.get(run_id)
        if writer is None:
            writer = open_writer(uri, root)
            writer.record(_start_record(run_id, uri))
            _BY_RUN_ID[run_id] = writer
        return writer


def send_to_run(
    run_id: str, uri: str, items: list[Item], root: Path | None = None, *, at_exit: bool = False
) -> RunWriter | None:
    """Queue events (artifacts with their producers) for an existing run on its writer, and
    return it. At interpreter exit, with no writer open for it, nothing may start a thread
    (Python 3.12+), so they are spooled and uploaded on the calling thread instead (None is
    returned); what fails stays spooled."""
    if not at_exit or run_id in _BY_RUN_ID:
        writer = writer_for_run(run_id, uri, root)
        for event, data in items:
            writer.record(event, data)
        return writer
    spool, _ = open_spool(root)
    writer = RunWriter(spool, uri)  # never started: used for its spooling alone
    for event, data in [(_start_record(run_id, uri), None), *items]:
        writer.record(event, data)
    writer.drain()
    from .client import reachable
    from .sync import replay

    if reachable(uri):
        replay(spool, uri, search=False)
    writer._release()
    return None


@atexit.register
def _close_all() -> None:
    """Flush every open writer at normal interpreter exit (each within CLOSE_TIMEOUT_S)."""
    for writer in list(_OPEN):
        if writer._forked:  # inherited by a fork: the parent closes it
            continue
        try:
            writer.close(CLOSE_TIMEOUT_S)
        except Exception as exc:  # exit must go on whatever a writer does
            _log.debug("closing %s at exit failed: %s", writer.spool.path, exc)
