"""What ``fingerprinted`` itself did to a run (``run/decorator_record.py``): what each capture is
told, and ``fingerprint/run.json``, with a rerun's forced values redacted."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.run.apply import Overrides
from mlflow_fingerprint.run.decorator_record import SEEDED_BY, decorator_record, run_info
from mlflow_fingerprint.run.options import FingerprintOptions
from mlflow_fingerprint.run.prepare import prepare

CUBLAS = "CUBLAS_WORKSPACE_CONFIG"


def test_a_capture_is_told_the_seed_the_declared_values_and_the_call() -> None:
    options = FingerprintOptions(seed=1, batch_size=4)
    info = run_info(options, None, {"lr": 0.1}, "start")
    assert (info.requested_seed, info.seeded_by) == (1, SEEDED_BY)
    assert info.declared == {"batch_size": 4}  # num_workers was not declared
    assert (info.stage, dict(info.call)) == ("start", {"lr": 0.1})
    assert info.deterministic.mode == "off"
    assert info.first_step is None
    unseeded = run_info(FingerprintOptions(), None, {}, "end")
    assert unseeded.seeded_by is None


def test_run_json_holds_the_captures_and_a_rerun_s_values_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(CUBLAS, raising=False)
    overrides = Overrides({f"determinism.env.{CUBLAS}": ":4096:8", "seeds.requested": 3})
    prep = prepare(FingerprintOptions(), overrides, 5, lambda: None)
    prep.undo()
    options = FingerprintOptions(batch_size=4)
    record = decorator_record(options, prep, [{"stage": "start"}], 5, {":4096:8"})
    assert record["seed"] == {"requested": None, "seeded_by": None, "state_digests": None}
    assert record["declared"] == {"batch_size": 4, "num_workers": None}
    assert record["captures"] == [{"stage": "start"}]
    assert record["rerun"] == {
        "overrides": {f"determinism.env.{CUBLAS}": "***", "seeds.requested": 3},
        "actions": [f"{CUBLAS}=***"],
        "stop_after": 5,
        "stopped_at": 5,
    }
    shown = decorator_record(options, prep, [], None, None)  # nothing recorded: no secrets
    assert shown["rerun"]["overrides"][f"determinism.env.{CUBLAS}"] == ":4096:8"


def test_a_run_without_preparation_records_no_switch_and_no_rerun() -> None:
    record = decorator_record(FingerprintOptions(seed=2), None, [], None, set())
    assert record["seed"]["requested"] == 2
    assert record["seed"]["seeded_by"] == SEEDED_BY
    assert record["deterministic"]["requested"] == "off"
    assert record["rerun"] == {
        "overrides": {},
        "actions": [],
        "stop_after": None,
        "stopped_at": None,
    }
