"""The tracking store's own files (``capture/store_files.py``): what the git and program probes
leave out of the project's files, for each kind of store URI, read without opening a store."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint.capture.store_files import (
    ARTIFACT_ROOT_VARIABLE,
    DEFAULT_URI,
    is_store_path,
    store_paths,
    tracking_uri,
)
from mlflow_fingerprint.layout import LOCK_SUFFIX
from support.tracking import active_tracking_uri


@pytest.fixture
def cwd(tmp_path: Path, spool_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(ARTIFACT_ROOT_VARIABLE, raising=False)
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_a_sqlite_file_comes_with_its_companions_the_artifacts_and_the_spool(
    cwd: Path, spool_dir: Path
) -> None:
    paths = store_paths(cwd, "sqlite:///mlflow.db")
    db = cwd / "mlflow.db"
    assert paths == (
        spool_dir.resolve(),
        db,
        *(db.with_name(f"mlflow.db{s}") for s in ("-journal", "-wal", "-shm", LOCK_SUFFIX)),
        cwd / "mlruns",
    )
    elsewhere = store_paths(cwd, f"sqlite:////{cwd.parent}/stores/runs%20db.sqlite?timeout=3")
    assert cwd.parent / "stores" / "runs db.sqlite" in elsewhere  # absolute, unquoted, no query


@pytest.mark.parametrize(
    ("uri", "store"),
    [("file:./tracking", "tracking"), ("./local-runs", "local-runs"), ("runs", "runs")],
)
def test_a_file_store_is_its_folder(cwd: Path, uri: str, store: str) -> None:
    assert cwd / store in store_paths(cwd, uri)
    assert cwd / "mlruns" in store_paths(cwd, uri)


@pytest.mark.parametrize(
    "uri",
    [
        "http://127.0.0.1:5000",
        "databricks://profile",
        "databricks",
        "databricks-uc",
        "sqlite://",
        "sqlite:///:memory:",
    ],
)
def test_a_server_or_a_store_in_memory_has_no_local_files_but_the_spool(
    cwd: Path, spool_dir: Path, uri: str
) -> None:
    assert store_paths(cwd, uri) == (spool_dir.resolve(),)


def test_a_local_artifact_root_from_the_environment_is_the_store_s_too(
    cwd: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ARTIFACT_ROOT_VARIABLE, "artifacts")
    assert cwd / "artifacts" in store_paths(cwd, "http://server")
    monkeypatch.setenv(ARTIFACT_ROOT_VARIABLE, (tmp_path / "shared").as_uri())
    assert tmp_path / "shared" in store_paths(cwd, "http://server")
    monkeypatch.setenv(ARTIFACT_ROOT_VARIABLE, "s3://bucket/runs")
    assert len(store_paths(cwd, "http://server")) == 1


def test_paths_are_matched_through_links_and_folders(cwd: Path) -> None:
    store = store_paths(cwd, "sqlite:///mlflow.db")
    (cwd / "mlruns" / "0").mkdir(parents=True)
    assert is_store_path(cwd / "mlruns" / "0" / "meta.yaml", store)
    assert is_store_path(cwd / "mlflow.db-wal", store)
    assert not is_store_path(cwd / "mlflow.db.bak", store)
    assert not is_store_path(cwd / "train.py", store)
    (cwd / "runs-link").symlink_to(cwd / "mlruns")
    assert is_store_path(cwd / "runs-link" / "0", store)


def test_the_uri_is_the_one_mlflow_would_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    uri = f"sqlite:///{tmp_path}/other.db"
    with active_tracking_uri(uri, monkeypatch):
        assert tracking_uri() == uri
        monkeypatch.delenv("MLFLOW_TRACKING_URI")
        assert tracking_uri() == uri  # set in MLflow itself: what its runs use
    # neither set: MLflow's default, a sqlite file in the working directory
    monkeypatch.chdir(tmp_path)
    assert tracking_uri() in (DEFAULT_URI, f"sqlite:///{tmp_path}/mlflow.db")
    assert tmp_path / "mlflow.db" in store_paths(tmp_path)
