"""The buffered metric writer against a real sqlite store, and a real crash."""

from __future__ import annotations

import threading
import time
import warnings
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.run import current
from mlflow_fingerprint.tracking.events import JoinRun
from mlflow_fingerprint.tracking.spool import Spool
from mlflow_fingerprint.tracking.uploader import RunWriter


def open_writer(uri: str, root: Path) -> tuple[RunWriter, str]:
    run = MlflowClient().create_run(MlflowClient().create_experiment("writer"))
    writer = RunWriter(Spool.create(root), uri).start()
    writer.record(JoinRun(run.info.run_id))
    return writer, run.info.run_id


def test_ten_thousand_values_cost_the_caller_microseconds_and_all_arrive(
    sqlite_tracking_uri: str, spool_dir: Path
) -> None:
    writer, run_id = open_writer(sqlite_tracking_uri, spool_dir)
    t0 = time.perf_counter()
    for step in range(10_000):
        writer.log_metrics({"loss": step / 10_000}, step=step)
    per_call = (time.perf_counter() - t0) / 10_000
    assert per_call < 50e-6, f"{per_call * 1e6:.1f} µs per call"  # sync log_metric: ~6-12 ms
    assert writer.close(60)
    history = MlflowClient().get_metric_history(run_id, "loss")
    assert sorted((m.step, m.value) for m in history) == [(s, s / 10_000) for s in range(10_000)]
    assert not writer.spool.path.exists()  # all stored: nothing left to sync


def test_bad_names_and_values_are_dropped_with_one_warning_each(
    sqlite_tracking_uri: str, spool_dir: Path
) -> None:
    writer, run_id = open_writer(sqlite_tracking_uri, spool_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            writer.log_metrics({"good": 1.0, "bad name!": 2.0, "text": "n/a"}, step=step)
        assert writer.close(60)
    messages = [str(w.message) for w in caught if w.category is FingerprintWarning]
    assert len(messages) == 2, messages
    assert MlflowClient().get_run(run_id).data.metrics == {"good": 1.0}


def test_log_metrics_without_any_run_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(current, "_warned", threading.Event())
    assert mlflow.active_run() is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mfp.log_metrics({"loss": 1.0})
        mfp.log_metrics({"loss": 2.0})
    assert len([w for w in caught if w.category is FingerprintWarning]) == 1
