"""``sqlite_reader``: a run, a search with the filters the package writes, an experiment and a
run's local artifacts read from a real MLflow sqlite file are what MLflow's own client reads
there; a filter in the rest of MLflow's language, a second page and a file it does not vouch for
are left to MLflow; and ``diff`` reports the same through it as through MLflow's client."""

from __future__ import annotations

import json
import math
import posixpath
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.errors import StoreError
from mlflow_fingerprint.tracking import sqlite_reader
from mlflow_fingerprint.tracking import store as tracking
from mlflow_fingerprint.tracking.sqlite_reader import Reader, opens, where
from support.records import cpu_record, log_run, new_store, rehash
from support.sqlite_store import T0, runs_store, write


def seen(run: Any) -> tuple[Any, ...]:
    """Everything the readers give of a run (a NaN as text: it equals no other NaN)."""

    def plain(value: Any) -> Any:
        return "nan" if isinstance(value, float) and math.isnan(value) else value

    info = run.info
    latest = sorted((m.key, plain(m.value), m.timestamp, m.step) for m in run.data._metric_objs)
    return (
        info.run_id, info.experiment_id, info.run_name, info.status, info.start_time,
        info.end_time, info.artifact_uri, info.lifecycle_stage,
        {k: plain(v) for k, v in run.data.metrics.items()}, run.data.params, run.data.tags,
        latest,
    )  # fmt: skip


@pytest.fixture
def store(tmp_path: Path, mlflow_db_template: Path) -> str:
    return runs_store(tmp_path, mlflow_db_template)


def path_of(uri: str) -> Path:
    return Path(uri.removeprefix("sqlite:///"))


def test_a_run_is_what_mlflows_client_reads(store: str) -> None:
    client, reader = MlflowClient(store), Reader(path_of(store), store)
    every = client.search_runs(
        [e.experiment_id for e in client.search_experiments(view_type=3)], run_view_type=3
    )
    assert len(every) == 7  # with the deleted run and the one whose name is in its tag only
    for run in every:
        assert seen(reader.get_run(run.info.run_id)) == seen(client.get_run(run.info.run_id))
    with pytest.raises(StoreError) as missing:
        reader.get_run("0" * 32)
    assert tracking.is_not_found(missing.value)


@pytest.mark.parametrize(
    "filter_string",
    [
        "",
        f"tags.`{layout.TAG_HASH_RECIPE}` = 'h1'",
        f"attributes.status = 'FINISHED' and attributes.start_time < {T0 + 1000}",
        f"attributes.status = 'FINISHED' and tags.`{layout.TAG_HASH_RECIPE}` = 'h0'",
        "attributes.run_name = 'r3'",
        """tags.`q` = "it's" and attributes.start_time < 99999999999999""",
        "tags.`q` = 'nothing'",
    ],
)
def test_a_search_the_package_writes_finds_what_mlflow_finds(
    store: str, filter_string: str
) -> None:
    client, reader = MlflowClient(store), Reader(path_of(store), store)
    ids = [client.get_experiment_by_name("e").experiment_id]
    order = ["attributes.start_time DESC"]
    theirs = client.search_runs(ids, filter_string, max_results=10, order_by=order)
    ours = reader.search_runs(ids, filter_string, max_results=10, order_by=order)
    assert [seen(r) for r in ours] == [seen(r) for r in theirs]
    assert ours.token is None
    assert "mlflow" in sys.modules  # (imported by this module) the answer was the reader's own
    assert reader._mlflow is None


def test_anything_else_is_left_to_mlflow(store: str) -> None:
    reader = Reader(path_of(store), store)
    ids = [MlflowClient(store).get_experiment_by_name("e").experiment_id]
    assert where("metrics.loss < 1") is None
    assert where("tags.`a` = 'x' or tags.`b` = 'y'") is None
    assert where("tags.`a` = 'x' and") is None
    assert where("tags.`a` LIKE 'x%'") is None
    assert where("") == ("1", [])
    found = reader.search_runs(ids, "metrics.loss < 0.3", order_by=["attributes.start_time DESC"])
    assert reader._mlflow is not None  # MLflow's client answered it
    assert {r.info.run_name for r in found} == {"r1", "r2", "r3"}  # r0 ends at 1/3
    paged = Reader(path_of(store), store).search_runs(ids, "", max_results=2)
    assert len(paged) == 2
    assert paged.token  # a second page: MLflow's token


