"""A run writer fed valid values around every kind of bad one, and the check of what it stored:
shared by the unit test on a sqlite store and the system test on a real ``mlflow server``."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from mlflow.tracking import MlflowClient

from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.tracking.events import JoinRun
from mlflow_fingerprint.tracking.spool import Spool
from mlflow_fingerprint.tracking.uploader import RunWriter

from .stored import metric_pairs


def open_writer(uri: str, root: Path) -> tuple[RunWriter, str]:
    client = MlflowClient(uri)
    run = client.create_run(client.create_experiment("values"))
    writer = RunWriter(Spool.create(root), uri).start()
    writer.record(JoinRun(run.info.run_id))
    return writer, run.info.run_id


def log_mixed(log: Any) -> None:
    """Valid values around every kind of bad one; each call must return normally."""
    for step in range(5):
        log({"loss": step / 10}, step)
        log({"loss": 9.0}, "epoch-1")
        log({"loss": 9.0}, 2**64)
        log({"loss": 9.0}, True)
        log({"acc": 0.9 + step / 100, 1: 0.1}, torch.tensor(step))
        log({"x": 10**400, "y": float(step)}, np.int64(step))


def ours(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if w.category is FingerprintWarning]


def check_stored(uri: str, run_id: str, messages: list[str]) -> None:
    client = MlflowClient(uri)
    assert metric_pairs(client, run_id, "loss") == [(s, s / 10) for s in range(5)]
    assert metric_pairs(client, run_id, "acc") == [(s, 0.9 + s / 100) for s in range(5)]
    assert metric_pairs(client, run_id, "y") == [(s, float(s)) for s in range(5)]
    assert set(client.get_run(run_id).data.metrics) - {"val_error"} == {"loss", "acc", "y"}
    refusals = [m for m in messages if "refused" in m or "not valid" in m]
    assert len(refusals) == 3, messages  # one per kind: step, key, value
    outage = ("not answering", "could not be used", "is locked")  # a server's, a file's
    assert not any(o in m for m in messages for o in outage), messages  # not taken for one
