"""Making one tracking URI active for one test, with nothing left from earlier tests.

Shared by tests/conftest.py's fixtures and the team-server fixtures in ``support.fixtures``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

# Variables that would point a test's MLflow client or our spool somewhere outside the test.
_ISOLATE = (
    "MLFLOW_TRACKING_URI",
    "MLFLOW_EXPERIMENT_NAME",
    "MLFLOW_EXPERIMENT_ID",
    "MLFLOW_RUN_ID",
    "MLFLOW_FINGERPRINT_DISABLE",
)


@contextlib.contextmanager
def active_tracking_uri(uri: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Make ``uri`` the tracking URI (env and mlflow's global) for one test, with nothing left
    from earlier tests: variables pointing elsewhere, the experiment an earlier test made
    active (``mlflow.set_experiment``), runs left open."""
    import mlflow
    from mlflow.tracking import fluent

    for name in _ISOLATE:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(fluent, "_active_experiment_id", None)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    yield uri
    while mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(None)
