"""One ``fingerprinted`` run (``run/lifecycle.py``) on the parts that need no open run: what a
returned dict logs as final metrics, the run's JSON files, and a run not opened yet (whose
metrics go nowhere). Opening, recording and closing runs is ``tests/system``'s
(``test_run_wrapper.py`` and the others)."""

from __future__ import annotations

import json
import math
from datetime import date

from mlflow_fingerprint.run.lifecycle import FingerprintRun, _final_metrics, _json
from mlflow_fingerprint.run.options import FingerprintOptions


def test_a_returned_dict_logs_its_numbers_and_leaves_the_rest_out() -> None:
    result = {"acc": 0.9, "loss": 1, "name": "resnet", "big": 10**400, "z": 1j, "ok": True}
    metrics = _final_metrics(result)
    assert metrics["acc"] == 0.9
    assert metrics["loss"] == 1.0
    assert "name" not in metrics
    assert "big" not in metrics
    assert "z" not in metrics
    assert all(isinstance(v, float) and math.isfinite(v) for v in metrics.values())
    assert _final_metrics([0.9]) == {}  # not a dict: not metrics
    assert _final_metrics(None) == {}


def test_a_run_file_is_indented_json_with_any_value_written_as_text() -> None:
    data = _json({"when": date(2026, 1, 2), "n": 1})
    assert json.loads(data) == {"when": "2026-01-02", "n": 1}
    assert data.startswith(b"{\n  ")


def test_a_run_not_opened_has_no_id_no_fingerprint_and_takes_no_metrics() -> None:
    run = FingerprintRun(FingerprintOptions(), [])
    assert run.run_id is None
    assert run.fingerprint is None
    assert run.spool_dir is None
    assert run.flush(0.1) is False
    run.log_metrics({"loss": 1.0}, 0)  # nowhere to go, and no error
    assert run._sink() is None
