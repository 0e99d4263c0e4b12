"""``sqlite_runs``: an experiment's runs read from a real MLflow sqlite file, their summaries
first and their whole rows page by page, are the rows MLflow's own search gives (order, names,
tags, params, latest metrics with their steps, NaN), and a file it cannot read so (not MLflow's,
several workspaces, an unknown experiment, tables without MLflow's run index) reads as None."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from mlflow_fingerprint import layout
from mlflow_fingerprint.errors import ResolveError
from mlflow_fingerprint.tracking import sqlite_runs
from mlflow_fingerprint.tracking.experiment import StoredRun, stored_run
from mlflow_fingerprint.tracking.progress import Progress
from mlflow_fingerprint.tracking.summaries import RunSummaries
from support.sqlite_store import runs_store, write


def rows(runs: list[StoredRun]) -> list[tuple[Any, ...]]:
    """Every field, in order (a NaN as text: it equals no other NaN)."""

    def items(mapping: Any) -> list[tuple[str, Any]]:
        return [
            (k, "nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in mapping.items()
        ]

    return [
        (r.run_id, r.name, r.status, r.experiment_id, r.artifact_uri, items(r.params),
         items(r.tags), items(r.metrics), items(r.metric_steps))
        for r in runs
    ]  # fmt: skip


@pytest.fixture
def store(tmp_path: Path, mlflow_db_template: Path) -> str:
    return runs_store(tmp_path, mlflow_db_template)


def summarised(summaries: RunSummaries) -> list[tuple[Any, ...]]:
    """Each run's summary: its id, name, status, schema tag and metrics (name -> its latest
    value, a NaN as text, and step)."""
    metrics: list[dict[str, tuple[Any, int]]] = [{} for _ in range(len(summaries))]
    for name, metric in summaries.metrics.items():
        for at, value, step in zip(metric.runs, metric.values, metric.steps, strict=True):
            metrics[at][name] = ("nan" if math.isnan(value) else value, step)
    roster = summaries.roster
    return [
        (roster.run_id(i), roster.name(i), summaries.status(i), summaries.schema(i), metrics[i])
        for i in range(len(summaries))
    ]


def read(store: str, experiment: str, size: int = sqlite_runs.SQLITE_BATCH) -> list[StoredRun]:
    """The runs as ``explain`` reads them: the summaries, then (named by a ``Roster``, all
    ``explain`` keeps of them) their rows ``size`` at a time."""
    found = sqlite_runs.summaries(store, experiment)
    assert found is not None
    roster = found.runs.roster
    pages = list(sqlite_runs.whole_rows(found.path, roster, found.experiment_id, size))
    assert all(0 < len(page) <= size for page in pages)
    runs = [run for page in pages for run in page]
    assert [r.run_id for r in runs] == [roster.run_id(i) for i in range(len(roster))]
    assert [(dict(r.metrics), dict(r.metric_steps)) for r in runs] == [({}, {})] * len(runs)
    return runs


def test_the_rows_are_mlflows_search_rows(store: str) -> None:
    client = MlflowClient(store)
    experiment_id = client.get_experiment_by_name("e").experiment_id
    searched = client.search_runs([experiment_id], order_by=["attributes.start_time ASC"])
    progress = Progress(False)
    found = sqlite_runs.summaries(store, "e", progress)
    assert found is not None
    assert found.experiment_id == experiment_id
    assert progress.done == 5
    summaries = found.runs
    assert len(summaries) == 5  # not the deleted run, not the other experiment's
    # a summary: what choosing the metric and the runs reads, and nothing else; these runs
    # hold no fingerprint.schema tag
    whole = [stored_run(r) for r in searched]
    searched_summaries = RunSummaries()
    for run in whole:
        searched_summaries.add_row(run)
    assert summarised(summaries) == summarised(searched_summaries)
    assert [summaries.schema(i) for i in range(5)] == [None] * 5
    for size in (1, 2, 500):
        runs = read(store, "e", size)
        # a whole row: the search's, but its metrics (its summary had them)
        assert [row[:7] for row in rows(runs)] == [row[:7] for row in rows(whole)]
    assert runs[-1].name == "bare"
    assert [{r.name for r in runs[:2]}, {r.name for r in runs[2:4]}] == [{"r0", "r1"}, {"r2", "r3"}]
    assert [r.run_id for r in runs[:2]] == sorted(r.run_id for r in runs[:2])
    (odd,) = [r for r in summarised(summaries) if r[1] == "r1"]
    assert {k: step for k, (_, step) in odd[4].items()} == {"loss": 2, "val_loss": 0, "odd": 4}
    assert odd[4]["odd"][0] == "nan"
    roster = summaries.roster
    assert [summaries.status(i) for i in range(5) if roster.name(i) == "r2"] == ["FAILED"]
    # by id, as explain takes an experiment's id too
    assert rows(read(store, experiment_id)) == rows(runs)


def test_a_summary_holds_the_schema_tag(store: str) -> None:
    """What ``explain`` checks before it reads a record: a newer release's record is left out."""
    client = MlflowClient(store)
    first = client.search_runs(
        [client.get_experiment_by_name("e").experiment_id],
        order_by=["attributes.start_time ASC"],
    )[0]
    client.set_tag(first.info.run_id, layout.TAG_SCHEMA, "99")
    summaries = sqlite_runs.summaries(store, "e").runs
    assert [summaries.schema(i) for i in range(5)] == ["99", None, None, None, None]


