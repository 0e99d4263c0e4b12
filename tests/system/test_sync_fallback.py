"""A spool that went to a temporary root (the configured one could not be written) is found by a
plain ``fingerprint sync``, as the warning promises."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main as cli
from mlflow_fingerprint.tracking.events import CreateRun, End
from mlflow_fingerprint.tracking.uploader import now_ms, open_writer


def test_a_spool_in_the_fallback_root_is_found_by_sync(
    sqlite_tracking_uri: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the spool root's parent should be")
    monkeypatch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(blocker / "spool"))  # cannot be created
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    down = "http://127.0.0.1:9"  # the server is down while the run trains
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer = open_writer(down)
        spool = writer.spool
        tags = {layout.INTERNAL_SPOOL_ID: spool.spool_id}
        writer.record(CreateRun(spool.spool_id, now_ms(), "fallback", None, "tmp", tags, down))
        for step in range(5):
            writer.log_metrics({"loss": step / 10}, step)
        writer.record(End("FINISHED", now_ms()))
        assert not writer.close(1)
    said = " ".join(str(w.message) for w in caught)
    assert "fingerprint sync" in said
    assert not spool.path.is_relative_to(blocker)
    capsys.readouterr()

    assert cli(["sync", "--tracking-uri", sqlite_tracking_uri]) == 0
    assert "tmp: uploaded 5 metric values" in capsys.readouterr().out
    client = MlflowClient()
    [run] = client.search_runs([client.get_experiment_by_name("fallback").experiment_id])
    assert sorted(m.step for m in client.get_metric_history(run.info.run_id, "loss")) == [
        0,
        1,
        2,
        3,
        4,
    ]
    assert not spool.path.parent.exists()  # the emptied temporary root is gone too
    assert cli(["sync", "--tracking-uri", sqlite_tracking_uri]) == 0
    assert "nothing to sync" in capsys.readouterr().out
