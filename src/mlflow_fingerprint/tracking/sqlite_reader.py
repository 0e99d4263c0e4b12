"""A local MLflow sqlite file read for a few runs straight from its tables, without MLflow.

Why: ``fingerprint diff A B`` on the embedded store (``sqlite:///mlflow.db``) spent 2.5 of its
2.9 CPU-seconds importing MLflow and its SQLAlchemy store, to read two runs' rows and a few
files beside them. :class:`Reader` answers the calls ``diff``, ``show`` and a run's description
make (``get_run``, the experiments, ``search_runs`` with the filters this package writes, a run's
artifacts in a local folder) with the objects the REST reader returns (``rest.Run``...), read as
MLflow's client reads them: a run's row, tags, params and latest metrics; runs in MLflow's search
order (a start time, newest first, then the run id), active ones only.

Anything else is MLflow's to answer, so it is asked, imported then: a filter in the rest of
MLflow's language (``explain --filter``), a page of a search past its first, artifacts that do
not live in a local folder. A file :func:`opens` does not vouch for (not created by MLflow,
left half-migrated, holding several workspaces) is read through MLflow's client from the start,
which says what is wrong with it in its own words.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..layout import MLFLOW_RUN_NAME
from .experiment import local_root
from .local_store import created, leftovers, one_workspace, read_only
from .rest import Experiment, FileInfo, Metric, Page, Run, RunData, RunInfo

NOT_FOUND = "RESOURCE_DOES_NOT_EXIST"
ACTIVE = "active"
COLUMNS = (
    "r.run_uuid, r.experiment_id, COALESCE(NULLIF(r.name, ''), NULLIF(n.value, ''), r.name), "
    "r.status, r.start_time, r.end_time, r.artifact_uri, r.lifecycle_stage"
)
ROOT = "SELECT artifact_uri FROM runs WHERE run_uuid = ?"
RUN = (
    f"SELECT {COLUMNS} FROM runs r LEFT JOIN tags n ON n.run_uuid = r.run_uuid AND n.key = ? "
    "WHERE r.run_uuid = ?"
)
PAIRS = "SELECT key, value FROM {table} WHERE run_uuid = ? ORDER BY rowid"
LATEST = (
    "SELECT key, value, timestamp, step, is_nan FROM latest_metrics WHERE run_uuid = ? "
    "ORDER BY rowid"
)
EXPERIMENT = (
    "SELECT experiment_id, name, artifact_location, lifecycle_stage FROM experiments WHERE {by} = ?"
)
EXPERIMENTS = (
    "SELECT experiment_id, name, artifact_location, lifecycle_stage FROM experiments "
    "WHERE lifecycle_stage = ? ORDER BY creation_time DESC, experiment_id LIMIT ?"
)
# The search order MLflow gives ``attributes.start_time DESC`` (and no order at all): runs
# without a start time last, the newest first, then by id.
ORDER = "ORDER BY r.start_time IS NULL, r.start_time DESC, r.run_uuid"

# The clauses of the filters this package writes (``tracking.store.quote`` makes the strings):
# a tag's value, the run's name or status, a start time before a moment; joined by ``and``.
_STRING = r"""(?:'(?P<{0}1>[^']*)'|"(?P<{0}2>[^"]*)")"""
_CLAUSE = re.compile(
    r"\s*(?:"
    r"tags\.`(?P<tag>[^`]+)`\s*=\s*" + _STRING.format("tv") + "|"
    r"attributes\.(?P<attr>run_name|status)\s*=\s*" + _STRING.format("av") + "|"
    r"attributes\.start_time\s*<\s*(?P<before>\d+)"
    r")\s*(?:(?P<more>and)\s+|$)",
    re.IGNORECASE,
)
_ATTRIBUTE_COLUMNS = {"run_name": "r.name", "status": "r.status"}


def opens(path: Path) -> bool:
    """Whether ``path`` is a file :class:`Reader` reads as MLflow's client would: one MLflow
    created and finished migrating, holding one workspace (MLflow reads only the active one's)."""
    if not created(path) or leftovers(path):
        return False
    try:
        with closing(read_only(path)) as con:
            return one_workspace(con)
    except sqlite3.Error:
        return False


