"""Metric histories: the sqlite fast path reads what MLflow's own API reads, sorted by step."""

from __future__ import annotations

import math
from pathlib import Path

from mlflow.tracking import MlflowClient

from mlflow_fingerprint.tracking import history


def test_sqlite_and_store_paths_read_the_same_history(sqlite_tracking_uri: str) -> None:
    client = MlflowClient(sqlite_tracking_uri)
    run_id = client.create_run(client.create_experiment("history")).info.run_id
    for step, value in [(2, 0.5), (0, 1.0), (1, float("nan")), (2, 0.25)]:
        client.log_metric(run_id, "loss", value, step=step)
    path = Path(sqlite_tracking_uri.removeprefix("sqlite:///"))
    fast = history.read_sqlite(path, run_id, ["loss", "absent"])["loss"]
    slow = history.read_store(client, run_id, ["loss"])["loss"]
    assert list(fast.steps) == list(slow.steps) == [0, 1, 2, 2]
    assert fast.values[0] == 1.0
    assert math.isnan(fast.values[1])
    assert list(fast.values[2:]) == [0.5, 0.25]  # logging order kept within a step
    assert list(slow.values[2:]) == [0.5, 0.25]
    assert len(history.fetch(client, sqlite_tracking_uri, run_id, ["absent"])["absent"]) == 0
