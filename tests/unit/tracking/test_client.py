"""Joining the user's own ``mlflow.start_run``: while a decorated run is attached, a plain
``with mlflow.start_run():`` nests under it; once it is detached, ``mlflow.start_run`` is MLflow's
own function again (it used to stay replaced for the rest of the process), also when two runs in
two threads end in the other order."""

from __future__ import annotations

import threading
from pathlib import Path

import mlflow
from mlflow.tracking import MlflowClient, fluent

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.tracking.client import fluent_attach, fluent_detach


def new_run(name: str):
    client = MlflowClient()
    experiment = client.create_experiment(f"hook-{name}")
    return client.create_run(experiment, run_name=name)


def test_a_decorated_run_puts_mlflows_start_run_back_when_it_ends(
    sqlite_tracking_uri: str, spool_dir: Path
) -> None:
    own = mlflow.start_run

    @mfp.fingerprinted(experiment="hook", run_name="outer", quiet=True)
    def train() -> tuple[object, str]:
        with mlflow.start_run(run_name="inner") as inner:
            pass
        return mlflow.start_run, inner.data.tags[layout.MLFLOW_PARENT_RUN_ID]

    during, parent = train()
    assert during is not own  # replaced while the run was attached...
    assert mlflow.start_run is own  # ...and MLflow's own again once it ended
    assert fluent.start_run is own
    outer = MlflowClient().search_runs(
        [MlflowClient().get_experiment_by_name("hook").experiment_id],
        filter_string="attributes.run_name = 'outer'",
    )[0]
    assert parent == outer.info.run_id


def test_runs_detached_in_the_other_order_leave_mlflows_own_start_run(
    sqlite_tracking_uri: str,
) -> None:
    own = mlflow.start_run
    first = fluent_attach(new_run("first"))
    assert first is not None
    attached = threading.Event()
    detach = threading.Event()
    nested_parent: list[str] = []

    def other_thread() -> None:
        second = fluent_attach(new_run("second"))
        assert second is not None
        attached.set()
        detach.wait(30)
        with mlflow.start_run(run_name="child") as child:  # still nests under this thread's run
            nested_parent.append(child.data.tags[layout.MLFLOW_PARENT_RUN_ID])
        fluent_detach(second)
        nested_parent.append(second.run_id)

    thread = threading.Thread(target=other_thread)
    thread.start()
    assert attached.wait(30)
    fluent_detach(first)  # the first run ends while the second is still attached
    assert mlflow.start_run is not own  # the second thread's hook is still in place
    detach.set()
    thread.join(30)
    assert nested_parent[0] == nested_parent[1]
    assert mlflow.start_run is own
    assert fluent.start_run is own


def test_outside_an_attached_run_mlflows_own_rule_stands(sqlite_tracking_uri: str) -> None:
    """Another thread's attached run nests nothing here: a run started in this thread is a
    top-level run, and a second one, unnested, is refused as MLflow refuses it."""
    hook = fluent_attach(new_run("elsewhere"))
    assert hook is not None
    done = threading.Event()
    seen: list[object] = []

    def plain() -> None:
        with mlflow.start_run(run_name="plain") as run:
            seen.append(run.data.tags.get(layout.MLFLOW_PARENT_RUN_ID))
            try:
                mlflow.start_run(run_name="again")
            except Exception as exc:  # MLflow: "Run with UUID ... is already active"
                seen.append(type(exc).__name__)
        done.set()

    thread = threading.Thread(target=plain)
    thread.start()
    thread.join(30)
    fluent_detach(hook)
    assert done.is_set()
    assert seen == [None, "Exception"]
