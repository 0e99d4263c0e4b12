"""A tracking server read through MLflow's documented REST API, without importing MLflow.

Why: ``import mlflow`` takes 1.3 s, more than all the rest of what ``fingerprint diff``, ``show``,
``find`` and ``audit`` do with a server store, and those commands only read. :class:`Reader`
answers the calls they make (``runs/get``, ``runs/search``, the experiments, ``metrics/
get-history``, and artifacts listed and downloaded through the server's artifact proxy) with
objects of the shape ``MlflowClient`` returns, over the same HTTP session settings MLflow's
client uses (its retry codes, ``MLFLOW_HTTP_REQUEST_*``, ``MLFLOW_TRACKING_*`` credentials and
TLS settings, the user's proxies).

MLflow's own client reads the store instead wherever its configuration reaches past what this
module does (:func:`serves`): an auth plugin, AWS SigV4, a workspace, a request-header plugin, the
credentials file. A run whose artifacts live where a client reads them itself (``s3://``, a
``file://`` root: a server started with ``--no-serve-artifacts``) has them read through MLflow.
Nothing here writes: commands that write use ``MlflowClient``.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from ..errors import StoreError
from ..stored_files import bounded_chunks
from ..version import __version__
from .credentials import PASSWORD, USERNAME, for_mlflow

API = "/api/2.0/mlflow"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts"
# MLflow's transient failures (``mlflow.utils.request_utils``): retried, as its client does.
RETRY_CODES = frozenset({408, 429, 500, 502, 503, 504})
# Settings only MLflow's client applies (an auth plugin, SigV4, a workspace header).
MLFLOW_ONLY = ("MLFLOW_TRACKING_AUTH", "MLFLOW_TRACKING_AWS_SIGV4", "MLFLOW_WORKSPACE")
HEADER_PLUGINS = "mlflow.request_header_provider"
CREDENTIALS_FILE = Path("~/.mlflow/credentials")


def serves(uri: str) -> bool:
    """Whether :class:`Reader` reads ``uri`` as MLflow's client would: an http(s) server and no
    setting that only MLflow's client applies."""
    if urlsplit(uri).scheme not in ("http", "https"):
        return False
    if any(os.environ.get(name) for name in MLFLOW_ONLY):
        return False
    if CREDENTIALS_FILE.expanduser().exists():  # MLflow reads credentials from it
        return False
    try:  # a value MLflow would refuse is left for it to refuse, in its words
        _numbers()
    except ValueError:
        return False
    return not _header_plugins()


@cache
def _header_plugins() -> bool:
    """Whether a package plugs request headers into MLflow's client: looked up once, since a
    command asks for each run it reads (about 10 ms a scan of the installed packages)."""
    from importlib.metadata import entry_points

    return bool(entry_points(group=HEADER_PLUGINS))


# -- what MlflowClient returns, as far as the readers use it ---------------------------------


@dataclass(frozen=True)
class Metric:
    key: str
    value: float
    timestamp: int
    step: int


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    experiment_id: str
    run_name: str | None
    status: str
    start_time: int | None
    end_time: int | None
    artifact_uri: str
    lifecycle_stage: str


@dataclass(frozen=True)
class RunData:
    metrics: dict[str, float]
    params: dict[str, str]
    tags: dict[str, str]
    # Each metric's latest value with its step and time, as ``mlflow.entities.RunData`` keeps
    # them under this name: ``explain`` tells a summary metric (logged once, at step 0) from a
    # curve by it, and must tell them apart as MLflow's client does.
    _metric_objs: tuple[Metric, ...] = ()


@dataclass(frozen=True)
class Run:
    info: RunInfo
    data: RunData


@dataclass(frozen=True)
class Experiment:
    experiment_id: str
    name: str
    artifact_location: str
    lifecycle_stage: str


@dataclass(frozen=True)
class FileInfo:
    path: str
    is_dir: bool
    file_size: int | None


class Page(list[Any]):
    """One page of a paged answer; ``token`` asks for the next one (None after the last)."""

    def __init__(self, items: Sequence[Any], token: str | None) -> None:
        super().__init__(items)
        self.token = token or None


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _pairs(entries: Any) -> dict[str, str]:
    return {str(e["key"]): str(e.get("value", "")) for e in entries or ()}


