"""Reading many runs of an experiment at once, for ``explain``: batched, never a request per field.

- The runs, with their params, tags and latest metric values, come from ``search_runs`` pages of
  1,000 (one request per page).
- Their fingerprint records are files in the artifact store, one per run. Where the run's
  artifact root is a local folder (a sqlite or file store), the file is read from disk. Anywhere
  else (``mlflow-artifacts:`` behind ``mlflow server``, S3...), each record is one download through
  MLflow's artifact repository for that root, without the listing ``download_artifacts`` does
  first, from a small thread pool: one request per run, a few at a time.
- The metric at a given step: on a local sqlite store one query per 500 runs; elsewhere each
  run's history, from the same thread pool.

Store failures become a ``ResolveError`` naming the store (``store.store_errors``); a run whose
record is simply not there reads as ``None``.
"""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from .. import layout
from . import rest
from .history import read_store
from .rest import proxied_root
from .store import sqlite_file, store_errors

T = TypeVar("T")
R = TypeVar("R")

SEARCH_PAGE = 1000  # the most one search_runs request returns on every store
READ_THREADS = 8  # concurrent artifact downloads: enough to hide latency, few for the server
SQLITE_BATCH = 500  # run ids per query (sqlite allows 999 bound parameters by default)


@dataclass(frozen=True)
class StoredRun:
    """What one ``search_runs`` row says about a run: enough to explain without asking again."""

    run_id: str
    name: str | None
    status: str
    experiment_id: str
    artifact_uri: str
    params: Mapping[str, str]
    tags: Mapping[str, str]
    metrics: Mapping[str, float]  # the latest value of each metric
    metric_steps: Mapping[str, int]  # the step that latest value was logged at


def stored_run(run: Any) -> StoredRun:
    """An MLflow ``Run`` (or the REST reader's) as :class:`StoredRun`."""
    latest = getattr(run.data, "_metric_objs", None) or []
    return StoredRun(
        run_id=run.info.run_id,
        name=run.info.run_name,
        status=str(run.info.status),
        experiment_id=str(run.info.experiment_id),
        artifact_uri=str(run.info.artifact_uri or ""),
        params=MappingProxyType(dict(run.data.params)),
        tags=MappingProxyType(dict(run.data.tags)),
        metrics=MappingProxyType(dict(run.data.metrics)),
        metric_steps=MappingProxyType({m.key: int(m.step or 0) for m in latest}),
    )


def search(
    mlflow_client: Any, experiment_ids: Sequence[str], filter_string: str
) -> list[StoredRun]:
    """Every active run of the experiments that ``filter_string`` matches, oldest first, in pages
    of :data:`SEARCH_PAGE`. Raises whatever the store raises (a bad filter, an outage)."""
    runs: list[StoredRun] = []
    token = None
    while True:
        page = mlflow_client.search_runs(
            list(experiment_ids),
            filter_string=filter_string,
            max_results=SEARCH_PAGE,
            page_token=token,
            order_by=["attributes.start_time ASC"],
        )
        runs.extend(stored_run(r) for r in page)
        token = page.token
        if not token:
            return runs


