"""A thread that sets and unsets an environment variable without pause, as MLflow's telemetry
does once (offline, its configuration fetch fails and it unsets ``_MLFLOW_TELEMETRY_SESSION_ID``)
while a program starts its first run. With the interpreter switching threads every microsecond,
a plain ``dict(os.environ)`` beside it fails about one time in six (measured here), so a test
run in its company meets the race it would otherwise meet by chance."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

NAME = "MFP_TEST_CHURN"


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
        yield
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
        os.environ.pop(NAME, None)