def _metric(entry: dict[str, Any]) -> Metric:
    return Metric(
        str(entry["key"]),
        float(entry["value"]),
        int(entry.get("timestamp", 0)),
        int(entry.get("step", 0)),
    )


def _run(body: dict[str, Any]) -> Run:
    info, data = body.get("info") or {}, body.get("data") or {}
    latest = tuple(_metric(m) for m in data.get("metrics") or ())
    return Run(
        RunInfo(
            run_id=str(info.get("run_id") or info.get("run_uuid")),
            experiment_id=str(info.get("experiment_id")),
            run_name=info.get("run_name"),
            status=str(info.get("status", "")),
            start_time=_int(info.get("start_time")),
            end_time=_int(info.get("end_time")),
            artifact_uri=str(info.get("artifact_uri", "")),
            lifecycle_stage=str(info.get("lifecycle_stage", "")),
        ),
        RunData(
            metrics={m.key: m.value for m in latest},
            params=_pairs(data.get("params")),
            tags=_pairs(data.get("tags")),
            _metric_objs=latest,
        ),
    )


def _experiment(body: dict[str, Any]) -> Experiment:
    return Experiment(
        experiment_id=str(body.get("experiment_id")),
        name=str(body.get("name", "")),
        artifact_location=str(body.get("artifact_location", "")),
        lifecycle_stage=str(body.get("lifecycle_stage", "")),
    )


# -- the transport -----------------------------------------------------------------------------


def _session() -> Any:
    """A requests session retrying as MLflow's does (``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` and
    ``_BACKOFF_FACTOR``, its defaults 7 and 2); the last answer is returned, not raised, so a
    server's own error message reaches the user."""
    import requests
    from urllib3.util.retry import Retry

    retries, backoff, _ = _numbers()
    retry = Retry(
        total=retries,
        connect=retries,
        read=retries,
        redirect=retries,
        status=retries,
        status_forcelist=RETRY_CODES,
        backoff_factor=backoff,
        raise_on_status=False,
        allowed_methods=None,
    )
    session = requests.Session()
    adapter = _quick_ack_adapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def _quick_ack(sock: Any) -> None:
    """Acknowledge what arrives at once, not after the kernel's delayed-ACK timer (40 ms).

    Why: ``mlflow server --workers N`` (N > 1) listens on a socket uvicorn makes without
    ``TCP_NODELAY`` (asyncio sets it only where the socket names its protocol), and writes each
    answer in two pieces, head and body. Nagle's rule holds the body until the head is
    acknowledged, and a client in the middle of a kept-alive connection delays that ACK: every
    request on a reused connection waited 43 ms, where a fresh one (whose first ACKs go out at
    once) took 2 to 4 ms. Linux clears the flag as it goes, so it is set before each answer is
    read; elsewhere there is no such flag and nothing is done."""
    flag = getattr(socket, "TCP_QUICKACK", None)
    if flag is not None and sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, flag, 1)


