"""Shared fixtures: real MLflow stores for tests that log runs.

- ``sqlite_tracking_uri``: a fresh local sqlite store per test (MLflow's default kind of store),
  set as the tracking URI, with the spool and the working directory inside the test's tmp dir;
- ``mlflow_server``: the http URI of a real ``mlflow server`` subprocess on 127.0.0.1 (one per
  session: it takes seconds to start); ``mlflow_server_process`` is its controller, for outage
  tests: ``kill()`` (SIGKILL, an outage), ``start()`` again on the same port, ``restart()``;
- ``cpu_sweep``: a real CPU sweep of 32 decorated runs for ``explain``, trained once per session.

Creating an MLflow database runs its migrations (5-10 s on a small machine), so it is done once
per session and every store starts as a copy of that template.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from support.mlflow_team import MlflowServer
from support.scripts import load_module
from support.tracking import active_tracking_uri

pytest_plugins = ["support.fixtures"]  # the team-server fixtures, registered once


@pytest.fixture(scope="session")
def mlflow_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty, fully migrated MLflow sqlite database to copy."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    folder = tmp_path_factory.mktemp("mlflow-template")
    path = folder / "mlflow.db"
    store = SqlAlchemyStore(f"sqlite:///{path}", str(folder / "artifacts"))
    store.engine.dispose()
    return path


def fresh_db(template: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "mlflow.db"
    shutil.copyfile(template, target)
    return target


@pytest.fixture
def spool_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's spool ($MLFLOW_FINGERPRINT_SPOOL): never the user's ~/.cache."""
    path = tmp_path / "spool"
    monkeypatch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(path))
    return path


@pytest.fixture
def sqlite_tracking_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mlflow_db_template: Path, spool_dir: Path
) -> Iterator[str]:
    """A fresh sqlite store for this test, active as the tracking URI (env and mlflow's global).

    The working directory moves to the test's tmp dir: a sqlite store puts new experiments'
    artifacts under ``./mlruns``.
    """
    uri = f"sqlite:///{fresh_db(mlflow_db_template, tmp_path / 'store')}"
    monkeypatch.chdir(tmp_path)
    with active_tracking_uri(uri, monkeypatch):
        yield uri


@pytest.fixture(scope="session")
def mlflow_server_process(
    tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path
) -> Iterator[MlflowServer]:
    """One real ``mlflow server`` (sqlite rows, artifacts proxied to a local folder, one worker)
    for the session; killed at teardown."""
    folder = tmp_path_factory.mktemp("mlflow-server")
    db = fresh_db(mlflow_db_template, folder)
    server = MlflowServer(f"sqlite:///{db}", str(folder / "artifacts"), env={}, workers=1)
    server.start()
    yield server
    server.close()


@pytest.fixture
def mlflow_server(
    mlflow_server_process: MlflowServer, monkeypatch: pytest.MonkeyPatch, spool_dir: Path
) -> Iterator[str]:
    """The server's http URI, active as the tracking URI; restarted first if an earlier test
    left it down."""
    if not mlflow_server_process.running:
        mlflow_server_process.start()
    with active_tracking_uri(mlflow_server_process.url, monkeypatch) as uri:
        yield uri
    if not mlflow_server_process.running:
        mlflow_server_process.start()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that need ``mlflow server`` are slow by nature: mark them so."""
    for item in items:
        if "mlflow_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def digits() -> ModuleType:
    """``examples/digits.py`` as a module: the shared small CNN on scikit-learn's digits."""
    path = Path(__file__).resolve().parent.parent / "examples" / "digits.py"
    return load_module(path, "digits_example")


@pytest.fixture
def restore_environ() -> Iterator[None]:
    """The CLI sets MLFLOW_* variables in its own process (``--tracking-uri``, quiet defaults);
    tests that call ``main()`` in-process use this so they do not leak into other tests."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="session")
def cpu_sweep(tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path) -> Any:
    """The real CPU sweep of ``support/sweep.py`` (32 runs of a tiny MLP, trained in this
    process, one decorated call per run), trained once per session into a sqlite store of its
    own: ``(tracking URI, runs)``. The environment is restored before any test reads it."""
    from support.sweep import run_sweep

    folder = tmp_path_factory.mktemp("cpu-sweep")
    uri = f"sqlite:///{fresh_db(mlflow_db_template, folder / 'store')}"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        mp.setenv("MLFLOW_FINGERPRINT_SPOOL", str(folder / "spool"))
        with active_tracking_uri(uri, mp):
            runs = run_sweep(uri)
    return uri, runs
