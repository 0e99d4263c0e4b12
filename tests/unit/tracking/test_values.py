"""Values MLflow cannot store (a bad step, a non-string or invalid name, a number too large for a
float) are refused at ``log_metrics``, with one warning per kind, without raising into training,
and never reach the uploader: everything valid logged around them is stored exactly once and
the run ends FINISHED."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint.tracking.values import STEP_MAX, STEP_MIN, storable
from support.writer_values import check_stored, log_mixed, open_writer, ours


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (None, None),
        (3, 3),
        (np.int64(7), 7),
        (torch.tensor(5), 5),
        (STEP_MAX, STEP_MAX),
        (STEP_MIN, STEP_MIN),
    ],
)
def test_integer_steps_are_converted(step: Any, expected: int | None) -> None:
    checked = storable({"loss": 0.5}, step)
    assert checked.refused == []
    assert checked.step == expected
    assert type(checked.step) in (int, type(None))


@pytest.mark.parametrize(
    "step", ["epoch-1", 2**64, STEP_MIN - 1, True, 1.5, torch.tensor([1, 2]), torch.tensor(1.5)]
)
def test_bad_steps_refuse_the_call(step: Any) -> None:
    checked = storable({"loss": 0.5}, step)
    assert checked.values == []
    assert [r.kind for r in checked.refused] == ["step"]


def test_bad_keys_and_values_are_refused_one_by_one() -> None:
    checked = storable(
        {
            "ok": 1,
            1: 0.1,
            "bad name!": 2.0,
            "huge": 10**400,
            "text": "0.5",
            "complex": 1j,
            "array": np.array("epoch-3"),
            "tensor": torch.tensor(0.25),
            "nan": float("nan"),
        },
        0,
    )
    assert [k for k, _ in checked.values] == ["ok", "tensor", "nan"]
    assert sorted(r.kind for r in checked.refused) == [
        "key",
        "key",
        "value",
        "value",
        "value",
        "value",
    ]
    assert [r.kind for r in storable([("a", 1.0)], None).refused] == ["metrics"]


def test_writer_refuses_bad_values_and_stores_the_rest(
    sqlite_tracking_uri: str, spool_dir: Path
) -> None:
    writer, run_id = open_writer(sqlite_tracking_uri, spool_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log_mixed(writer.log_metrics)
        assert writer.close(60)
    check_stored(sqlite_tracking_uri, run_id, ours(caught))
    assert not writer.spool.path.exists()  # all stored: nothing left for sync


def test_decorated_run_finishes_with_every_valid_value(
    sqlite_tracking_uri: str, spool_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    @mfp.fingerprinted(experiment="values", run_name="mixed")
    def train() -> dict[str, float]:
        log_mixed(lambda values, step: mfp.log_metrics(values, step=step))
        return {"val_error": 0.1}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train()
    client = MlflowClient(sqlite_tracking_uri)
    [run] = client.search_runs([client.get_experiment_by_name("values").experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.metrics["val_error"] == 0.1
    # MLflow routes warnings to logging while a run is open (logging.captureWarnings)
    logged = [r.getMessage() for r in caplog.records if "FingerprintWarning" in r.getMessage()]
    check_stored(sqlite_tracking_uri, run.info.run_id, ours(caught) + logged)
