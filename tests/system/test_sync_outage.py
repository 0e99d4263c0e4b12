"""Outages against a real ``mlflow server``: killed mid-run, or down from the start; training goes
on, the spool keeps everything, ``fingerprint sync`` uploads it once the server is back."""

from __future__ import annotations

import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import mlflow
import pytest
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main as cli
from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.model.fingerprint import Fingerprint
from support.mlflow_team import MlflowServer


def runs_named(experiment: str, name: str) -> list[Any]:
    client = MlflowClient()
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    return [r for r in client.search_runs([exp.experiment_id]) if r.info.run_name == name]


def ours(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, FingerprintWarning)]


def test_server_killed_at_step_50_of_200_then_sync_uploads_all_of_it(
    mlflow_server: str,
    mlflow_server_process: MlflowServer,
    spool_dir: Path,
    digits: ModuleType,
    capfd: pytest.CaptureFixture[str],
) -> None:
    server = mlflow_server_process
    loaders = digits.make_loaders(batch_size=32, num_workers=0)

    def kill_at_50(step: int) -> None:
        if step == 50:
            server.kill()

    @mfp.fingerprinted(experiment="outage", run_name="killed", seed=0, flush_timeout_s=5)
    def train(loader: Any, val_loader: Any) -> dict[str, float]:
        return digits.train(
            loader, epochs=10, val_loader=val_loader, max_steps=200, on_step=kill_at_50
        )

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = train(*loaders)  # must not raise
    assert result["steps"] == 200
    messages = ours(caught)
    assert len(messages) == 1, messages
    assert "fingerprint sync" in messages[0]
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert "Retrying" not in err
    assert list(spool_dir.iterdir()), "nothing was spooled"

    server.start()
    assert cli(["sync"]) == 0
    [run] = runs_named("outage", "killed")
    history = MlflowClient().get_metric_history(run.info.run_id, "loss")
    assert sorted(m.step for m in history) == list(range(200))
    assert run.info.status == "FINISHED"
    assert run.data.metrics["val_error"] == pytest.approx(result["val_error"])
    assert run.data.params[layout.PARAM_SEED] == "0"
    fp = Fingerprint.load(
        mlflow.artifacts.download_artifacts(
            run_id=run.info.run_id, artifact_path=layout.FINGERPRINT_ARTIFACT
        )
    )
    assert fp.hashes["fingerprint"] == run.data.tags[layout.TAG_HASH]
    assert list(spool_dir.iterdir()) == []  # all acknowledged: the spool is gone

    capfd.readouterr()
    assert cli(["sync"]) == 0
    assert "nothing to sync" in capfd.readouterr().out
    assert len(MlflowClient().get_metric_history(run.info.run_id, "loss")) == 200


def test_server_down_at_start_run_is_created_by_sync(
    mlflow_server: str,
    mlflow_server_process: MlflowServer,
    spool_dir: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    mlflow_server_process.kill()

    @mfp.fingerprinted(
        experiment="offline",
        run_name="never-online",
        seed=5,
        batch_size=16,
        tags={"team": "vision"},
    )
    def train() -> dict[str, float]:
        for step in range(30):
            mfp.log_metrics({"loss": 1.0 / (step + 1), "lr": 0.1}, step=step)
        return {"val_error": 0.25}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert train() == {"val_error": 0.25}
    assert len(ours(caught)) == 1

    capfd.readouterr()
    assert cli(["sync", "--dry-run"]) == 0
    out = capfd.readouterr().out
    assert "never-online: would upload 61 metric values" in out
    assert cli(["sync"]) == 2  # still down: one line, exit 2, nothing lost
    assert "unreachable" in capfd.readouterr().err
    assert len(list(spool_dir.iterdir())) == 1

    mlflow_server_process.start()
    assert cli(["sync"]) == 0
    [run] = runs_named("offline", "never-online")
    client = MlflowClient()
    assert run.info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "loss")] == list(range(30))
    assert run.data.metrics["val_error"] == 0.25
    assert run.data.tags["team"] == "vision"
    assert run.data.tags[layout.TAG_SEED] == "5"
    assert run.data.tags[layout.TAG_BATCH_SIZE] == "16"
    assert run.data.params == {layout.PARAM_BATCH_SIZE: "16", layout.PARAM_SEED: "5"}
    assert run.info.start_time < run.info.end_time
    names = {a.path for a in client.list_artifacts(run.info.run_id, layout.ARTIFACT_DIR)}
    assert layout.FINGERPRINT_ARTIFACT in names
    assert cli(["sync"]) == 0
    assert len(runs_named("offline", "never-online")) == 1
