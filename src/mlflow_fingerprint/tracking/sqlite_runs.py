"""An experiment's runs read straight from a local MLflow sqlite file, read-only: what ``explain``
reads of thousands of runs, without MLflow's SQLAlchemy store.

Why: through ``MlflowClient`` each run becomes ORM objects, then MLflow entities, then the rows
``explain`` keeps (``StoredRun``), and opening the store first checks its schema (about a second,
whatever the runs). On a local store that was most of ``explain``'s time. Five tables are read
(``experiments``, ``runs``, ``tags``, ``params``, ``latest_metrics``), with columns MLflow has
kept since 1.x. The rows are those MLflow's search returns:
- active runs, oldest first, then by id (MLflow's tie-break);
- each run's latest value of each metric, with its step, and a NaN as NaN;
- a run's name from its ``mlflow.runName`` tag where the column is empty.

A file that is not MLflow's (or not readable so), experiments in more than one workspace, or an
experiment not found reads as None: the caller then reads through MLflow's client, which says
what is wrong in its own words. A search filter is MLflow's language: the caller reads through
the client where there is one.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from typing import Any, TypeVar

from ..layout import MLFLOW_RUN_NAME
from .experiment import StoredRun
from .local_store import read_only
from .pairs import Held, Pairs, pack
from .progress import Progress
from .store import sqlite_file

V = TypeVar("V")

ACTIVE = "active"
# The experiment's active runs, in the order explain's search asks MLflow for
# (``attributes.start_time ASC``: no start time last, then the run id).
RUNS = (
    "SELECT run_uuid, name, status, artifact_uri FROM runs "
    "WHERE experiment_id = ? AND lifecycle_stage = ? "
    "ORDER BY start_time IS NULL, start_time, run_uuid"
)
# Each table's rows for the experiment's active runs, in the order they were written (the order
# MLflow's client gives a run's tags, params and metrics).
OF_RUNS = (
    "SELECT t.run_uuid, {columns} FROM {table} t JOIN runs r ON r.run_uuid = t.run_uuid "
    "WHERE r.experiment_id = ? AND r.lifecycle_stage = ? ORDER BY t.rowid"
)


def experiment_runs(
    tracking_uri: str, experiment: str, progress: Progress | None = None
) -> tuple[str, list[StoredRun]] | None:
    """``(experiment id, its active runs)`` where ``tracking_uri`` is a local sqlite file and
    ``experiment`` (a name, else an id) is in it; None where they cannot be read so."""
    path = sqlite_file(tracking_uri)
    if path is None or not path.is_file():
        return None
    try:
        con = read_only(path)
    except sqlite3.Error:
        return None
    try:
        experiment_id = _experiment_id(con, experiment)
        if experiment_id is None:
            return None
        if progress is not None:
            progress.stage("runs")
        runs = _runs(con, experiment_id)
        if progress is not None:
            progress.add(len(runs))
        return str(experiment_id), runs
    # not MLflow's schema, locked past sqlite's wait, or a value MLflow never writes there (a
    # metric stored as text): the client's read says what it says of it
    except (sqlite3.Error, ValueError, TypeError):
        return None
    finally:
        con.close()


def _experiment_id(con: sqlite3.Connection, experiment: str) -> int | None:
    """The id of the experiment named ``experiment`` (else whose id it is), as MLflow's
    ``get_experiment_by_name`` then ``get_experiment`` find it; None where the file holds more
    than one workspace (MLflow then reads only the active one's)."""
    columns = {row[1] for row in con.execute("PRAGMA table_info(experiments)")}
    if "workspace" in columns:
        (workspaces,) = con.execute("SELECT COUNT(DISTINCT workspace) FROM experiments").fetchone()
        if workspaces > 1:
            return None
    row = con.execute("SELECT experiment_id FROM experiments WHERE name = ?", (experiment,))
    found = row.fetchone()
    if found is None and experiment.isdigit():
        row = con.execute(
            "SELECT experiment_id FROM experiments WHERE experiment_id = ?", (int(experiment),)
        )
        found = row.fetchone()
    return None if found is None else int(found[0])


def _packed(
    found: dict[str, dict[str, V]], held: Held, *, whole: bool = False
) -> dict[str, Pairs[V]]:
    """Each run's mapping packed (``pairs.pack``), each dict dropped as its run's is made."""
    packed: dict[str, Pairs[V]] = {}
    for run_id in list(found):
        packed[run_id] = pack(found.pop(run_id), held, whole=whole)
    return packed


def _pairs(
    con: sqlite3.Connection, table: str, where: tuple[int, str], held: Held
) -> dict[str, Pairs[str]]:
    """A key-value table's rows (``tags``, ``params``) by run, packed with ``held``."""
    keep = held.texts.setdefault  # shared as read: every run's dict is held until packed
    found: defaultdict[str, dict[str, str]] = defaultdict(dict)
    for run_id, key, value in con.execute(
        OF_RUNS.format(columns="t.key, t.value", table=table), where
    ):
        found[run_id][keep(key, key)] = keep(value, value)
    return _packed(found, held)


def _runs(con: sqlite3.Connection, experiment_id: int) -> list[StoredRun]:
    where = (experiment_id, ACTIVE)
    held = Held()  # as ``experiment.stored_run`` packs the client's rows
    tags, params = _pairs(con, "tags", where, held), _pairs(con, "params", where, held)
    values: defaultdict[str, dict[str, float]] = defaultdict(dict)
    at: defaultdict[str, dict[str, int]] = defaultdict(dict)
    latest = OF_RUNS.format(columns="t.key, t.value, t.step, t.is_nan", table="latest_metrics")
    for run_id, key, value, step, is_nan in con.execute(latest, where):
        values[run_id][key] = float("nan") if is_nan else float(value)
        at[run_id][key] = int(step or 0)
    metrics, steps = _packed(values, held), _packed(at, held, whole=True)
    none: Pairs[Any] = pack({}, held)
    out = []
    for run_id, name, status, artifact_uri in con.execute(RUNS, where):
        run_tags = tags.get(run_id, none)
        out.append(
            StoredRun(
                run_id=run_id,
                name=held.text(name) if name else run_tags.get(MLFLOW_RUN_NAME) or name,
                status=held.text(str(status)),
                experiment_id=held.text(str(experiment_id)),
                artifact_uri=str(artifact_uri or ""),
                params=params.get(run_id, none),
                tags=run_tags,
                metrics=metrics.get(run_id, none),
                metric_steps=steps.get(run_id, none),
            )
        )
    return out
