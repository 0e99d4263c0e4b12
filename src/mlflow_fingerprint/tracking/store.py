"""The comparator's only door to MLflow: a client, and store failures turned into one line.

mlflow is imported here, lazily, so diffing two fingerprint files never pays for it; the read-only
commands read a tracking server through its REST API and a local sqlite file through its tables
without it (:func:`reader`, ``rest.py``, ``sqlite_reader.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import layout
from ..errors import RefusedFile, ResolveError, UnreadableFile
from ..stored_files import read_regular
from .local_store import created, failure, ready, sqlite_file

# Params the run wrapper logs from the fingerprint itself (``tags.run_params``): compared there.
OWN_PARAMS = frozenset({layout.PARAM_BATCH_SIZE, layout.PARAM_NUM_WORKERS, layout.PARAM_SEED})


def user_params(params: dict[str, str]) -> dict[str, str]:
    """The params a run logged itself (its own hyperparameters, Lightning's or HF's), as the
    comparator's ``params`` section: what the user changed is often only there."""
    return {name: value for name, value in sorted(params.items()) if name not in OWN_PARAMS}


def shown(uri: str) -> str:
    """A tracking URI as it may appear in a message: without the credentials it may carry."""
    from ..redact import strip_url_credentials

    return strip_url_credentials(uri)


def effective_uri(tracking_uri: str | None) -> str:
    """The URI MLflow will use: the given one, else $MLFLOW_TRACKING_URI, else its default.
    MLflow is asked only where it is imported (``mlflow.set_tracking_uri`` may have been
    called) or for its default: a command given a server needs no MLflow (``rest.py``)."""
    if tracking_uri:
        return checked(tracking_uri)
    if "mlflow" not in sys.modules and os.environ.get("MLFLOW_TRACKING_URI"):
        return checked(os.environ["MLFLOW_TRACKING_URI"])
    import mlflow

    return checked(str(mlflow.get_tracking_uri()))


def checked(uri: str) -> str:
    """``uri``, or a ResolveError where a server's URI is no URL (``http://[bad``, a port that
    is no number): said of the URI, not as a parser's bare ``ValueError``."""
    from urllib.parse import urlsplit

    from .credentials import refuse_raw_password

    refuse_raw_password(uri)  # a password written with a reserved character: its own words
    if uri.startswith(("http://", "https://")):
        try:
            urlsplit(uri).port  # noqa: B018  (parsing it is the check)
        except ValueError as exc:
            raise ResolveError(f"the tracking URI {shown(uri)} is not a valid URL: {exc}") from None
    return uri


def client(tracking_uri: str | None) -> Any:
    """An ``MlflowClient`` on ``tracking_uri``; a store that cannot be opened is a ResolveError.

    A sqlite file that does not exist, or that MLflow has not created (an empty file, another
    program's database), is refused: MLflow would create its tables there (and the file's
    directories), and a reader must never write.
    """
    from .credentials import for_mlflow

    uri = effective_uri(tracking_uri)
    path = sqlite_file(uri)
    if path is not None and not path.is_file():
        raise ResolveError(f"no MLflow database at {path} (tracking URI {shown(uri)})")
    if path is not None and not created(path):
        raise ResolveError(
            f"{path} is not an MLflow database: MLflow has not created its tables in it "
            f"(tracking URI {shown(uri)})"
        )
    clean = for_mlflow(uri)
    with store_errors(uri):
        from mlflow import MlflowClient

        if _cli_mode and path is None and "://" in uri and not uri.startswith(("http", "file")):
            _fail_fast_database()
        return MlflowClient(tracking_uri=ready(clean))


def reader(tracking_uri: str | None) -> Any:
    """What the read-only commands read a store with, where MLflow is not imported yet: on an
    http(s) server, MLflow's REST API (``rest.Reader``), unless a setting only MLflow's client
    applies is in force; on a local sqlite file, its tables (``sqlite_reader.Reader``);
    otherwise :func:`client`. It answers the reads ``MlflowClient`` answers here."""
    uri = effective_uri(tracking_uri)
    from . import rest

    if "mlflow" not in sys.modules:
        if rest.serves(uri):
            return rest.Reader(uri)
        path = sqlite_file(uri)
        if path is not None:
            from . import sqlite_reader

            if sqlite_reader.opens(path):
                return sqlite_reader.Reader(path, uri)
    return client(uri)


def _fail_fast_database() -> None:
    """MLflow retries a database that does not answer 10 times with backoff (about 100 s) and
    logs each try; no setting reaches that loop, so a command line lowers it to one try."""
    import logging

    from mlflow.store.db import utils

    utils.MAX_RETRY_COUNT = 1
    logging.getLogger(utils.__name__).setLevel(logging.ERROR)


@contextmanager
def sql_log_off() -> Iterator[None]:
    """MLflow's database layer logs a failed query whole (its SQL and every parameter: 1,657
    lines for a filter of 400 clauses) before raising; within this block it does not, and the
    caller says what failed in one line."""
    import logging

    logger = logging.getLogger("mlflow.store.db.utils")
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


CONNECTION_FAILURES = (
    "Max retries exceeded",
    "Connection refused",
    "NewConnectionError",
    "timed out",
    "Failed to establish",
)


def first_line(exc: BaseException, limit: int = 200) -> str:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text if len(text) <= limit else text[: limit - 1] + "…"