@cache
def _quick_pools() -> dict[str, type]:
    """urllib3's connection pools, whose connections acknowledge answers at once."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    def quick(base: type[HTTPConnection]) -> type[HTTPConnection]:
        def getresponse(self: Any, *args: Any, **kwargs: Any) -> Any:
            _quick_ack(self.sock)
            return base.getresponse(self, *args, **kwargs)

        return type(f"QuickAck{base.__name__}", (base,), {"getresponse": getresponse})

    return {
        "http": type(
            "QuickAckPool", (HTTPConnectionPool,), {"ConnectionCls": quick(HTTPConnection)}
        ),
        "https": type(
            "QuickAckHTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": quick(HTTPSConnection)}
        ),
    }


def _quick_ack_adapter(**kwargs: Any) -> Any:
    """A requests adapter over :func:`_quick_pools` (``requests`` is imported only here: a
    command that reads no server never pays for it)."""
    from requests.adapters import HTTPAdapter

    adapter = HTTPAdapter(**kwargs)
    adapter.poolmanager.pool_classes_by_scheme = _quick_pools()
    return adapter


def _numbers() -> tuple[int, float, float]:
    """MLflow's request settings, with its defaults: retries, backoff factor, timeout (s)."""
    env = os.environ
    return (
        int(env.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "7")),
        float(env.get("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "2")),
        float(env.get("MLFLOW_HTTP_REQUEST_TIMEOUT", "120")),
    )


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("true", "1")


class Reader:
    """The read-only part of ``MlflowClient`` the comparator uses, for one http(s) server."""

    def __init__(self, uri: str) -> None:
        self.uri = for_mlflow(uri).rstrip("/")
        self._session = _session()
        self._timeout = _numbers()[2]
        self._headers = {"User-Agent": f"mlflow-fingerprint/{__version__}"}
        user, password = os.environ.get(USERNAME), os.environ.get(PASSWORD)
        token = os.environ.get("MLFLOW_TRACKING_TOKEN")
        self._auth = (user, password) if user and password else None
        if self._auth is None and token:
            self._headers["Authorization"] = f"Bearer {token}"
        server_cert = os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH")
        self._verify: bool | str = server_cert or not _flag("MLFLOW_TRACKING_INSECURE_TLS")
        self._cert = os.environ.get("MLFLOW_TRACKING_CLIENT_CERT_PATH") or None
        self._artifact_uris: dict[str, str] = {}
        self._mlflow: Any = None

    def _request(
        self, method: str, path: str, *, params: Any = None, json: Any = None, stream: bool = False
    ) -> Any:
        url = f"{self.uri}{path}"
        try:
            response = self._session.request(
                method,
                url,
                params=params,
                json=json,
                headers=self._headers,
                auth=self._auth,
                verify=self._verify,
                cert=self._cert,
                timeout=self._timeout,
                stream=stream,
            )
        except Exception as exc:  # as MLflow's client words a failed request
            raise StoreError(f"API request to {url} failed with exception {exc}", "") from None
        if response.status_code != 200:
            raise _error(response, path)
        return response

    def _get(self, path: str, **params: Any) -> dict[str, Any]:
        return _body(self._request("GET", f"{API}/{path}", params=params), path)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return _body(self._request("POST", f"{API}/{path}", json=body), path)

    # -- runs and experiments --------------------------------------------------------------------

    def get_run(self, run_id: str) -> Run:
        return self._seen(_run(self._get("runs/get", run_id=run_id)["run"]))

    def search_runs(
        self,
        experiment_ids: Sequence[str],
        filter_string: str = "",
        max_results: int = 1000,
        order_by: Sequence[str] | None = None,
        page_token: str | None = None,
    ) -> Page:
        body: dict[str, Any] = {
            "experiment_ids": [str(e) for e in experiment_ids],
            "filter": filter_string,
            "run_view_type": "ACTIVE_ONLY",
            "max_results": max_results,
            "order_by": list(order_by or ()),
        }
        if page_token:
            body["page_token"] = page_token
        found = self._post("runs/search", body)
        runs = [self._seen(_run(r)) for r in found.get("runs") or ()]
        return Page(runs, found.get("next_page_token"))

    def search_experiments(self, max_results: int = 1000, page_token: str | None = None) -> Page:
        body: dict[str, Any] = {"max_results": max_results, "view_type": "ACTIVE_ONLY"}
        if page_token:
            body["page_token"] = page_token
        found = self._post("experiments/search", body)
        experiments = [_experiment(e) for e in found.get("experiments") or ()]
        return Page(experiments, found.get("next_page_token"))

    def get_experiment(self, experiment_id: str) -> Experiment:
        return _experiment(self._get("experiments/get", experiment_id=experiment_id)["experiment"])

    def get_experiment_by_name(self, name: str) -> Experiment | None:
        """None where there is none, as ``MlflowClient.get_experiment_by_name``."""
        try:
            found = self._get("experiments/get-by-name", experiment_name=name)
        except StoreError as exc:
            if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
                return None
            raise
        return _experiment(found["experiment"])

    def metric_history_page(
        self, run_id: str, key: str, max_results: int, page_token: str | None
    ) -> Page:
        params = {"run_id": run_id, "metric_key": key, "max_results": max_results}
        if page_token:
            params["page_token"] = page_token
        found = self._get("metrics/get-history", **params)
        metrics = [_metric(m) for m in found.get("metrics") or ()]
        return Page(metrics, found.get("next_page_token"))

    # -- artifacts ---------------------------------------------------------------------------------

    def _seen(self, run: Run) -> Run:
        self._artifact_uris[run.info.run_id] = run.info.artifact_uri
        return run

    def _proxied_root(self, run_id: str) -> str | None:
        artifact_uri = self._artifact_uris.get(run_id)
        if artifact_uri is None:
            artifact_uri = self.get_run(run_id).info.artifact_uri
        return proxied_root(artifact_uri)

    def _through_mlflow(self) -> Any:
        if self._mlflow is None:
            from mlflow import MlflowClient

            self._mlflow = MlflowClient(tracking_uri=self.uri)
        return self._mlflow

    def list_artifacts(self, run_id: str, path: str | None = None) -> list[FileInfo]:
        root = self._proxied_root(run_id)
        if root is None:
            return list(self._through_mlflow().list_artifacts(run_id, path))
        where = posixpath.join(root, path) if path else root
        found = _body(self._request("GET", ARTIFACTS, params={"path": where}), ARTIFACTS)
        files = [
            FileInfo(
                posixpath.join(path, f["path"]) if path else str(f["path"]),
                bool(f.get("is_dir")),
                _int(f.get("file_size")),
            )
            for f in found.get("files") or ()
        ]
        return sorted(files, key=lambda f: f.path)

    def download_artifacts(self, run_id: str, path: str, dst_path: str | None = None) -> str:
        """One file of the run, written under ``dst_path``; its local path."""
        root = self._proxied_root(run_id)
        if root is None:
            return str(self._through_mlflow().download_artifacts(run_id, path, dst_path))
        answer = self._file(root, path)  # the path checked before anything is written
        local = Path(dst_path or ".") / path
        local.parent.mkdir(parents=True, exist_ok=True)
        with local.open("wb") as out:
            for chunk in bounded_chunks(answer.iter_content(chunk_size=1 << 20), path):
                out.write(chunk)
        return str(local)

    def artifact_file(self, root: str, path: str) -> bytes:
        """File ``path`` of the run artifacts at ``root`` under this server's proxy
        (:func:`proxied_root`); a missing file raises as any error answer does."""
        chunks = self._file(root, path).iter_content(chunk_size=1 << 20)
        return b"".join(bounded_chunks(chunks, path))

    def _file(self, root: str, path: str) -> Any:
        remote = posixpath.normpath(posixpath.join(root, path))
        if not remote.startswith(root + "/"):
            raise StoreError(f"artifact path {path!r} leads outside the run's artifacts", "")
        return self._request("GET", f"{ARTIFACTS}/{quote(remote)}", stream=True)


def proxied_root(artifact_uri: str) -> str | None:
    """A run's artifact folder under its server's artifact proxy (``1/<run id>/artifacts`` of
    ``mlflow-artifacts:/1/<run id>/artifacts``); None where a client reads them itself (another
    scheme, or another server named in the URI)."""
    parts = urlsplit(artifact_uri)
    if parts.scheme != "mlflow-artifacts" or parts.netloc:
        return None
    return parts.path.strip("/")


def _json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _body(response: Any, path: str) -> dict[str, Any]:
    found = _json(response)
    if not isinstance(found, dict):
        raise StoreError(
            f"API request to endpoint {path} was successful but the response body was not in a "
            "valid JSON format",
            "",
        )
    return found


def _error(response: Any, path: str) -> StoreError:
    """A server's error answer as MLflow's client words it: ``CODE: message``."""
    found = _json(response)
    if isinstance(found, dict) and (found.get("error_code") or found.get("message")):
        code = str(found.get("error_code") or "INTERNAL_ERROR")
        return StoreError(f"{code}: {found.get('message', found)}", code)
    return StoreError(
        f"API request to endpoint {path} failed with error code {response.status_code} != 200. "
        f"Response body: '{response.text[:500]}'",
        str(response.status_code),
    )
