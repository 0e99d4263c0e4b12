"""The run context provider: a plain ``mlflow.start_run()`` (and Lightning's MLFlowLogger, HF's
MLflowCallback) gets the ``fingerprint.*`` tags and the fingerprint artifact without our decorator.

MLflow asks providers for tags before the run exists, and MLflow 3 has no run-created or run-ended
hook, so the artifact cannot be logged from ``tags()``. What this does instead:

- ``tags()`` captures the fingerprint and returns its tags plus ``fingerprint.spool_id``, a fresh
  id (and, in a training ``fingerprint rerun`` started, the rerun's tags, so that a run opened
  with ``mlflow.start_run`` can be rerun as a decorated one can), and leaves the fingerprint
  with a per-process *attacher* thread;
- the attacher finds the run carrying that id: first in MLflow's in-process run stacks, where
  ``start_run`` puts it a moment later (no request); after two seconds also by a tag search (runs
  made with ``MlflowClient.create_run``, e.g. Lightning's); then it hands the artifacts to that
  run's spool writer, which uploads them off-thread (and takes ``mfp.log_metrics`` for that run);
- at normal exit, one last attach pass runs before the writers are flushed. Tags resolved for
  something that never became a run (a failed ``start_run``, a logged model, which MLflow also
  tags through providers) are dropped after a minute.

This module is imported by ``import mlflow`` (entry point discovery), so it imports nothing heavy
until ``tags()`` runs, and nothing it does may raise into MLflow: a failure costs the run its
fingerprint tags (with one warning), never the run. ``MLFLOW_FINGERPRINT_DISABLE=1`` turns the
provider off.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlflow.tracking.context.abstract_context import RunContextProvider

SCAN_S = 0.01
SEARCH_AFTER_S = 2.0
SEARCH_EVERY_S = 1.0
GIVE_UP_S = 60.0
EXIT_WAIT_S = 10.0
# How long a callback taking its run over waits for an attach pass under way (the training
# thread waits: a pass is milliseconds unless a search hangs on a slow server)
TAKE_OVER_WAIT_S = 2.0
# the attacher thread's name: its searches are not the caller's (a test that counts requests)
ATTACHER_THREAD = "mfp-attach"

_log = logging.getLogger("mlflow_fingerprint")


def disabled() -> bool:
    from ..settings import settings

    return settings().disabled


@dataclass
class _Pending:
    """A captured fingerprint waiting for the run its tags went to."""

    spool_id: str
    fingerprint: Any
    secrets: set[str]
    uri: str
    spool_root: Path  # as configured when the run started, not when it is found
    since: float
    searched_at: float = 0.0


_pending: list[_Pending] = []
_lock = threading.Lock()
_pass_lock = threading.Lock()
_wake = threading.Event()
_thread: list[threading.Thread] = []


class FingerprintRunContextProvider(RunContextProvider):
    """Adds the fingerprint tags to every run MLflow creates through ``resolve_tags``."""

    def in_context(self) -> bool:
        try:
            if disabled():
                return False
            from .provider_pause import provider_paused

            return not provider_paused()  # ``fingerprinted`` tags its own runs
        except Exception as exc:  # a broken install or environment must not break start_run
            _warn_failed(exc)
            return False

    def tags(self) -> dict[str, str]:
        try:
            return self._tags()
        except Exception as exc:
            _warn_failed(exc)
            return {}

    def _tags(self) -> dict[str, str]:
        import mlflow

        from .. import layout
        from ..capture import RunInfo, capture
        from ..redact import secret_env_values
        from ..settings import spool_root
        from ..tracking.tags import fingerprint_tags
        from .start import rerun_tags

        fp = capture(run=RunInfo(stage="start"))
        secrets = secret_env_values()
        pending = _Pending(
            uuid.uuid4().hex, fp, secrets, mlflow.get_tracking_uri(), spool_root(), time.monotonic()
        )
        _submit(pending)
        return {
            **fingerprint_tags(fp, secrets),
            layout.INTERNAL_SPOOL_ID: pending.spool_id,
            # what a rerun finds its run by, as a decorated run carries it
            **rerun_tags(os.environ),
        }


def take_over(spool_id: str) -> None:
    """A trainer callback records the run tagged ``spool_id`` whole itself (tags, params, every
    artifact) and updates its record later (the first step): the start fingerprint queued here
    for that run is dropped, so that an attach landing after the callback's update cannot put
    the older record back. A pass attaching it now is waited for (bounded), so its write, if
    any, is queued before the callback's."""
    waited = _pass_lock.acquire(timeout=TAKE_OVER_WAIT_S)
    try:
        with _lock:
            _pending[:] = [p for p in _pending if p.spool_id != spool_id]
    finally:
        if waited:
            _pass_lock.release()


def _warn_failed(exc: Exception) -> None:
    import warnings

    from ..errors import FingerprintWarning

    warnings.warn(
        f"mlflow-fingerprint: this run is not fingerprinted ({type(exc).__name__}: {exc})",
        FingerprintWarning,
        stacklevel=3,
    )


def _submit(pending: _Pending) -> None:
    with _lock:
        _pending.append(pending)
        if not _thread:
            thread = threading.Thread(target=_attach_loop, name=ATTACHER_THREAD, daemon=True)
            _thread.append(thread)
            thread.start()
            atexit.register(_attach_pass, final=True)  # runs before the writers' own flush
    _wake.set()


def _attach_loop() -> None:
    while True:
        _wake.wait(SCAN_S if _pending else None)
        _wake.clear()
        try:
            _attach_pass(final=False)
        except Exception as exc:  # keep attaching later runs whatever one of them does
            _log.debug("mlflow-fingerprint: attach pass failed: %s", exc)


def _attach_pass(final: bool) -> None:
    """Attach every pending fingerprint whose run can be found; drop those too old to ever be.
    One pass at a time: the exit pass waits (a little) for the attacher thread's."""
    if not _pass_lock.acquire(timeout=EXIT_WAIT_S if final else -1):
        return
    try:
        _attach_found(final)
    finally:
        _pass_lock.release()


def _attach_found(final: bool) -> None:
    from ..tracking import client as mlflow_io

    now = time.monotonic()
    for pending in list(_pending):
        run_id = mlflow_io.find_in_process(pending.spool_id)
        due = now - pending.searched_at >= SEARCH_EVERY_S
        if run_id is None and (final or (now - pending.since >= SEARCH_AFTER_S and due)):
            pending.searched_at = now
            run_id = _search(pending)
        if run_id is not None:
            _attach(pending, run_id, final)
        elif final or now - pending.since >= GIVE_UP_S:
            _log.debug("mlflow-fingerprint: no run tagged %s; dropped", pending.spool_id)
        else:
            continue
        with _lock:
            if pending in _pending:  # not taken over by a callback meanwhile
                _pending.remove(pending)


def _search(pending: _Pending) -> str | None:
    from ..tracking import client as mlflow_io

    if not mlflow_io.reachable(pending.uri):
        return None
    try:
        return mlflow_io.search_run(mlflow_io.client(pending.uri), pending.spool_id)
    except (mlflow_io.Unreachable, mlflow_io.Rejected):
        return None


def _attach(pending: _Pending, run_id: str, final: bool) -> None:
    from . import publish

    items = publish.fingerprint_items(pending.fingerprint, pending.secrets, tags=False, side=True)
    publish.to_run(run_id, pending.uri, items, root=pending.spool_root, at_exit=final)