HTTP_TIMEOUT = "MLFLOW_HTTP_REQUEST_TIMEOUT"
# A server that took the connection and never answered (the read timed out, possibly after a
# retry): not the same fault as one that refused the connection, and not the same fix.
READ_TIMEOUTS = ("Read timed out", "ReadTimeout")


def failure_reason(exc: BaseException) -> str:
    """Why a store call failed, in a few words: a refused connection or a timeout says so."""
    text = str(exc)
    if any(marker in text for marker in READ_TIMEOUTS):
        limit = os.environ.get(HTTP_TIMEOUT, "?")
        return (
            f"timed out: no answer within {limit} s "
            "(MLFLOW_FINGERPRINT_REQUEST_TIMEOUT sets how long to wait)"
        )
    if any(marker in text for marker in CONNECTION_FAILURES):
        return "could not connect"
    return first_line(exc)


def is_not_found(exc: BaseException) -> bool:
    return getattr(exc, "error_code", None) in ("RESOURCE_DOES_NOT_EXIST", "NOT_FOUND")


@contextmanager
def store_errors(uri: str, missing: str | None = None) -> Iterator[None]:
    """Turn whatever a store raises into a ResolveError naming ``uri``.

    ``missing`` is the message for "no such run/experiment"; every other failure (refused
    connection, unreadable database, server error) says the store did not answer.
    """
    try:
        yield
    except ResolveError:
        raise
    except Exception as exc:
        if missing is not None and is_not_found(exc):
            raise ResolveError(missing) from None
        reason = failure_reason(exc)
        if sqlite_file(uri) is not None:  # a file is no server: say what is wrong with it
            raise ResolveError(failure(uri, reason)) from None
        raise ResolveError(f"tracking store {shown(uri)} did not answer: {reason}") from None


def search_all_runs(
    mlflow_client: Any, experiment_ids: list[str], filter_string: str, max_results: int
) -> list[Any]:
    """Runs matching ``filter_string`` (evaluated by the store), at most ``max_results``."""
    runs: list[Any] = []
    token = None
    while len(runs) < max_results:
        page = mlflow_client.search_runs(
            experiment_ids,
            filter_string=filter_string,
            max_results=min(1000, max_results - len(runs)),
            page_token=token,
            order_by=["attributes.start_time DESC"],
        )
        runs.extend(page)
        token = page.token
        if not token:
            break
    return runs


def previous_run(mlflow_client: Any, run: Any) -> Any | None:
    """The run ``run`` is best compared with: the latest FINISHED run of its experiment that
    started before it with the same recipe hash (what changed is then the environment, the
    numerics or chance), else the latest FINISHED run before it; None for the first run. One
    rule for ``fingerprint diff RUN`` and the hint a run prints at its end."""
    info = run.info
    before = f"attributes.status = 'FINISHED' and attributes.start_time < {int(info.start_time)}"
    recipe = run.data.tags.get(layout.TAG_HASH_RECIPE)
    experiments = [str(info.experiment_id)]
    if recipe:
        same = f"{before} and tags.`{layout.TAG_HASH_RECIPE}` = {quote(recipe)}"
        found = search_all_runs(mlflow_client, experiments, same, 1)
        if found:
            return found[0]
    found = search_all_runs(mlflow_client, experiments, before, 1)
    return found[0] if found else None


def quote(value: str) -> str:
    """A string literal for an MLflow filter: single quotes unless the value holds one."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise ResolveError(f"cannot search for a value holding both quote characters: {value!r}")


# A command line must fail fast and quietly: MLflow's defaults retry an unreachable server for
# minutes, log INFO lines and draw download progress bars on stderr. A user's own settings win.
# A server that accepts connections but never answers costs at most about twice the request
# timeout (one retry) plus the back-off: MLFLOW_FINGERPRINT_REQUEST_TIMEOUT (default 5 s) sets it.
CLI_ENV_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_LOGGING_LEVEL": "WARNING",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
}


_cli_mode = False


def cli_defaults() -> None:
    """Apply CLI_ENV_DEFAULTS where unset; call before mlflow is imported."""
    global _cli_mode
    _cli_mode = True
    for name, value in CLI_ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)
    from ..settings import settings

    timeout = settings().request_timeout_s
    os.environ.setdefault(HTTP_TIMEOUT, f"{timeout:g}")


@contextmanager
def refused_as(run_id: str, path: str) -> Iterator[None]:
    """A file of run ``run_id`` that ``stored_files`` refuses, said as the run's."""
    try:
        yield
    except UnreadableFile as exc:
        raise RefusedFile(f"run {run_id}'s artifact {path} is refused: {exc.strerror}") from None


def read_artifact(mlflow_client: Any, run_id: str, path: str) -> bytes | None:
    """The content of a run's artifact ``path``; None where the run has no such artifact.

    The folder is listed first: a missing file is an empty listing on every store, where the
    download's error for it differs from store to store. Other failures (an unreachable store)
    raise as the client raised them, for :func:`store_errors` to turn into one line."""
    import posixpath
    import tempfile

    listed = mlflow_client.list_artifacts(run_id, posixpath.dirname(path))
    if path not in {entry.path for entry in listed if not entry.is_dir}:
        return None
    with tempfile.TemporaryDirectory(prefix="mfp-") as tmp:
        local = mlflow_client.download_artifacts(run_id, path, tmp)
        with refused_as(run_id, path):
            return read_regular(local, follow_links=False)
