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

import collections
import itertools
import math
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from .. import layout
from ..stored_files import read_regular
from . import rest
from .history import read_store
from .local_store import read_only
from .pairs import Held, pack
from .progress import Progress
from .record_cache import RecordCache
from .rest import proxied_root
from .store import refused_as, sqlite_file, store_errors

T = TypeVar("T")
R = TypeVar("R")

SEARCH_PAGE = 1000  # the most one search_runs request returns on every store
SEARCH_THREADS = 4  # slices of a server's runs read at once: its workers answer in parallel
SEARCH_AHEAD = 2 * SEARCH_THREADS  # slices read before the caller has taken the ones before
# Runs in the first page and in each slice of a sliced search: small enough that even a
# thousand runs are read by several workers at once, large enough that a request's own cost
# (a few ms) stays small beside its runs'.
SLICE_RUNS = 250
MAX_SLICES = 256  # slices of start time a search is cut into, at most
READ_THREADS = 8  # concurrent artifact downloads: enough to hide latency, few for the server
SQLITE_BATCH = 500  # run ids per query (sqlite allows 999 bound parameters by default)


@dataclass(frozen=True, slots=True)
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


def stored_run(run: Any, held: Held | None = None) -> StoredRun:
    """An MLflow ``Run`` (or the REST reader's) as :class:`StoredRun`; its params, tags and
    metrics packed with those of the other runs read with the same ``held`` (``pairs.pack``)."""
    latest = getattr(run.data, "_metric_objs", None) or []
    held = Held() if held is None else held
    tags = pack(run.data.tags, held)  # first: the name is the text its mlflow.runName tag holds
    name = run.info.run_name
    return StoredRun(
        run_id=run.info.run_id,
        name=held.text(name) if isinstance(name, str) else name,
        status=held.text(str(run.info.status)),
        experiment_id=held.text(str(run.info.experiment_id)),
        artifact_uri=str(run.info.artifact_uri or ""),
        params=pack(run.data.params, held),
        tags=tags,
        metrics=pack(run.data.metrics, held),
        metric_steps=pack({m.key: int(m.step or 0) for m in latest}, held, whole=True),
    )


def search_pages(
    mlflow_client: Any,
    experiment_ids: Sequence[str],
    filter_string: str,
    *,
    parallel: bool = False,
    progress: Progress | None = None,
) -> Iterator[list[StoredRun]]:
    """Every active run of the experiments that ``filter_string`` matches, oldest first, in pages
    of :data:`SEARCH_PAGE`, each given as it comes: a caller that makes what it needs of a page
    and drops it never holds a history's rows. Raises whatever the store raises (a bad filter,
    an outage) where the page it asked for is read.

    ``parallel`` (a server: its workers answer at once) reads a first page of
    :data:`SLICE_RUNS`, then the rest in slices of start time of about as many runs,
    :data:`SEARCH_THREADS` at a time (:func:`_slices`): the same runs in the same order, and no
    deep page, which a store answers with an ever larger ``OFFSET``. Each page becomes
    :class:`StoredRun` rows as it arrives, the store's objects dropped; the rows of a page (a
    slice) share one string per name and repeated value."""
    progress = progress or Progress(False)
    progress.stage("runs")
    first = SLICE_RUNS if parallel else SEARCH_PAGE
    page = _page(mlflow_client, experiment_ids, filter_string, None, first)
    held = Held()
    runs = [stored_run(r, held) for r in page]
    progress.add(len(runs))
    sliced = parallel and page.token
    plan = _slices(mlflow_client, experiment_ids, filter_string, page) if sliced else None
    if plan is None:
        yield runs
        if page.token:
            yield from _pages(mlflow_client, experiment_ids, filter_string, page.token, progress)
        return
    kept, bounds = plan
    yield runs[:kept]
    del runs, page
    slices = [_within(filter_string, low, high) for low, high in itertools.pairwise(bounds)]
    yield from _ahead(
        lambda f: [
            run for part in _pages(mlflow_client, experiment_ids, f, None, progress) for run in part
        ],
        slices,
    )


