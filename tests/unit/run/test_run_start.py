"""What a decorated ``train()`` waits for before its first line: the run's creation, not the
serialising and scanning of its fingerprint record, which the spool thread does once the run
exists."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.model.fingerprint import Fingerprint


def test_the_start_record_is_serialised_off_the_callers_thread(
    sqlite_tracking_uri: str, spool_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    to_json = Fingerprint.to_json

    def recorded(self: Fingerprint, *args: Any, **kwargs: Any) -> str:
        threads.append(threading.current_thread().name)
        return to_json(self, *args, **kwargs)

    monkeypatch.setattr(Fingerprint, "to_json", recorded)
    caller = threading.current_thread().name
    before_first_line: list[str] = []

    @mfp.fingerprinted(experiment="start-path")
    def train() -> str:
        before_first_line.extend(threads)
        run = mlflow.active_run()
        assert run is not None
        return run.info.run_id

    run_id = train()
    assert caller not in before_first_line
    assert threads  # the record was written, by the spool thread or at the end
    client = MlflowClient()
    names = {a.path for a in client.list_artifacts(run_id, layout.ARTIFACT_DIR)}
    assert layout.FINGERPRINT_ARTIFACT in names
