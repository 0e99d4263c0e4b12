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

The rows come in two passes, so that ``explain`` never holds a whole history's rows at once (at
100,000 runs about 1.7 KB a run, the most it held): first each run's summary (:func:`summaries`:
its name, status and latest metrics, all that choosing the metric and the runs needs), then, for
the runs chosen (named by id in a ``Roster``, which is all ``explain`` keeps of their
summaries), :data:`SQLITE_BATCH` at a time, the row its record is made from (:func:`whole_rows`:
its artifact root, params and tags), each page dropped once its records are made. A page is read
through the tables' ``run_uuid`` indexes; a file without them is not read so.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ResolveError
from ..layout import MLFLOW_RUN_NAME, TAG_SCHEMA
from .experiment import SQLITE_BATCH, StoredRun
from .local_store import one_workspace, read_only
from .pairs import Held, Pairs, pack
from .progress import Progress
from .roster import Roster
from .store import sqlite_file
from .summaries import RunSummaries

V = TypeVar("V")

ACTIVE = "active"
# The experiment's active runs' summaries, in the order explain's search asks MLflow for
# (``attributes.start_time ASC``: no start time last, then the run id): each with its record's
# schema tag (a record a newer release wrote is not read), and its name from its mlflow.runName
# tag where the column is empty.
SUMMARIES = (
    "SELECT r.run_uuid, COALESCE(NULLIF(r.name, ''), NULLIF(n.value, ''), r.name), r.status, "
    "s.value FROM runs r "
    "LEFT JOIN tags s ON s.run_uuid = r.run_uuid AND s.key = ? "
    "LEFT JOIN tags n ON n.run_uuid = r.run_uuid AND n.key = ? "
    "WHERE r.experiment_id = ? AND r.lifecycle_stage = ? "
    "ORDER BY r.start_time IS NULL, r.start_time, r.run_uuid"
)
# The latest metrics of the experiment's active runs, each run's together (in the order they
# were written), the runs in the order of SUMMARIES: read beside them, no run's are held for long.
LATEST_IN_ORDER = (
    "SELECT t.run_uuid, t.key, t.value, t.step, t.is_nan FROM latest_metrics t "
    "JOIN runs r ON r.run_uuid = t.run_uuid "
    "WHERE r.experiment_id = ? AND r.lifecycle_stage = ? "
    "ORDER BY r.start_time IS NULL, r.start_time, r.run_uuid, t.rowid"
)
# A page of runs' rows of a table, in the order they were written; and the runs' artifact roots
# and statuses.
OF_PAGE = "SELECT run_uuid, key, value FROM {table} WHERE run_uuid IN ({marks}) ORDER BY rowid"
ROOTS = "SELECT run_uuid, artifact_uri, status FROM runs WHERE run_uuid IN ({marks})"
PAGED = ("tags", "params")  # each with MLflow's index on run_uuid where it is read by pages


@dataclass(frozen=True)
class Summaries:
    """An experiment's active runs as :func:`summaries` reads them (``RunSummaries``: each run's
    id, name, status, schema tag and latest metrics), and the file :func:`whole_rows` reads the
    rest from."""

    path: Path
    experiment_id: str
    runs: RunSummaries


def summaries(
    tracking_uri: str, experiment: str, progress: Progress | None = None
) -> Summaries | None:
    """The summaries of ``experiment``'s active runs (a name, else an id) where
    ``tracking_uri`` is a local sqlite file that holds it and indexes its tags and params by
    run; None where they cannot be read so."""
    path = sqlite_file(tracking_uri)
    if path is None or not path.is_file():
        return None
    try:
        con = read_only(path)
    except sqlite3.Error:
        return None
    try:
        experiment_id = _experiment_id(con, experiment)
        if experiment_id is None or not all(_indexed(con, table) for table in PAGED):
            return None
        if progress is not None:
            progress.stage("runs")
        runs = _summaries(con, experiment_id)
        if progress is not None:
            progress.add(len(runs))
        return Summaries(path, str(experiment_id), runs)
    # not MLflow's schema, locked past sqlite's wait, or a value MLflow never writes there (a
    # metric stored as text): the client's read says what it says of it
    except (sqlite3.Error, ValueError, TypeError):
        return None
    finally:
        con.close()