def _ahead(fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
    """``fn`` of each item, in order, :data:`SEARCH_THREADS` at a time, at most
    :data:`SEARCH_AHEAD` results made before the caller takes them: a caller slower than the
    store (making records of each page) holds a few slices' rows, not the history's, which a
    pool's ``map`` would read to the end meanwhile."""
    with ThreadPoolExecutor(max_workers=SEARCH_THREADS, thread_name_prefix="mfp-read") as pool:
        pending = collections.deque(pool.submit(fn, x) for x in items[:SEARCH_AHEAD])
        for x in items[SEARCH_AHEAD:]:
            done = pending.popleft().result()
            pending.append(pool.submit(fn, x))
            yield done
        while pending:
            yield pending.popleft().result()


def _page(
    mlflow_client: Any,
    experiment_ids: Sequence[str],
    filter_string: str,
    token: Any,
    size: int | None = None,
) -> Any:
    return mlflow_client.search_runs(
        list(experiment_ids),
        filter_string=filter_string,
        max_results=size or SEARCH_PAGE,
        page_token=token,
        order_by=["attributes.start_time ASC"],
    )


def _pages(
    mlflow_client: Any,
    experiment_ids: Sequence[str],
    filter_string: str,
    token: str | None,
    progress: Progress,
) -> Iterator[list[StoredRun]]:
    """The runs ``filter_string`` matches, page after page from ``token``."""
    held = Held()  # the pages of one slice share their strings
    while True:
        page = _page(mlflow_client, experiment_ids, filter_string, token)
        yield [stored_run(r, held) for r in page]
        progress.add(len(page))
        token = page.token
        if not token:
            return


def _within(filter_string: str, low: int, high: int) -> str:
    """``filter_string`` and a slice of start times (MLflow's filters join with ``and`` only)."""
    bounds = f"attributes.start_time >= {low} and attributes.start_time < {high}"
    return f"{filter_string} and {bounds}" if filter_string.strip() else bounds


def _slices(
    mlflow_client: Any, experiment_ids: Sequence[str], filter_string: str, first: Any
) -> tuple[int, list[int]] | None:
    """How to read the runs after the first page: how many of its runs to keep (those started
    before its last start time; the runs at that time are read again with the rest, so none is
    split between slices) and the start times bounding the slices, from that time to the newest
    run's, cut so each slice holds about :data:`SLICE_RUNS` runs if the runs after the first
    page started as densely as those in it. None where start times cannot slice the runs
    (unknown, or one page all started in one millisecond): the pages are then read one after
    another."""
    times = [r.info.start_time for r in first]
    if any(t is None for t in times):
        return None
    oldest, last = int(times[0]), int(times[-1])
    kept = sum(t < last for t in times)
    newest_page = mlflow_client.search_runs(
        list(experiment_ids),
        filter_string=filter_string,
        max_results=1,
        order_by=["attributes.start_time DESC"],
    )
    if not kept or not newest_page or newest_page[0].info.start_time is None:
        return None
    newest = int(newest_page[0].info.start_time)
    expected = (len(times) - kept) + len(times) * (newest - last) / max(last - oldest, 1)
    count = max(1, min(MAX_SLICES, math.ceil(expected / SLICE_RUNS)))
    step = max(1, math.ceil((newest + 1 - last) / count))
    bounds = [*range(last, newest + 1, step), newest + 1]
    return kept, bounds


def local_root(artifact_uri: str) -> Path | None:
    """The folder an artifact root names on this machine (a bare path or ``file:``), else None."""
    parsed = urlparse(artifact_uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" and artifact_uri:
        return Path(artifact_uri)
    return None


def _read_local(root: Path, path: str) -> bytes | None:
    """An artifact of a local store, as the store holds it: a link is not followed."""
    try:
        return read_regular(root / path, follow_links=False)
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
        return read_regular(local, follow_links=False)
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
    runs: Sequence[StoredRun],
    tracking_uri: str,
    reader: Any = None,
    progress: Progress | None = None,
    cache: RecordCache | None = None,
) -> dict[str, bytes | None]:
    """Each run's fingerprint record, read once per distinct record (:func:`share_key`): a run
    whose key another run holds gets that run's bytes (the same object, so a caller parses it
    once). Where the first run of a key has no readable artifact, the others of that key are
    read for themselves. ``cache`` holds records read from remote stores before, by key: those
    found there are not read again; those read are filed there."""
    first: dict[tuple[str, ...], StoredRun] = {}
    alone: list[StoredRun] = []
    for run in runs:
        key = share_key(run)
        if key is None:
            alone.append(run)
        else:
            first.setdefault(key, run)
    found: dict[str, bytes | None] = {}
    remote = {
        k: r for k, r in first.items() if cache is not None and local_root(r.artifact_uri) is None
    }
    for key, run in remote.items():
        found[run.run_id] = cache.get(key) if cache is not None else None
    todo = [*alone, *(r for r in first.values() if found.get(r.run_id) is None)]
    if progress is not None:
        progress.stage("records", len(todo))
    found.update(read_artifacts(todo, tracking_uri, reader=reader, progress=progress))
    if cache is not None:
        read = {r.run_id for r in todo}
        fresh = [(k, found[r.run_id]) for k, r in remote.items() if r.run_id in read]
        for key, data in fresh:
            if data is not None:
                cache.put(key, data)
        if fresh:
            cache.prune()
    empty = {key for key, run in first.items() if found[run.run_id] is None}
    if empty:
        again = [r for r in runs if share_key(r) in empty and r.run_id not in found]
        found.update(read_artifacts(again, tracking_uri, reader=reader))
    out: dict[str, bytes | None] = {}
    for run in runs:
        key = share_key(run)
        if key is None or key in empty:  # its own bytes
            out[run.run_id] = found[run.run_id]
        else:
            out[run.run_id] = found[first[key].run_id]
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
    progress: Progress | None = None,
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
            with refused_as(run.run_id, path):
                out[run.run_id] = _read_local(root, path)
    if remote:
        with store_errors(tracking_uri), tempfile.TemporaryDirectory(prefix="mfp-") as tmp:
            folder = Path(tmp)

            def fetch(run: StoredRun) -> bytes | None:
                if progress is not None:
                    progress.add(1)
                root = proxied_root(run.artifact_uri) if served is not None else None
                with refused_as(run.run_id, path):
                    if root is None or served is None:  # root is None where served is
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
    con = read_only(path)
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
    reader: Callable[[], Any], tracking_uri: str, run_ids: Sequence[str], key: str, step: int
) -> dict[str, float]:
    """The value of metric ``key`` each run logged at ``step`` (the last, if logged twice there);
    runs that logged none at that step are not in the result. ``reader`` gives the store's
    reader where it is needed: a local sqlite file is queried without one."""
    path = sqlite_file(tracking_uri)
    if path is not None and path.is_file():
        try:
            return _sqlite_at_step(path, key, step, run_ids)
        except sqlite3.Error:
            pass  # not MLflow's schema (or locked): the store's own API still works

    mlflow_client = reader()

    def at(run_id: str) -> float | None:  # the paged history reads diff uses
        (history,) = read_store(mlflow_client, run_id, [key]).values()
        hits = history.values[history.steps == step]
        return float(hits[-1]) if len(hits) else None

    with store_errors(tracking_uri):
        found = pooled(at, run_ids)
    return {r: v for r, v in zip(run_ids, found, strict=True) if v is not None}
