"""The run context provider (``run/context_provider.py``) on its decisions: when it adds tags
(not when turned off, not for ``fingerprinted``'s own runs), the fuller fingerprint a trainer
callback hands it, and a fingerprint whose run never came, dropped after a while. Runs opened
with ``mlflow.start_run`` and tagged by it are ``tests/system``'s."""

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


def test_a_callback_s_fuller_fingerprint_replaces_the_one_queued(
    pending: provider._Pending,
) -> None:
    provider.supersede("spool-test", {"end": True})
    assert pending.fingerprint == {"end": True}
    provider.supersede("another", {"other": True})
    assert pending.fingerprint == {"end": True}


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
