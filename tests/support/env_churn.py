"""A thread that sets and unsets an environment variable without pause, as MLflow's telemetry
does once (offline, its configuration fetch fails and it unsets ``_MLFLOW_TELEMETRY_SESSION_ID``)
while a program starts its first run. With the interpreter switching threads every microsecond,
a plain ``dict(os.environ)`` beside it fails about one time in six (measured here), so a test
run in its company meets the race it would otherwise meet by chance. The helper shows that race
is there before the test's body runs: a plain copy must fail within ``SHOWN_WITHIN_S``."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

NAME = "MFP_TEST_CHURN"
SHOWN_WITHIN_S = 2.0


@contextmanager
def churning_environment() -> Iterator[None]:
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            os.environ[NAME] = "1"
            os.environ.pop(NAME, None)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=churn, name="env-churn", daemon=True)
    thread.start()
    try:
        assert _plain_copy_fails(), "no plain copy of the environment failed: nothing is tested"
        yield
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
        os.environ.pop(NAME, None)


def _plain_copy_fails() -> bool:
    """Whether ``dict(os.environ)`` raises at least once within ``SHOWN_WITHIN_S``."""
    deadline = time.monotonic() + SHOWN_WITHIN_S
    while time.monotonic() < deadline:
        try:
            dict(os.environ)
        except (KeyError, RuntimeError):
            return True
    return False