def where(filter_string: str) -> tuple[str, list[str | int]] | None:
    """``filter_string`` as an SQL condition on runs ``r`` and its arguments, where it is a
    conjunction of the clauses this module knows; None for anything else (MLflow's to read)."""
    conditions: list[str] = []
    args: list[str | int] = []
    text = filter_string.strip()
    at, more = 0, bool(text)
    while more:
        found = _CLAUSE.match(text, at)
        if found is None:
            return None
        if found.group("tag") is not None:
            conditions.append(
                "EXISTS (SELECT 1 FROM tags t WHERE t.run_uuid = r.run_uuid "
                "AND t.key = ? AND t.value = ?)"
            )
            args += [found.group("tag"), _string(found, "tv")]
        elif found.group("attr") is not None:
            conditions.append(f"{_ATTRIBUTE_COLUMNS[found.group('attr').lower()]} = ?")
            args.append(_string(found, "av"))
        else:
            conditions.append("r.start_time < ?")
            args.append(int(found.group("before")))
        at, more = found.end(), found.group("more") is not None
        if more and at >= len(text):
            return None  # a trailing "and"
    return " AND ".join(conditions) or "1", args


def _string(found: re.Match[str], name: str) -> str:
    single = found.group(f"{name}1")
    return single if single is not None else str(found.group(f"{name}2"))


class Reader:
    """The read-only part of ``MlflowClient`` the comparator uses, for one local sqlite file
    that :func:`opens` vouched for; what it cannot answer, MLflow's client does."""

    def __init__(self, path: Path, uri: str) -> None:
        self.path = path
        self.uri = uri
        self._mlflow: Any = None

    def _through_mlflow(self) -> Any:
        if self._mlflow is None:
            from .store import client

            self._mlflow = client(self.uri)
        return self._mlflow

    # -- runs and experiments --------------------------------------------------------------------

    def get_run(self, run_id: str) -> Run:
        with closing(read_only(self.path)) as con:
            row = con.execute(RUN, (MLFLOW_RUN_NAME, run_id)).fetchone()
            if row is None:
                raise StoreError(f"{NOT_FOUND}: Run with id={run_id} not found", NOT_FOUND)
            return _run(con, row)

    def search_runs(
        self,
        experiment_ids: Sequence[str],
        filter_string: str = "",
        max_results: int = 1000,
        page_token: str | None = None,
        order_by: Sequence[str] | None = None,
    ) -> Any:
        newest_first = list(order_by or ()) in ([], ["attributes.start_time DESC"])
        condition = where(filter_string) if newest_first and page_token is None else None
        if condition is not None:
            sql, args = condition
            marks = ",".join("?" * len(experiment_ids))
            query = (
                f"SELECT {COLUMNS} FROM runs r "
                "LEFT JOIN tags n ON n.run_uuid = r.run_uuid AND n.key = ? "
                f"WHERE r.experiment_id IN ({marks}) AND r.lifecycle_stage = ? AND {sql} "
                f"{ORDER} LIMIT ?"
            )
            ids = [int(e) for e in experiment_ids]
            with closing(read_only(self.path)) as con:
                rows = con.execute(query, (MLFLOW_RUN_NAME, *ids, ACTIVE, *args, max_results + 1))
                found = [_run(con, row) for row in rows.fetchall()]
            if len(found) <= max_results:  # else more than a page: MLflow pages the search
                return Page(found, None)
        return self._through_mlflow().search_runs(
            experiment_ids,
            filter_string=filter_string,
            max_results=max_results,
            page_token=page_token,
            order_by=list(order_by) if order_by else None,
        )

    def get_experiment(self, experiment_id: str) -> Experiment:
        found = self._experiment("experiment_id", experiment_id)
        if found is None:
            missing = f"{NOT_FOUND}: No Experiment with id={experiment_id} exists"
            raise StoreError(missing, NOT_FOUND)
        return found

    def get_experiment_by_name(self, name: str) -> Experiment | None:
        return self._experiment("name", name)

    def _experiment(self, by: str, value: str) -> Experiment | None:
        with closing(read_only(self.path)) as con:
            row = con.execute(EXPERIMENT.format(by=by), (value,)).fetchone()
        return None if row is None else _experiment(row)

    def search_experiments(self, max_results: int = 1000, page_token: str | None = None) -> Any:
        """The active experiments, in MLflow's order (the newest first, then by id); a search
        past one page is MLflow's."""
        if page_token is None:
            with closing(read_only(self.path)) as con:
                rows = con.execute(EXPERIMENTS, (ACTIVE, max_results + 1)).fetchall()
            if len(rows) <= max_results:
                return Page([_experiment(row) for row in rows], None)
        return self._through_mlflow().search_experiments(
            max_results=max_results, page_token=page_token
        )

    def metric_history_page(
        self, run_id: str, key: str, max_results: int, page_token: str | None
    ) -> Any:
        store = self._through_mlflow()._tracking_client.store
        return store.get_metric_history(
            run_id=run_id, metric_key=key, max_results=max_results, page_token=page_token
        )

    # -- artifacts ---------------------------------------------------------------------------------

    def _root(self, run_id: str) -> Path | None:
        """Where the run's artifacts are on this machine (None: not in a local folder), read
        alone: listing or fetching a file needs no tags, params or metrics."""
        with closing(read_only(self.path)) as con:
            row = con.execute(ROOT, (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"{NOT_FOUND}: Run with id={run_id} not found", NOT_FOUND)
        return local_root(row[0] or "")

    def list_artifacts(self, run_id: str, path: str | None = None) -> list[FileInfo]:
        """The entries of a run's artifact folder ``path``, as MLflow's local repository lists
        them (a file's size, none for a folder), by path."""
        root = self._root(run_id)
        if root is None:
            return list(self._through_mlflow().list_artifacts(run_id, path))
        folder = _inside(root, path or "")
        if not folder.is_dir():
            return []
        return sorted(
            (
                FileInfo(
                    f"{path}/{entry.name}" if path else entry.name,
                    entry.is_dir(),
                    None if entry.is_dir() else entry.stat().st_size,
                )
                for entry in folder.iterdir()
            ),
            key=lambda f: f.path,
        )

    def download_artifacts(self, run_id: str, path: str, dst_path: str | None = None) -> str:
        """One file of the run, copied under ``dst_path``; its local path."""
        root = self._root(run_id)
        if root is None:
            return str(self._through_mlflow().download_artifacts(run_id, path, dst_path))
        source = _inside(root, path)
        if not source.is_file():  # a folder, a FIFO, nothing: never opened, never waited on
            raise StoreError(f"{NOT_FOUND}: no artifact file {path} in run {run_id}", NOT_FOUND)
        local = Path(dst_path or ".") / path
        local.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, local)
        return str(local)


