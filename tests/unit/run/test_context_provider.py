"""The run context provider (``run/context_provider.py``) on its decisions: when it adds tags
(not when turned off, not for ``fingerprinted``'s own runs), a trainer callback taking its
run over, and a fingerprint whose run never came, dropped after a while. Runs opened with
``mlflow.start_run`` and tagged by it are ``tests/system``'s."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import mlflow  # noqa: F401  first, as in a run: mlflow loads the provider by its entry point
import pytest

from mlflow_fingerprint.run import context_provider as provider
from mlflow_fingerprint.run.provider_pause import pause_provider
from mlflow_fingerprint.settings import DISABLE


def test_the_provider_stays_out_when_turned_off_or_for_fingerprinted_s_own_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DISABLE, raising=False)
    tags = provider.FingerprintRunContextProvider()
    assert tags.in_context()
    with pause_provider():
        assert not tags.in_context()
    monkeypatch.setenv(DISABLE, "1")
    assert not tags.in_context()


@pytest.fixture
def pending(tmp_path: Path) -> Iterator[provider._Pending]:
    """A fingerprint waiting for its run, in the provider's queue for the test's duration."""
    waiting = provider._Pending(
        "spool-test", {"start": True}, set(), "sqlite:///x.db", tmp_path, time.monotonic()
    )
    with provider._lock:
        provider._pending.append(waiting)
    yield waiting
    with provider._lock:
        if waiting in provider._pending:
            provider._pending.remove(waiting)


def test_a_callback_taking_the_run_over_drops_the_queued_start_fingerprint(
    pending: provider._Pending,
) -> None:
    other = provider._Pending(
        "another", {"other": True}, set(), "sqlite:///x.db", pending.spool_root, time.monotonic()
    )
    with provider._lock:
        provider._pending.append(other)
    try:
        provider.take_over("spool-test")
        # the callback's later update (its first step) can no more be overwritten by this one
        assert pending not in provider._pending
        assert other in provider._pending
    finally:
        with provider._lock:
            provider._pending.remove(other)


def test_taking_over_waits_for_an_attach_pass_under_way(pending: provider._Pending) -> None:
    import threading

    provider._pass_lock.acquire()
    done = threading.Event()
    thread = threading.Thread(target=lambda: (provider.take_over("spool-test"), done.set()))
    thread.start()
    try:
        assert not done.wait(0.2)  # the pass holds its lock: its write is queued first
        assert pending in provider._pending
    finally:
        provider._pass_lock.release()
    thread.join(5)
    assert done.is_set()
    assert pending not in provider._pending


def test_a_fingerprint_whose_run_never_came_is_dropped_after_a_minute(
    pending: provider._Pending,
) -> None:
    now = time.monotonic()
    pending.searched_at = now  # searched a moment ago: no search now
    pending.since = now - 1.0
    provider._attach_found(final=False)
    assert pending in provider._pending  # young: kept for the run to appear
    pending.since = now - provider.GIVE_UP_S - 1.0
    provider._attach_found(final=False)
    assert pending not in provider._pending
