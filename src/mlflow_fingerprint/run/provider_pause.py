"""The context provider's pause: while ``fingerprinted`` resolves the tags of the run it creates,
MLflow's run context providers are asked for theirs, ours among them; ours must stay out, as the
run gets its fingerprint from ``fingerprinted`` itself. A context variable, so a run starting in
another thread at the same moment still gets the provider's tags."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

_paused: contextvars.ContextVar[bool] = contextvars.ContextVar("mfp_starting", default=False)


def provider_paused() -> bool:
    """True while ``fingerprinted`` resolves its own run's tags: the context provider stays out."""
    return _paused.get()


@contextmanager
def pause_provider() -> Iterator[None]:
    """Keep the context provider out of the tags resolved inside the block."""
    token = _paused.set(True)
    try:
        yield
    finally:
        _paused.reset(token)
