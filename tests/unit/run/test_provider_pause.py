"""The context provider's pause (``run/provider_pause.py``): on inside the block, off after it,
and only in the context that paused it (a run starting in another thread still gets its tags)."""

from __future__ import annotations

import threading

import pytest

from mlflow_fingerprint.run.provider_pause import pause_provider, provider_paused


def test_paused_inside_the_block_only_even_when_it_raises() -> None:
    assert not provider_paused()
    with pause_provider():
        assert provider_paused()
    assert not provider_paused()
    with pytest.raises(RuntimeError), pause_provider():
        raise RuntimeError
    assert not provider_paused()


def test_another_thread_is_not_paused() -> None:
    seen: list[bool] = []
    with pause_provider():
        thread = threading.Thread(target=lambda: seen.append(provider_paused()))
        thread.start()
        thread.join()
    assert seen == [False]
