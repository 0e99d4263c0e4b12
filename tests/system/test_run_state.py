"""Run state is explicit: each run logs to its own store through its own writer, metric values go
to the run of the calling context, and MLflow's tracking URI and the environment are left alone.
Real sqlite stores, real CPU training of the digits CNN in two threads at once."""

from __future__ import annotations

import contextvars
import os
import shutil
import threading
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import mlflow
import pytest
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint.cli.main import main as cli
from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.run import current


def store(template: Path, folder: Path) -> str:
    """A sqlite store of its own, copied from conftest's migrated template."""
    folder.mkdir(parents=True)
    shutil.copyfile(template, folder / "mlflow.db")
    return f"sqlite:///{folder / 'mlflow.db'}"


def only_run(uri: str, experiment: str) -> Any:
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment} in {uri}"
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1, [r.info.run_name for r in runs]
    return runs[0]


def steps_of(uri: str, run_id: str, key: str) -> list[int]:
    return sorted(m.step for m in MlflowClient(tracking_uri=uri).get_metric_history(run_id, key))


def test_two_trainings_in_two_threads_keep_their_own_metrics_and_leave_the_uri_alone(
    sqlite_tracking_uri: str, mlflow_db_template: Path, tmp_path: Path, digits: ModuleType
) -> None:
    """The process's tracking URI is a third store; each training names its own. Both train at
    the same time (a barrier at their first step), each logging a metric named after itself."""
    uris = {name: store(mlflow_db_template, tmp_path / f"store-{name}") for name in "AB"}
    steps = {"A": 12, "B": 20}
    barrier = threading.Barrier(2, timeout=120)
    errors: list[BaseException] = []

    def training(name: str) -> None:
        loader, _ = digits.make_loaders(batch_size=32, num_workers=0)

        def on_step(step: int) -> None:
            if step == 0:
                barrier.wait()
            mfp.log_metrics({f"loss_{name}": float(step)}, step=step)

        @mfp.fingerprinted(experiment="threads", run_name=name, seed=0, tracking_uri=uris[name])
        def train() -> dict[str, float]:
            return digits.train(loader, epochs=1, max_steps=steps[name], on_step=on_step)

        try:
            train()
        except BaseException as exc:  # surfaced by the main thread below
            errors.append(exc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FingerprintWarning)  # "mlflow.log_* go elsewhere"
        threads = [threading.Thread(target=training, args=(name,)) for name in "AB"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
    assert not errors, errors

    for name, other in (("A", "B"), ("B", "A")):
        run = only_run(uris[name], "threads")
        assert run.info.run_name == name
        assert run.info.status == "FINISHED"
        keys = set(run.data.metrics)
        assert f"loss_{name}" in keys, keys
        assert f"loss_{other}" not in keys, keys
        assert steps_of(uris[name], run.info.run_id, f"loss_{name}") == list(range(steps[name]))
        assert steps_of(uris[name], run.info.run_id, "loss") == list(range(steps[name]))
    assert mlflow.get_tracking_uri() == sqlite_tracking_uri
    assert os.environ["MLFLOW_TRACKING_URI"] == sqlite_tracking_uri
    assert MlflowClient(tracking_uri=sqlite_tracking_uri).get_experiment_by_name("threads") is None


def test_a_run_with_its_own_uri_leaves_mlflows_uri_and_says_where_fluent_calls_go(
    sqlite_tracking_uri: str, mlflow_db_template: Path, tmp_path: Path
) -> None:
    own = store(mlflow_db_template, tmp_path / "own")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with mfp.fingerprinted(experiment="own", tracking_uri=own) as run:
            run.log_metrics({"x": 1.0}, step=0)
            assert mlflow.active_run() is None  # not attached: fluent calls would miss it
    assert mlflow.get_tracking_uri() == sqlite_tracking_uri
    assert os.environ["MLFLOW_TRACKING_URI"] == sqlite_tracking_uri
    assert only_run(own, "own").data.metrics == {"x": 1.0}
    messages = [str(w.message) for w in caught if w.category is FingerprintWarning]
    assert any("mlflow.log_* calls in train() do not go to it" in m for m in messages), messages


def test_a_run_on_mlflows_uri_is_this_threads_active_run_during_train(
    sqlite_tracking_uri: str,
) -> None:
    seen: dict[str, Any] = {}

    def other_thread() -> None:
        seen["other"] = mlflow.active_run()

    @mfp.fingerprinted(experiment="fluent")
    def train() -> None:
        mlflow.log_param("lr", "0.1")  # the user's own fluent call lands in our run
        seen["here"] = mlflow.active_run()
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()

    train()
    run = only_run(sqlite_tracking_uri, "fluent")
    assert run.data.params["lr"] == "0.1"
    assert seen["here"].info.run_id == run.info.run_id
    assert seen["other"] is None  # the fluent stack is per thread
    assert mlflow.active_run() is None


def test_a_thread_without_the_runs_context_logs_into_the_only_open_run_else_nowhere(
    sqlite_tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads do not inherit context variables: with one run open, a helper thread's values go
    to it; with two open, to neither (one warning); a copied context logs into its own run."""
    monkeypatch.setattr(current, "_warned", threading.Event())

    def in_thread(values: dict[str, float], context: contextvars.Context | None = None) -> None:
        target = mfp.log_metrics if context is None else context.run
        args = (values,) if context is None else (mfp.log_metrics, values)
        thread = threading.Thread(target=target, args=args)  # type: ignore[arg-type]
        thread.start()
        thread.join()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with mfp.fingerprinted(experiment="one", nested=True) as one:
            in_thread({"helper": 1.0})
            with mfp.fingerprinted(experiment="two", nested=True) as two:
                in_thread({"ambiguous": 2.0})
                in_thread({"own": 3.0}, contextvars.copy_context())
                assert two.flush(60)
            assert one.flush(60)
    assert only_run(sqlite_tracking_uri, "one").data.metrics == {"helper": 1.0}
    assert only_run(sqlite_tracking_uri, "two").data.metrics == {"own": 3.0}
    refused = [str(w.message) for w in caught if "values dropped" in str(w.message)]
    assert len(refused) == 1, refused
    assert "2 fingerprinted runs are open" in refused[0], refused


def test_the_cli_does_not_set_the_tracking_uri_variable(
    sqlite_tracking_uri: str, mlflow_db_template: Path, tmp_path: Path, restore_environ: None
) -> None:
    other = store(mlflow_db_template, tmp_path / "other")
    with mfp.fingerprinted(experiment="cli", tracking_uri=other) as run:
        pass
    assert run.run_id is not None
    assert cli(["show", run.run_id, "--tracking-uri", other, "--format", "json"]) == 0
    assert os.environ["MLFLOW_TRACKING_URI"] == sqlite_tracking_uri
    assert mlflow.get_tracking_uri() == sqlite_tracking_uri
