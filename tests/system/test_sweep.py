"""A parallel sweep never breaks the store: 8 and 16 decorated trainings started together against
a new sqlite file (MLflow's embedded default), 8 against an existing file and 8 against a real
``mlflow server``, each logging 2,000 steps.

The processes are released together behind a barrier (``tests/jobs/sweep_job.py``), so on a new
file they all open it for the first time at once: unprotected, MLflow's first-use migrations race
and leave the file half-migrated (``table _alembic_tmp_latest_metrics already exists``), no run
is created and ``mlflow.active_run()`` is None inside every ``train()``. Here every run must end
FINISHED, with every logged value stored exactly once, an active run inside every ``train()``,
and nothing left in the spool. The slowest ``log_metrics`` call any training saw is printed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from support.mlflow_team import MlflowServer
from support.paths import JOBS, ROOT
from support.stored import exactly_once_problems

STEPS = 2000
SWEEPS = {"new8": 8, "new16": 16, "existing8": 8, "server8": 8}


def value(index: int, step: int) -> float:
    """What child ``index`` logged at ``step`` (as ``sweep_job.value``)."""
    return index + step / STEPS


@pytest.fixture(scope="module")
def swept(
    tmp_path_factory: pytest.TempPathFactory,
    mlflow_db_template: Path,
    mlflow_server_process: MlflowServer,
) -> dict[str, Any]:
    """Every sweep run once, one after another, by one launcher process."""
    root = tmp_path_factory.mktemp("sweep")
    stores = root / "stores"
    stores.mkdir()
    shutil.copyfile(mlflow_db_template, stores / "existing.db")
    if not mlflow_server_process.running:
        mlflow_server_process.start()
    uris = {
        "new8": f"sqlite:///{stores / 'new8.db'}",
        "new16": f"sqlite:///{stores / 'new16.db'}",
        "existing8": f"sqlite:///{stores / 'existing.db'}",
        "server8": mlflow_server_process.url,
    }
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        "MLFLOW_FINGERPRINT_QUIET": "1",
    }
    specs = [f"{name}:{count}:{uris[name]}" for name, count in SWEEPS.items()]
    done = subprocess.run(
        [sys.executable, str(JOBS / "sweep_job.py"), str(root / "out"), str(STEPS), *specs],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    return {"root": root / "out", "uris": uris, "done": done}


def children(swept: dict[str, Any], name: str) -> list[dict[str, Any]]:
    folder = swept["root"] / name
    return [json.loads(p.read_text()) for p in sorted(folder.glob("child-*.json"))]


@pytest.mark.parametrize("name", list(SWEEPS))
def test_every_run_of_a_sweep_ends_finished_with_every_value_once(
    swept: dict[str, Any], name: str
) -> None:
    done = swept["done"]
    assert done.returncode == 0, done.stderr[-3000:]
    print(done.stdout.strip())
    seen = children(swept, name)
    assert len(seen) == SWEEPS[name], done.stderr[-3000:]
    assert [s["error"] for s in seen if "error" in s] == []
    assert [s["index"] for s in seen if not s.get("active")] == [], "no active run in train()"

    client = MlflowClient(swept["uris"][name])
    experiment = client.get_experiment_by_name(f"sweep-{name}")
    assert experiment is not None, done.stderr[-3000:]
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert sorted(runs) == sorted(f"child-{i}" for i in range(SWEEPS[name]))
    problems = []
    for child in seen:
        run = runs[f"child-{child['index']}"]
        assert run.info.status == "FINISHED", run.info
        assert child["active"] == run.info.run_id  # the run active in train() is this one
        logged = [(step, value(child["index"], step)) for step in range(STEPS)]
        problems += exactly_once_problems(client, run.info.run_id, {"loss": logged})
    assert problems == []
    left = list((swept["root"] / name / "spool").rglob("events.jsonl"))
    assert left == [], "values were left in the spool"
    slowest = max(child["slowest_step_s"] for child in seen)
    cpu = max(child["slowest_step_cpu_s"] for child in seen if child["slowest_step_s"] == slowest)
    print(f"{name}: slowest log_metrics call {slowest * 1000:.1f} ms ({cpu * 1000:.1f} ms CPU)")


def test_no_training_of_a_sweep_had_anything_to_warn_about(swept: dict[str, Any]) -> None:
    """No process met a broken store, a store it took for an unreachable server, or one locked
    for longer than the uploader waits before saying so: the package said nothing at all."""
    ours = [line for line in swept["done"].stderr.splitlines() if "mlflow-fingerprint" in line]
    assert ours == []


def test_no_lock_file_is_left_beside_a_swept_file(swept: dict[str, Any]) -> None:
    """The first-use lock is gone once the file is ready, however many processes raced for it:
    beside a project's ``mlflow.db`` it would be one more untracked file in each run's record."""
    assert swept["done"].returncode == 0, swept["done"].stderr[-3000:]
    stores = swept["root"].parent / "stores"
    assert sorted(p.name for p in stores.iterdir()) == ["existing.db", "new16.db", "new8.db"]


# The revision MLflow's migrations had reached in a file a real sweep left half-migrated: the
# next one (39d1c3be5f05) copies ``latest_metrics`` into ``_alembic_tmp_latest_metrics``.
HALF_WAY = "a8c4a736bde6"


def half_migrated(path: Path) -> str:
    """A sqlite file as a sweep's race left one: MLflow's migrations stopped at HALF_WAY with
    the temporary copy of a table left behind. Returns its URI."""
    import sqlalchemy
    from alembic import command
    from mlflow.store.db.base_sql_model import Base  # noqa: F401  # the models alembic reads
    from mlflow.store.db.utils import _get_alembic_config
    from mlflow.store.tracking.dbmodels.initial_models import Base as InitialBase

    uri = f"sqlite:///{path}"
    engine = sqlalchemy.create_engine(uri)
    InitialBase.metadata.create_all(engine)
    config = _get_alembic_config(uri)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, HALF_WAY)
        connection.exec_driver_sql(
            "CREATE TABLE _alembic_tmp_latest_metrics AS SELECT * FROM latest_metrics WHERE 0"
        )
    engine.dispose()
    return uri


def test_a_half_migrated_file_is_named_with_the_way_out_and_sync_recovers_the_run(
    tmp_path: Path,
    spool_dir: Path,
    capsys: pytest.CaptureFixture[str],
    restore_environ: None,
) -> None:
    """The training goes on into the spool, the warning says what happened to the file (a file,
    not a server) and how to recover, and ``fingerprint sync`` into a new file does recover."""
    import warnings

    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.cli.main import main

    broken = half_migrated(tmp_path / "mlflow.db")

    @mfp.fingerprinted(experiment="half", run_name="kept", tracking_uri=broken, quiet=True)
    def train() -> None:
        for step in range(20):
            mfp.log_metrics({"loss": step / 20}, step=step)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train()
    said = " ".join(str(w.message) for w in caught)
    assert "half-migrated" in said, said
    assert f"the MLflow database file {tmp_path / 'mlflow.db'}" in said
    assert "fingerprint sync --tracking-uri sqlite:///" in said
    assert "server" not in said

    capsys.readouterr()
    assert main(["sync"]) == 2  # the run's own file: refused, with the same way out
    err = capsys.readouterr().err
    assert "half-migrated" in err
    assert "mlflow-new.db" in err
    assert main(["show", "x" * 32, "--tracking-uri", broken]) == 2
    assert "half-migrated" in capsys.readouterr().err

    recovered = f"sqlite:///{tmp_path / 'mlflow-new.db'}"
    assert main(["sync", "--tracking-uri", recovered]) == 0, capsys.readouterr().err
    client = MlflowClient(recovered)
    [run] = client.search_runs([client.get_experiment_by_name("half").experiment_id])
    assert run.info.run_name == "kept"
    assert run.info.status == "FINISHED"
    logged = [(step, step / 20) for step in range(20)]
    assert exactly_once_problems(client, run.info.run_id, {"loss": logged}) == []