def _inside(root: Path, path: str) -> Path:
    """``root / path``, refused where ``path`` leads outside ``root`` (``../``, absolute)."""
    parts = Path(path).parts
    if Path(path).is_absolute() or ".." in parts:
        raise StoreError(f"artifact path {path!r} leads outside the run's artifacts", "")
    return root.joinpath(*parts)


def _experiment(row: Sequence[Any]) -> Experiment:
    experiment_id, name, location, stage = row
    return Experiment(str(experiment_id), name, location or "", stage)


def _run(con: sqlite3.Connection, row: Sequence[Any]) -> Run:
    """A run's entity from its row (:data:`COLUMNS`) and its tags, params and latest metrics."""
    run_id, experiment_id, name, status, start, end, artifact_uri, stage = row
    tags, params = (dict(con.execute(PAIRS.format(table=t), (run_id,))) for t in ("tags", "params"))
    latest = tuple(
        Metric(key, float("nan") if is_nan else float(value), int(timestamp or 0), int(step or 0))
        for key, value, timestamp, step, is_nan in con.execute(LATEST, (run_id,))
    )
    info = RunInfo(
        run_id=run_id,
        experiment_id=str(experiment_id),
        run_name=name,
        status=str(status),
        start_time=start,
        end_time=end,
        artifact_uri=artifact_uri or "",
        lifecycle_stage=stage,
    )
    metrics = {m.key: m.value for m in latest}
    return Run(info, RunData(metrics, params, tags, latest))
