"""``with mlflow.start_run():`` inside a decorated ``train()`` works as it does undecorated: it
opens a child run nested under the decorator's run (undecorated it opens a top-level run; with
the decorator's run active, MLflow would otherwise refuse with "already active")."""

from __future__ import annotations

from pathlib import Path

import mlflow
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout


def test_start_run_inside_a_decorated_train_nests_under_its_run(
    sqlite_tracking_uri: str, spool_dir: Path
) -> None:
    @mfp.fingerprinted(experiment="nesting", run_name="outer")
    def train() -> str:
        mlflow.log_param("where", "outer")
        with mlflow.start_run(run_name="inner") as inner:
            mlflow.log_metric("inner_loss", 0.25)
        mlflow.log_metric("outer_loss", 0.5)  # back in the decorator's run
        return inner.info.run_id

    inner_id = train()
    client = MlflowClient()
    experiment = client.get_experiment_by_name("nesting")
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert set(runs) == {"outer", "inner"}
    outer, inner = runs["outer"], runs["inner"]
    assert inner.info.run_id == inner_id
    assert inner.data.tags[layout.MLFLOW_PARENT_RUN_ID] == outer.info.run_id
    assert inner.data.metrics == {"inner_loss": 0.25}
    assert inner.info.status == "FINISHED"
    assert outer.data.params["where"] == "outer"
    assert outer.data.metrics["outer_loss"] == 0.5
    assert outer.info.status == "FINISHED"
    assert mlflow.active_run() is None
    # outside a decorated run, MLflow's own rule stands: no nesting without nested=True
    with mlflow.start_run(run_name="plain"):
        assert mlflow.active_run() is not None