def test_experiments_and_local_artifacts(store: str, tmp_path: Path) -> None:
    client, reader = MlflowClient(store), Reader(path_of(store), store)
    theirs = client.get_experiment_by_name("e")
    ours = reader.get_experiment_by_name("e")
    assert ours is not None
    assert (ours.experiment_id, ours.name, ours.artifact_location, ours.lifecycle_stage) == (
        theirs.experiment_id, theirs.name, theirs.artifact_location, theirs.lifecycle_stage,
    )  # fmt: skip
    assert reader.get_experiment(theirs.experiment_id) == ours
    client.delete_experiment(client.create_experiment("gone"))
    assert [e.experiment_id for e in reader.search_experiments()] == [
        e.experiment_id for e in client.search_experiments(max_results=1000)
    ]
    assert reader._mlflow is None
    assert len(reader.search_experiments(max_results=1)) == 1  # a page of two: MLflow's
    assert reader._mlflow is not None
    assert reader.get_experiment_by_name("none") is None
    with pytest.raises(StoreError):
        reader.get_experiment("999")
    run_id = client.search_runs([theirs.experiment_id], "attributes.run_name = 'r1'")[0].info.run_id
    for folder in (None, "fingerprint", posixpath.dirname(layout.STEPS_ARTIFACT), "nothing"):
        assert [(f.path, f.is_dir, f.file_size) for f in reader.list_artifacts(run_id, folder)] == [
            (f.path, f.is_dir, f.file_size) for f in client.list_artifacts(run_id, folder)
        ]
    local = reader.download_artifacts(run_id, layout.STEPS_ARTIFACT, str(tmp_path))
    assert Path(local).read_text() == "text 1"
    with pytest.raises(StoreError, match="outside"):
        reader.download_artifacts(run_id, "../../mlflow.db", str(tmp_path))
    with pytest.raises(StoreError):
        reader.download_artifacts(run_id, "fingerprint", str(tmp_path))  # a folder


def test_only_a_file_mlflow_made_and_finished_is_read_so(store: str, tmp_path: Path) -> None:
    assert opens(path_of(store))
    write(store, ("UPDATE experiments SET workspace = 'team' WHERE name = 'other'", ()))
    assert not opens(path_of(store))  # MLflow reads the active workspace's experiments only
    write(store, ("UPDATE experiments SET workspace = 'default' WHERE name = 'other'", ()))
    assert opens(path_of(store))
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    assert not opens(other)
    assert not opens(tmp_path / "none.db")
    con = sqlite3.connect(path_of(store))
    with con:  # what an interrupted migration leaves
        con.execute("CREATE TABLE _alembic_tmp_runs (x)")
    con.close()
    assert not opens(path_of(store))


def test_the_read_only_commands_read_a_local_file_without_mlflow(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "mlflow")
    assert isinstance(tracking.reader(store), sqlite_reader.Reader)
    monkeypatch.setitem(sys.modules, "mlflow", __import__("mlflow"))
    assert not isinstance(tracking.reader(store), sqlite_reader.Reader)


def test_diff_reports_the_same_through_either_reader(
    tmp_path: Path, mlflow_db_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs whose curves part, with a replicate of A beside them (a spread is searched)."""
    uri = new_store(tmp_path, mlflow_db_template)
    record = cpu_record()
    other = rehash({**record, "params": {"lr": "0.2"}})
    a = log_run(uri, "x", "a", record, {"loss": [1.0, 0.5, 0.25, 0.2]}, seed=0)
    log_run(uri, "x", "a2", record, {"loss": [1.0, 0.5, 0.26, 0.2]}, seed=1)
    b = log_run(uri, "x", "b", other, {"loss": [1.0, 0.6, 0.3, 0.3], "val": [0.1]}, seed=0)
    through_mlflow = mfp.diff(a, b, tracking_uri=uri).to_dict()
    readers: list[Any] = []

    def own(found: str | None) -> Any:
        readers.append(Reader(path_of(uri), uri))
        return readers[-1]

    monkeypatch.setattr(tracking, "reader", own)
    through_tables = mfp.diff(a, b, tracking_uri=uri).to_dict()
    assert readers
    assert all(r._mlflow is None for r in readers)  # nothing was MLflow's to answer
    assert json.dumps(through_tables, sort_keys=True) == json.dumps(through_mlflow, sort_keys=True)
    assert through_tables["metrics"][0]["first_divergence_step"] == 1
