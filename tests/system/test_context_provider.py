"""A plain ``mlflow.start_run()`` gets the fingerprint through the installed entry point."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from importlib.metadata import entry_points
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient
from mlflow.tracking.context.registry import _run_context_provider_registry

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.run.context_provider import FingerprintRunContextProvider

REQUIRED = (
    layout.TAG_HASH,
    layout.TAG_HASH_ENV,
    layout.TAG_TORCH,
    layout.TAG_GPU,
    layout.TAG_GIT_COMMIT,
    layout.TAG_SCHEMA,
)


def wait_for_artifact(run_id: str, path: str, timeout_s: float = 30.0) -> bool:
    client = MlflowClient()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(a.path == path for a in client.list_artifacts(run_id, layout.ARTIFACT_DIR)):
            return True
        time.sleep(0.2)
    return False


def test_provider_is_registered_through_the_entry_point() -> None:
    names = [ep.value for ep in entry_points(group="mlflow.run_context_provider")]
    assert "mlflow_fingerprint.run.context_provider:FingerprintRunContextProvider" in names
    assert any(isinstance(p, FingerprintRunContextProvider) for p in _run_context_provider_registry)


def test_plain_start_run_gets_tags_artifact_and_fast_metrics(sqlite_tracking_uri: str) -> None:
    with mlflow.start_run() as run:
        for step in range(10):
            mfp.log_metrics({"loss": 1.0 / (step + 1)}, step=step)
        mlflow.log_metric("plain", 1.0)
    tags = MlflowClient().get_run(run.info.run_id).data.tags
    for key in REQUIRED:
        assert key in tags, key
    assert tags[layout.INTERNAL_SPOOL_ID]
    assert wait_for_artifact(run.info.run_id, layout.FINGERPRINT_ARTIFACT)
    fp = Fingerprint.load(
        mlflow.artifacts.download_artifacts(
            run_id=run.info.run_id, artifact_path=layout.FINGERPRINT_ARTIFACT
        )
    )
    assert fp.hashes["fingerprint"] == tags[layout.TAG_HASH]
    # MLflow's Default experiment, kindless until the fingerprint joined a run in it
    experiment = MlflowClient().get_experiment(run.info.experiment_id)
    assert experiment.tags[layout.MLFLOW_EXPERIMENT_KIND] == layout.EXPERIMENT_KIND_TRAINING
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        history = MlflowClient().get_metric_history(run.info.run_id, "loss")
        if len(history) == 10:
            break
        time.sleep(0.2)
    assert [m.step for m in history] == list(range(10))


def _script(body: str) -> str:
    return textwrap.dedent(f"""
        import mlflow, torch
        mlflow.set_tracking_uri({mlflow.get_tracking_uri()!r})
        mlflow.set_experiment("subprocess")
        {body}
    """)


def run_python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=180,
        check=False,
    )


def test_artifact_is_uploaded_by_exit_and_the_switch_turns_it_off(
    sqlite_tracking_uri: str, tmp_path: Path, spool_dir: Path
) -> None:
    code = _script("""
        import os
        from mlflow.tracking import MlflowClient
        from mlflow.tracking.context.registry import resolve_tags

        with mlflow.start_run(run_name="plain"):
            pass
        # As Lightning's MLFlowLogger does: tags resolved, run made with the client, so it is on
        # no run stack; the process exits at once, so only the exit pass can attach it.
        client = MlflowClient()
        experiment = client.get_experiment_by_name("subprocess").experiment_id
        client.create_run(experiment, tags=resolve_tags({"mlflow.runName": "client"}))
        os.environ["MLFLOW_FINGERPRINT_DISABLE"] = "1"
        with mlflow.start_run(run_name="disabled"):
            pass
        """)
    done = run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr

    client = MlflowClient()
    exp = client.get_experiment_by_name("subprocess")
    runs = {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}
    for name in ("plain", "client"):
        assert layout.TAG_HASH in runs[name].data.tags, name
        # The process exited right after the run: the artifact was uploaded by then, not later.
        names = {a.path for a in client.list_artifacts(runs[name].info.run_id, layout.ARTIFACT_DIR)}
        assert {layout.FINGERPRINT_ARTIFACT, layout.PACKAGES_ARTIFACT} <= names, name
    assert not any(k.startswith(layout.TAG_PREFIX) for k in runs["disabled"].data.tags)
    assert list(spool_dir.iterdir()) == []  # everything stored: no spool left behind


def test_provider_adds_little_to_start_run(
    sqlite_tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def start_run_seconds() -> float:
        t0 = time.perf_counter()
        with mlflow.start_run():
            pass
        return time.perf_counter() - t0

    start_run_seconds()  # warm both paths: imports, the store, the first capture
    # The fastest of several: what the code costs, with the machine's noise left out.
    with_provider = min(start_run_seconds() for _ in range(5))
    monkeypatch.setenv("MLFLOW_FINGERPRINT_DISABLE", "1")
    without = min(start_run_seconds() for _ in range(5))
    assert with_provider - without < 0.25, (with_provider, without)


def test_fingerprinted_runs_do_not_call_the_provider(
    sqlite_tracking_uri: str, spool_dir: Path
) -> None:
    @mfp.fingerprinted(experiment="once")
    def train() -> None:
        pass

    train()
    client = MlflowClient()
    [run] = client.search_runs([client.get_experiment_by_name("once").experiment_id])
    assert run.data.tags[layout.TAG_STAGE] == "end"
    # The wrapper's spool is gone once stored; a provider capture would have left its own.
    assert list(spool_dir.iterdir()) == []