def test_what_cannot_be_read_so_reads_as_none(store: str, tmp_path: Path) -> None:
    assert sqlite_runs.summaries(store, "no-such-experiment") is None
    assert sqlite_runs.summaries("http://127.0.0.1:5000", "e") is None
    assert sqlite_runs.summaries(f"sqlite:///{tmp_path / 'none.db'}", "e") is None
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    assert sqlite_runs.summaries(f"sqlite:///{other}", "e") is None
    # a metric stored as text (MLflow writes numbers): read as MLflow's client reads it
    write(store, ("UPDATE latest_metrics SET value = 'abc' WHERE key = 'loss'", ()))
    assert sqlite_runs.summaries(store, "e") is None
    write(store, ("UPDATE latest_metrics SET value = 0.5 WHERE key = 'loss'", ()))
    assert sqlite_runs.summaries(store, "e") is not None
    # experiments in two workspaces: MLflow reads the active one's, so this reader does not
    write(store, ("UPDATE experiments SET workspace = 'team' WHERE name = 'other'", ()))
    assert sqlite_runs.summaries(store, "e") is None


def test_tables_without_mlflows_run_index_are_not_read_by_pages(store: str) -> None:
    """A page of runs would scan the whole table for each page: the client reads such a file."""
    write(store, ("DROP INDEX index_params_run_uuid", ()))
    assert sqlite_runs.summaries(store, "e") is None


def test_a_run_gone_between_the_passes_is_one_line(store: str) -> None:
    found = sqlite_runs.summaries(store, "e")
    # what `mlflow gc` does to a deleted run, done to this one
    gone = (found.runs.roster.run_id(3),)
    tables = ("tags", "params", "metrics", "latest_metrics", "runs")
    write(store, *((f"DELETE FROM {table} WHERE run_uuid = ?", gone) for table in tables))
    pages = sqlite_runs.whole_rows(found.path, found.runs.roster, found.experiment_id, 2)
    assert len(next(pages)) == 2
    with pytest.raises(ResolveError, match=r"^could not read the runs' tags from .*no longer"):
        next(pages)


def test_the_runs_share_one_string_per_name_and_repeated_value(store: str) -> None:
    """Read from the tables or through MLflow's client (``experiment.search``), the runs hold
    one object per tag or param name and per repeated value, not a copy per run."""
    from mlflow_fingerprint.tracking import experiment as reads

    client = MlflowClient(store)
    experiment_id = client.get_experiment_by_name("e").experiment_id
    searched = [run for page in reads.search_pages(client, [experiment_id], "") for run in page]
    for runs in (read(store, "e"), searched):
        first, second = runs[0], runs[1]
        assert next(k for k in first.tags if k == "z") is next(k for k in second.tags if k == "z")
        assert first.params["b"] is second.params["b"]
        assert first.name is first.tags["mlflow.runName"]  # one object, not two
    assert next(iter(searched[0].metrics)) is next(iter(searched[1].metrics))
