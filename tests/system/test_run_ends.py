"""Runs start only where they can be stored, and always end: a deleted experiment is one clear
error before training (as MLflow's ``set_experiment`` raises); whatever ``train()`` returns or
raises, the run ends FINISHED/FAILED/KILLED with what could be stored."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.errors import RunNotStarted


def only_run(experiment: str) -> Any:
    client = MlflowClient()
    [run] = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    return run


@pytest.mark.parametrize(
    "returned",
    [
        {"val_error": 0.1, "best": np.array("epoch-3")},
        {"val_error": 0.1, "z": torch.tensor(1 + 2j)},
        {"val_error": 0.1, "none": np.array(None)},
        {"val_error": 0.1, "huge": 10**400, 7: 0.5},
    ],
    ids=["text-array", "complex-tensor", "none-array", "huge-int"],
)
def test_whatever_train_returns_the_run_ends_finished_with_the_numbers(
    sqlite_tracking_uri: str, spool_dir: Path, returned: dict[Any, Any]
) -> None:
    @mfp.fingerprinted(experiment="returns", seed=0)
    def train() -> dict[Any, Any]:
        mfp.log_metrics({"loss": 0.5}, step=0)
        return returned

    assert train() is returned
    run = only_run("returns")
    assert run.info.status == "FINISHED"
    assert run.data.metrics == {"loss": 0.5, "val_error": 0.1}
    assert run.data.params[layout.PARAM_SEED] == "0"
    assert list(spool_dir.iterdir()) == []  # all stored: nothing left behind


def test_an_exception_with_an_unstorable_result_still_ends_failed(
    sqlite_tracking_uri: str, spool_dir: Path
) -> None:
    @mfp.fingerprinted(experiment="raises")
    def train() -> None:
        mfp.log_metrics({"loss": 1.0}, step=torch.tensor(0))
        raise RuntimeError("diverged")

    with pytest.raises(RuntimeError, match="diverged"):
        train()
    run = only_run("raises")
    assert run.info.status == "FAILED"
    assert run.data.metrics == {"loss": 1.0}


def test_a_deleted_experiment_is_one_clear_error_before_training(
    mlflow_server: str, spool_dir: Path
) -> None:
    client = MlflowClient()
    client.delete_experiment(client.create_experiment("gone"))
    trained = []
    torch.use_deterministic_algorithms(False)  # whatever an earlier test (a trainer) left on

    @mfp.fingerprinted(experiment="gone", seed=0)
    def train() -> None:
        trained.append(True)

    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RunNotStarted, match="experiment 'gone' is deleted"):
            train()
    promises = [str(w.message) for w in caught if "fingerprint sync" in str(w.message)]
    assert promises == []  # nothing is kept for a sync: the one error says it all
    assert time.monotonic() - started < 15
    assert trained == []
    assert list(spool_dir.iterdir()) == []  # only its start was spooled: nothing to sync
    assert torch.are_deterministic_algorithms_enabled() is False


def test_a_tracking_uri_no_client_can_read_is_one_clear_error_before_training(
    spool_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A password with a '/' written as it is: the URL's host would be the user name, so no
    value could ever be stored; nothing of the password reaches the error or a warning."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://user:pwQ7/Jq4-not-shown@127.0.0.1:1")
    trained = []

    @mfp.fingerprinted(experiment="raw", seed=0)
    def train() -> None:
        trained.append(True)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RunNotStarted, match="percent-encode it") as raised:
            train()
    said = [str(raised.value), *(str(w.message) for w in caught)]
    assert [line for line in said if "pwQ7" in line or "Jq4" in line] == [], said
    assert trained == []
    assert not spool_dir.exists()  # no spool made: nothing to sync