def whole_rows(
    path: Path, roster: Roster, experiment_id: str, size: int = SQLITE_BATCH
) -> Iterator[list[StoredRun]]:
    """The rows of the runs ``roster`` names (read from ``path``, in ``experiment_id``) that
    their records are made from, in its order, ``size`` at a time (at most
    :data:`SQLITE_BATCH`, the run ids sqlite binds to a query): each run's name, status,
    artifact root, params and tags, as MLflow's search gives them, and no metrics (its summary
    had them, and they chose the runs). Raises ``ResolveError`` where the file cannot be read
    so any more (a run deleted for good, the file replaced)."""
    con = read_only(path)
    step = max(1, min(size, SQLITE_BATCH))
    try:
        for start in range(0, len(roster), step):
            page = range(start, min(start + step, len(roster)))
            try:
                whole = _whole(con, roster, page, experiment_id)
            except (sqlite3.Error, ValueError, TypeError) as exc:
                raise ResolveError(f"could not read the runs' tags from {path}: {exc}") from None
            yield whole
    finally:
        con.close()


def _indexed(con: sqlite3.Connection, table: str) -> bool:
    """``table`` has an index whose first column is ``run_uuid`` (MLflow's migrations add one
    to tags, params and metrics): a page of runs is then read without scanning the table."""
    for _, name, *_ in con.execute(f"PRAGMA index_list({table})"):
        first = con.execute(f'PRAGMA index_info("{name}")').fetchone()
        if first is not None and first[2] == "run_uuid":
            return True
    return False


def _experiment_id(con: sqlite3.Connection, experiment: str) -> int | None:
    """The id of the experiment named ``experiment`` (else whose id it is), as MLflow's
    ``get_experiment_by_name`` then ``get_experiment`` find it; None where the file holds more
    than one workspace (MLflow then reads only the active one's)."""
    if not one_workspace(con):
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


def _summaries(con: sqlite3.Connection, experiment_id: int) -> RunSummaries:
    """The active runs' summaries, in the order of :data:`SUMMARIES`, each with its latest
    metrics (:data:`LATEST_IN_ORDER`, read in step with them). Raises ``ValueError`` where a
    metric's run is not among the runs as they come (the two orders disagree)."""
    where = (experiment_id, ACTIVE)
    out = RunSummaries()
    latest = con.execute(LATEST_IN_ORDER, where)
    pending = next(latest, None)
    for run_id, name, status, schema in con.execute(
        SUMMARIES, (TAG_SCHEMA, MLFLOW_RUN_NAME, *where)
    ):
        metrics = []
        while pending is not None and pending[0] == run_id:
            _, key, value, step, is_nan = pending
            metrics.append((key, float("nan") if is_nan else float(value), int(step or 0)))
            pending = next(latest, None)
        out.add(run_id, name, str(status), schema, metrics)
    if pending is not None:
        raise ValueError(f"the latest metrics of run {pending[0]} came out of the runs' order")
    return out


def _whole(
    con: sqlite3.Connection, roster: Roster, page: range, experiment_id: str
) -> list[StoredRun]:
    """The rows of a page of the runs ``roster`` names."""
    ids = [roster.run_id(i) for i in page]
    marks = ",".join("?" * len(ids))
    held = Held()  # a page's own: what all pages share would hold every run's texts
    names = [roster.name(i) for i in page]
    for name in names:
        if name:
            held.text(name)  # its name and its mlflow.runName tag: one object, as read at once
    found = con.execute(ROOTS.format(marks=marks), ids)
    rows = {run_id: (root, status) for run_id, root, status in found}
    gone = [run_id for run_id in ids if run_id not in rows]
    if gone:
        raise ValueError(f"run {gone[0]} is no longer there")
    tags, params = (_page_pairs(con, table, marks, ids, held) for table in PAGED)
    none: Pairs[Any] = pack({}, held)
    return [
        StoredRun(
            run_id=run_id,
            name=held.text(name) if name else name,
            status=held.text(str(rows[run_id][1])),
            experiment_id=experiment_id,
            artifact_uri=str(rows[run_id][0] or ""),
            params=params.get(run_id, none),
            tags=tags.get(run_id, none),
            metrics=none,
            metric_steps=none,
        )
        for run_id, name in zip(ids, names, strict=True)
    ]


def _page_pairs(
    con: sqlite3.Connection, table: str, marks: str, ids: list[str], held: Held
) -> dict[str, Pairs[str]]:
    """A key-value table's rows for a page of runs, packed with ``held``."""
    keep = held.texts.setdefault
    found: defaultdict[str, dict[str, str]] = defaultdict(dict)
    for run_id, key, value in con.execute(OF_PAGE.format(table=table, marks=marks), ids):
        found[run_id][keep(key, key)] = keep(value, value)
    return _packed(found, held)
