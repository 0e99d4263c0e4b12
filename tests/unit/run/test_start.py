"""What a decorated ``train()`` waits for before its first line: the run's creation, not the
serialising and scanning of its fingerprint record, which the spool thread does once the run
exists; and what must not stop its start being recorded: another thread changing the
environment meanwhile."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow.tracking import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.errors import FingerprintWarning
from mlflow_fingerprint.model.fingerprint import Fingerprint
from support.env_churn import churning_environment
from support.gitrepo import committed_repo, git


def test_the_start_record_is_serialised_off_the_callers_thread(
    sqlite_tracking_uri: str, spool_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    to_json = Fingerprint.to_json

    def recorded(self: Fingerprint, *args: Any, **kwargs: Any) -> str:
        threads.append(threading.current_thread().name)
        return to_json(self, *args, **kwargs)

    monkeypatch.setattr(Fingerprint, "to_json", recorded)
    caller = threading.current_thread().name
    before_first_line: list[str] = []

    @mfp.fingerprinted(experiment="start-path")
    def train() -> str:
        before_first_line.extend(threads)
        run = mlflow.active_run()
        assert run is not None
        return run.info.run_id

    run_id = train()
    assert caller not in before_first_line
    assert threads  # the record was written, by the spool thread or at the end
    client = MlflowClient()
    names = {a.path for a in client.list_artifacts(run_id, layout.ARTIFACT_DIR)}
    assert layout.FINGERPRINT_ARTIFACT in names


def test_a_thread_changing_the_environment_does_not_stop_the_start_being_recorded(
    sqlite_tracking_uri: str,
    spool_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MLflow's telemetry unsets a variable from its own thread just after ``import mlflow``
    (offline); a start reading the environment whole at that moment lost its whole record (the
    secret scan raised KeyError) or its git section (git's environment could not be copied)."""
    monkeypatch.chdir(committed_repo(tmp_path / "repo", {"train.py": "print('hi')\n"}))

    @mfp.fingerprinted(experiment="start-churn")
    def train() -> str | None:
        run = mlflow.active_run()
        return None if run is None else run.info.run_id

    with warnings.catch_warnings():
        warnings.simplefilter("error", FingerprintWarning)
        with churning_environment():
            run_ids = [train() for _ in range(3)]
    client = MlflowClient()
    for run_id in run_ids:
        assert run_id is not None
        tags = client.get_run(run_id).data.tags
        assert len(tags[layout.TAG_GIT_COMMIT]) == 40


def test_mlflows_own_tags_of_the_run_hold_no_credential(
    sqlite_tracking_uri: str, spool_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLflow's git context provider records the remote as the repository holds it, stripping
    ``user:pass@`` but not a password holding a '/' (its parser ends the host there)."""
    repo = committed_repo(tmp_path / "repo", {"train.py": "print('hi')\n"})
    git(repo, "remote", "add", "origin", "https://user:Zq9xF1p/w7751@github.com/o/r.git")
    monkeypatch.chdir(repo)
    monkeypatch.setattr("sys.argv", [str(repo / "train.py")])  # the script MLflow reads git of
    from mlflow.tracking.context.git_context import GitRunContext
    from mlflow.tracking.context.registry import _run_context_provider_registry

    for provider in _run_context_provider_registry:  # what an earlier test's run cached
        if isinstance(provider, GitRunContext):
            monkeypatch.setattr(provider, "_cache", {})

    @mfp.fingerprinted(experiment="start-tags")
    def train() -> str:
        run = mlflow.active_run()
        assert run is not None
        return run.info.run_id

    tags = MlflowClient().get_run(train()).data.tags
    assert "github.com/o/r.git" in tags["mlflow.source.git.repoURL"]  # MLflow recorded it
    assert [k for k, v in tags.items() if "Zq9x" in v or "w7751" in v] == []
