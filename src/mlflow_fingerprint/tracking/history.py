"""Fetch metric histories as compact arrays, page by page.

``MlflowClient.get_metric_history`` builds one ``Metric`` object per logged value and keeps the
whole list; for 100,000 steps that is most of a diff's time and memory. Here each page becomes
two numpy arrays at once (steps, values) and is dropped. On a local sqlite store the ``metrics``
table is read directly, read-only, in one indexed query per key: same rows, same order as the
store's own query, without the ORM. Any other store is paged through its ``get_metric_history``
with an explicit ``max_results`` (without one, some stores return an empty page and a token that
never advances: mlflow#23916).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .local_store import read_only
from .store import sqlite_file

PAGE_SIZE = 25_000  # MLflow's own GET_METRIC_HISTORY_MAX_RESULTS
ROW = np.dtype([("step", "i8"), ("value", "f8"), ("nan", "i1"), ("time", "i8")])

# The store orders a history by (timestamp, step, value); so does this query.
SQLITE_QUERY = (
    "SELECT step, value, is_nan, timestamp FROM metrics WHERE run_uuid = ? AND key = ? "
    "ORDER BY timestamp, step, value"
)


@dataclass(frozen=True)
class History:
    """One metric of one run, sorted by step; values logged at one step stay in logging order.
    ``times``: when each value was logged (ms since the epoch), where read; it tells a value
    logged once at the end of a run (a summary) from a point of a curve."""

    steps: np.ndarray
    values: np.ndarray
    times: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.steps)


def _history(chunks: list[np.ndarray]) -> History:
    rows = np.concatenate(chunks) if chunks else np.empty(0, dtype=ROW)
    values = np.where(rows["nan"] != 0, np.nan, rows["value"])
    order = np.argsort(rows["step"], kind="stable")
    return History(rows["step"][order], values[order], rows["time"][order])


def _sqlite_pages(cursor: sqlite3.Cursor) -> Iterator[np.ndarray]:
    while rows := cursor.fetchmany(PAGE_SIZE * 4):
        yield np.fromiter(rows, dtype=ROW, count=len(rows))


def read_sqlite(path: Path, run_id: str, keys: Iterable[str]) -> dict[str, History]:
    """Histories straight from the ``metrics`` table, opened read-only."""
    con = read_only(path)
    try:
        return {
            key: _history(list(_sqlite_pages(con.execute(SQLITE_QUERY, (run_id, key)))))
            for key in keys
        }
    finally:
        con.close()


def _store_pages(mlflow_client: Any, run_id: str, key: str) -> Iterator[np.ndarray]:
    paged = getattr(mlflow_client, "metric_history_page", None)  # a ``rest.Reader``
    if paged is None:
        store = mlflow_client._tracking_client.store  # the paged API lives on the store only

        def paged(run_id: str, key: str, max_results: int, page_token: str | None) -> Any:
            return store.get_metric_history(
                run_id=run_id, metric_key=key, max_results=max_results, page_token=page_token
            )

    token = None
    while True:
        page = paged(run_id, key, PAGE_SIZE, token)
        rows = ((m.step, m.value, 0, m.timestamp) for m in page)
        yield np.fromiter(rows, dtype=ROW, count=len(page))
        if not page.token or page.token == token:
            return
        token = page.token


def read_store(mlflow_client: Any, run_id: str, keys: Iterable[str]) -> dict[str, History]:
    return {key: _history(list(_store_pages(mlflow_client, run_id, key))) for key in keys}


def fetch(mlflow_client: Any, uri: str, run_id: str, keys: Iterable[str]) -> dict[str, History]:
    """Every history of ``keys`` for one run, by the fastest path the store allows."""
    keys = list(keys)
    path = sqlite_file(uri)
    if path is not None and path.is_file():
        try:
            return read_sqlite(path, run_id, keys)
        except sqlite3.Error:
            pass  # not MLflow's schema (or locked): the store's own API still works
    return read_store(mlflow_client, run_id, keys)
