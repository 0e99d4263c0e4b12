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

import gc
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mlflow_fingerprint.environment import environ_copy
from support.mlflow_team import MlflowServer
from support.once import once_per_run
from support.scripts import load_module
from support.tracking import active_tracking_uri
from support.trained import TrainedRuns, shared_runs

# the team-server fixtures, and the tiers: the folder sets the marker, and a unit test that trains,
# starts a process or a server, or takes over 5 s fails (support/tiers.py)
# A fingerprinted run starts a process at its end that writes its MLflow description (seconds of
# CPU each); the hundreds of runs the tests train need none (test_run_announce.py turns it on).
os.environ.setdefault("MLFLOW_FINGERPRINT_DESCRIBE", "0")
# Text is fitted to $COLUMNS (wrap.py): the reports the tests read are the default
# 100-column ones, whatever terminal or CI runner started pytest; tests of other widths set theirs.
os.environ["COLUMNS"] = "100"
# Every process started from here on holds its garbage collector off while it imports and
# skips the last collection at exit: `make test` installs the hook (tests/support/
# process_hooks.py), this turns it on. A pytest process takes its own collector back at once.
os.environ.setdefault("MFP_TESTS_PROCESS_HOOKS", "1")
if "mfp_tests_process_hooks" in sys.modules:
    sys.modules["mfp_tests_process_hooks"].release()
# The pytest process's own collector, on, collecting less often: it holds torch, MLflow and
# every test module (1.4 million objects), which Python's default thresholds (700, 10, 10) walked
# whole 16 times in the unit tier, 7.7 of its 91 CPU-seconds in collections; at these, twice,
# 2.2. Garbage cycles wait longer to be freed; nothing a test asserts depends on when.
gc.set_threshold(20_000, 50, 50)
# The tests run trainings side by side, more threads than cores: an idle OpenMP thread of one
# process (torch's intra-op pool) would spin on a core another process is waiting for. A passive
# wait changes how an idle thread waits, not how the work is split, so no number moves.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

pytest_plugins = ["pytester", "support.fixtures", "support.tiers", "support.scopes"]


@pytest.fixture(scope="session")
def mlflow_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty, fully migrated MLflow sqlite database to copy, migrated once per pytest run
    (``support/once.py``): every test copies it and none writes to it."""

    def build(folder: Path) -> str:
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        path = folder / "mlflow.db"
        store = SqlAlchemyStore(f"sqlite:///{path}", str(folder / "artifacts"))
        store.engine.dispose()
        return str(path)

    return Path(once_per_run(tmp_path_factory, "mlflow-template", build))


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
    server = MlflowServer(f"sqlite:///{db}", str(folder / "artifacts"), env={})
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


def load_example(name: str, module_name: str) -> ModuleType:
    """``examples/<name>.py`` imported as ``module_name`` (kept in ``sys.modules``: DataLoader
    workers pickle its classes by module name, and the examples import each other by name)."""
    return load_module(
        Path(__file__).resolve().parent.parent / "examples" / f"{name}.py", module_name
    )


@pytest.fixture(scope="session")
def digits() -> ModuleType:
    """``examples/digits.py`` as a module: the shared small CNN on scikit-learn's digits."""
    if "digits_data" not in sys.modules:
        load_example("digits_data", "digits_data")  # what digits.py imports beside it
    return load_example("digits", "digits_example")


@pytest.fixture(scope="session")
def digits_runs(
    digits: ModuleType, tmp_path_factory: pytest.TempPathFactory, mlflow_db_template: Path
) -> TrainedRuns:
    """The digits runs that differ in one thing each (support/trained.py), trained once for the
    whole pytest run, its xdist workers included: the pair tests, the partial-record tests and
    the audit read the same runs, whichever worker runs them."""
    return shared_runs(digits, tmp_path_factory, mlflow_db_template)


@pytest.fixture(autouse=True)
def restore_environ() -> Iterator[None]:
    """Every test leaves ``os.environ`` as it found it. The CLI sets MLFLOW_* variables in its own
    process (``--tracking-uri``, quiet defaults, and ``sync`` turns off MLflow's "View run" line),
    and a test that called ``main()`` in-process without this handed them to every later test:
    ``test_sync.py``'s syncs silenced the line ``test_sync_auth.py`` checks MLflow prints."""
    saved = environ_copy()  # MLflow's telemetry thread may unset a variable meanwhile
    yield
    os.environ.clear()
    os.environ.update(saved)


def _determinism(torch: Any) -> tuple[bool, bool]:
    return torch.are_deterministic_algorithms_enabled(), (
        torch.is_deterministic_algorithms_warn_only_enabled()
    )


@pytest.fixture(autouse=True)
def restore_torch_determinism() -> Iterator[None]:
    """Every test leaves torch's deterministic-algorithms switch as it found it (off where torch
    was not imported yet). A trainer run in-process turns it on and never off (Lightning's
    ``deterministic=True``), and a later test's capture in the same worker read it:
    ``test_enablers.py`` then found no nondeterministic kernels in a GPU record, on one CI in
    five, as xdist's order put the tests. Nothing is imported for a test that never imports
    torch."""
    torch = sys.modules.get("torch")
    before = (False, False) if torch is None else _determinism(torch)
    yield
    torch = sys.modules.get("torch")
    if torch is not None and _determinism(torch) != before:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


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