def local_root(artifact_uri: str) -> Path | None:
    """The folder an artifact root names on this machine (a bare path or ``file:``), else None."""
    parsed = urlparse(artifact_uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" and artifact_uri:
        return Path(artifact_uri)
    return None


def _read_local(root: Path, path: str) -> bytes | None:
    try:
        return (root / path).read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _missing(exc: BaseException) -> bool:
    """The store answered that the artifact is not there (as opposed to not answering)."""
    code = getattr(exc, "error_code", None)
    if code in ("RESOURCE_DOES_NOT_EXIST", "NOT_FOUND"):
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    text = str(exc)
    return status == 404 or "404" in text or "does not exist" in text or "No such file" in text


def _download(artifact_uri: str, path: str, tracking_uri: str, folder: Path) -> bytes | None:
    """One file of a run's remote artifact root, in one request: the repository's own
    ``_download_file`` (what every MLflow artifact repository implements), without the listing,
    the thread pool and the progress bar of its ``download_artifacts``."""
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    repo = get_artifact_repository(artifact_uri, tracking_uri=tracking_uri)
    local = folder / f"{abs(hash(artifact_uri))}-{threading.get_ident()}.json"
    try:
        repo._download_file(path, str(local))
    except Exception as exc:
        if _missing(exc):
            return None
        raise
    try:
        return local.read_bytes()
    finally:
        local.unlink(missing_ok=True)


def pooled(fn: Callable[[T], R], items: Iterable[T], threads: int = READ_THREADS) -> list[R]:
    """``[fn(x) for x in items]`` on a few threads, in order; the first failure is raised."""
    items = list(items)
    if len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mfp-read") as pool:
        return list(pool.map(fn, items))


def share_key(run: StoredRun) -> tuple[str, ...] | None:
    """What a run's record shares with the records of other runs: every section hash its
    ``fingerprint.hash.*`` tags carry and its schema. Runs with equal keys hold equal records in
    every field a hash covers (env, numerics, recipe with its seeds, replicate); what no hash
    covers is volatile (host, pid, paths, times: never compared by ``explain``) or follows from
    a hashed field (the package list from its digest). None where a tag is absent or
    ``unavailable``: such a run's record is read for itself."""
    key = (
        *(run.tags.get(tag, "") for tag in layout.HASH_TAGS.values()),
        run.tags.get(layout.TAG_SCHEMA, ""),
    )
    return None if not all(key) or "unavailable" in key else key


def read_records(
    runs: Sequence[StoredRun], tracking_uri: str, reader: Any = None
) -> dict[str, bytes | None]:
    """Each run's fingerprint record, read once per distinct record (:func:`share_key`): a run
    whose key another run holds gets that run's bytes (the same object, so a caller parses it
    once). Where the first run of a key has no readable artifact, the others of that key are
    read for themselves."""
    first: dict[tuple[str, ...], StoredRun] = {}
    alone: list[StoredRun] = []
    for run in runs:
        key = share_key(run)
        if key is None:
            alone.append(run)
        else:
            first.setdefault(key, run)
    found = read_artifacts([*alone, *first.values()], tracking_uri, reader=reader)
    empty = {key for key, run in first.items() if found[run.run_id] is None}
    if empty:
        again = [r for r in runs if share_key(r) in empty and r.run_id not in found]
        found.update(read_artifacts(again, tracking_uri, reader=reader))
    out: dict[str, bytes | None] = {}
    for run in runs:
        key = share_key(run)
        own = key is None or key in empty
        out[run.run_id] = found[run.run_id] if own else found[first[key].run_id]
    return out


def _artifact_reader(reader: Any, tracking_uri: str) -> Callable[[str, str], bytes] | None:
    """What reads a file under the server's artifact proxy: the given ``rest.Reader``'s, else one
    made for the server where it reads it as MLflow's client would (``rest.serves``): MLflow's
    own HTTP artifact repository waits out a delayed ACK on each request (``rest._quick_ack``)."""
    served = getattr(reader, "artifact_file", None)
    if served is None and rest.serves(tracking_uri):
        served = rest.Reader(tracking_uri).artifact_file
    return served


def read_artifacts(
    runs: Sequence[StoredRun],
    tracking_uri: str,
    path: str = layout.FINGERPRINT_ARTIFACT,
    reader: Any = None,
) -> dict[str, bytes | None]:
    """Each run's artifact ``path`` (None where the run has none), by run id. Those the server
    serves (``mlflow-artifacts:``) are read through ``rest.Reader``, without MLflow's
    repositories (:func:`_artifact_reader`)."""
    served = (
        _artifact_reader(reader, tracking_uri)
        if any(local_root(r.artifact_uri) is None for r in runs)
        else None
    )
    out: dict[str, bytes | None] = {}
    remote: list[StoredRun] = []
    for run in runs:
        root = local_root(run.artifact_uri)
        if root is None:
            remote.append(run)
        else:
            out[run.run_id] = _read_local(root, path)
    if remote:
        with store_errors(tracking_uri), tempfile.TemporaryDirectory(prefix="mfp-") as tmp:
            folder = Path(tmp)

            def fetch(run: StoredRun) -> bytes | None:
                root = proxied_root(run.artifact_uri) if served is not None else None
                if root is None:
                    return _download(run.artifact_uri, path, tracking_uri, folder)
                try:
                    return served(root, path)
                except Exception as exc:
                    if _missing(exc):  # the one rule for an absent file, as in _download
                        return None
                    raise

            found = pooled(fetch, remote)
        out.update(zip((r.run_id for r in remote), found, strict=True))
    return out


SQLITE_AT_STEP = (
    "SELECT run_uuid, value, is_nan FROM metrics WHERE key = ? AND step = ? AND run_uuid IN ({}) "
    "ORDER BY timestamp, value"
)


def _sqlite_at_step(path: Path, key: str, step: int, run_ids: Sequence[str]) -> dict[str, float]:
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    out: dict[str, float] = {}
    try:
        for start in range(0, len(run_ids), SQLITE_BATCH):
            part = list(run_ids[start : start + SQLITE_BATCH])
            query = SQLITE_AT_STEP.format(",".join("?" * len(part)))
            for run_id, value, is_nan in con.execute(query, (key, step, *part)):
                out[run_id] = float("nan") if is_nan else float(value)  # the last logged wins
    finally:
        con.close()
    return out


def values_at_step(
    mlflow_client: Any, tracking_uri: str, run_ids: Sequence[str], key: str, step: int
) -> dict[str, float]:
    """The value of metric ``key`` each run logged at ``step`` (the last, if logged twice there);
    runs that logged none at that step are not in the result."""
    path = sqlite_file(tracking_uri)
    if path is not None and path.is_file():
        try:
            return _sqlite_at_step(path, key, step, run_ids)
        except sqlite3.Error:
            pass  # not MLflow's schema (or locked): the store's own API still works

    def at(run_id: str) -> float | None:  # the paged history reads diff uses
        (history,) = read_store(mlflow_client, run_id, [key]).values()
        hits = history.values[history.steps == step]
        return float(hits[-1]) if len(hits) else None

    with store_errors(tracking_uri):
        found = pooled(at, run_ids)
    return {r: v for r, v in zip(run_ids, found, strict=True) if v is not None}
