"""Create many fingerprinted runs through MLflow's REST API, fast, for the scale path.

A run made here looks to ``find`` and ``diff`` exactly like one the wrapper made: the
``fingerprint.*`` tags (hashes included), params, a final metric and the FINISHED status. Only
the runs a test reads the fingerprint of get the ``fingerprint/fingerprint.json`` artifact; the
filler runs do not need one, and 10,000 uploads would measure the artifact store, not ``find``.

Each run is one request (create, tags included) or three (also log-batch and update to
FINISHED), sent from a thread pool with one keep-alive ``requests.Session`` per thread.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from mlflow_fingerprint import layout
from support.paths import FIXTURES

FIXTURE = FIXTURES / "fingerprints" / "cpu.json"
API = "/api/2.0/mlflow"
HASH_KEYS = ("fingerprint", "env", "numerics", "recipe")


class RestError(RuntimeError):
    pass


def fake_hash(*parts: object) -> str:
    """A 16-hex-digit value shaped like the real hashes, unique to ``parts``."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def base_record() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def record_with_hashes(hashes: Mapping[str, str], seed: int = 0) -> dict[str, Any]:
    """The fixture fingerprint with the given hashes (and seed), as a run would store it."""
    record = copy.deepcopy(base_record())
    record["hashes"] = {k: hashes[k] for k in HASH_KEYS}
    if isinstance(record.get("seeds"), dict):
        record["seeds"]["requested"] = seed
    return record


def run_tags(record: Mapping[str, Any], seed: int) -> dict[str, str]:
    """The ``fingerprint.*`` tags docs/design.md lists, for a :func:`record_with_hashes` record."""
    h = record["hashes"]
    return {
        layout.TAG_HASH: h["fingerprint"],
        layout.TAG_HASH_ENV: h["env"],
        layout.TAG_HASH_NUMERICS: h["numerics"],
        layout.TAG_HASH_RECIPE: h["recipe"],
        layout.TAG_GPU: "none",
        layout.TAG_DRIVER: "none",
        layout.TAG_CUDA: "none",
        layout.TAG_CUDNN: "none",
        layout.TAG_TORCH: str(record.get("torch", {}).get("version", "unknown")),
        layout.TAG_TF32: "n/a",
        layout.TAG_DETERMINISTIC: "true",
        layout.TAG_SEED: str(seed),
        layout.TAG_NUM_WORKERS: "0",
        layout.TAG_BATCH_SIZE: "64",
        layout.TAG_GIT_COMMIT: fake_hash("commit") * 2 + fake_hash("c2")[:8],
        layout.TAG_GIT_DIRTY: "false",
        layout.TAG_SCHEMA: str(record.get("schema_version", 1)),
    }


@dataclass(frozen=True)
class RunSpec:
    """One run to create: its hashes decide what ``find`` matches it with."""

    name: str
    hashes: Mapping[str, str]
    seed: int = 0
    val_error: float = 0.05


class Rest:
    """A thin MLflow REST client: a keep-alive session per thread, errors as RestError."""

    def __init__(self, url: str, timeout_s: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._local = threading.local()

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            self._local.session = session
        return session

    def post(self, endpoint: str, body: Mapping[str, Any], attempts: int = 3) -> dict[str, Any]:
        for attempt in range(attempts):
            try:
                resp = self._session().post(
                    f"{self.url}{API}/{endpoint}", json=body, timeout=self.timeout_s
                )
            except requests.RequestException as exc:
                if attempt == attempts - 1:
                    raise RestError(f"{endpoint}: {exc}") from None
                time.sleep(0.2 * (attempt + 1))
                continue
            if resp.status_code >= 500 and attempt < attempts - 1:
                time.sleep(0.2 * (attempt + 1))
                continue
            if resp.status_code != 200:
                raise RestError(f"{endpoint}: HTTP {resp.status_code}: {resp.text[:300]}")
            return resp.json()
        raise RestError(f"{endpoint}: no answer")

    def experiment(self, name: str) -> str:
        """The id of experiment ``name``, created if missing."""
        try:
            return self.post("experiments/create", {"name": name})["experiment_id"]
        except RestError:
            got = self._session().get(
                f"{self.url}{API}/experiments/get-by-name",
                params={"experiment_name": name},
                timeout=self.timeout_s,
            )
            got.raise_for_status()
            return got.json()["experiment"]["experiment_id"]

    def artifact_root(self, experiment_id: str) -> str:
        """Where the server keeps experiment ``experiment_id``'s runs' artifacts."""
        got = self._session().get(
            f"{self.url}{API}/experiments/get",
            params={"experiment_id": experiment_id},
            timeout=self.timeout_s,
        )
        got.raise_for_status()
        return str(got.json()["experiment"]["artifact_location"]).rstrip("/")

    def create_run(
        self, experiment_id: str, spec: RunSpec, start_ms: int, finish: bool = True
    ) -> str:
        """One run with its tags; with ``finish``, also its params, a metric and FINISHED (three
        requests instead of one: what a real run holds, at a third of the rate)."""
        record = record_with_hashes(spec.hashes, spec.seed)
        tags = run_tags(record, spec.seed)
        body = {
            "experiment_id": experiment_id,
            "run_name": spec.name,
            "start_time": start_ms,
            "tags": [{"key": k, "value": v} for k, v in tags.items()],
        }
        run_id = self.post("runs/create", body)["run"]["info"]["run_id"]
        if not finish:
            return run_id
        self.post(
            "runs/log-batch",
            {
                "run_id": run_id,
                "params": [
                    {"key": "batch_size", "value": "64"},
                    {"key": "num_workers", "value": "0"},
                    {"key": "seed", "value": str(spec.seed)},
                ],
                "metrics": [
                    {"key": "val_error", "value": spec.val_error, "timestamp": start_ms, "step": 0}
                ],
            },
        )
        self.post(
            "runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": start_ms + 1000}
        )
        return run_id


def create_runs(
    url: str,
    experiment_id: str,
    specs: Iterable[RunSpec],
    *,
    threads: int = 16,
    start_ms: int | None = None,
    finish: bool = True,
) -> list[str]:
    """Create every run in ``specs`` (in parallel); returns their ids in the order given."""
    rest = Rest(url)
    base = int(time.time() * 1000) if start_ms is None else start_ms
    specs = list(specs)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mfp-bulk") as pool:
        futures = [
            pool.submit(rest.create_run, experiment_id, spec, base + i, finish)
            for i, spec in enumerate(specs)
        ]
        return [f.result() for f in futures]


def run_row(
    run_id: str, name: str, experiment_id: str, root: str, start_ms: int, end_ms: int | None
) -> dict[str, Any]:
    """A row of MLflow's ``runs`` table as the server writes it for a run it creates (FINISHED
    where it has ended), its artifacts under the experiment's ``root``."""
    return {
        "run_uuid": run_id,
        "name": name,
        "source_type": "LOCAL",
        "source_name": "",
        "entry_point_name": "",
        "user_id": "bulk",
        "status": "RUNNING" if end_ms is None else "FINISHED",
        "start_time": start_ms,
        "end_time": end_ms,
        "deleted_time": None,
        "source_version": "",
        "lifecycle_stage": "active",
        "artifact_uri": f"{root}/{run_id}/artifacts",
        "experiment_id": int(experiment_id),
    }


def insert_runs(
    url: str,
    backend_uri: str,
    experiment_id: str,
    specs: Iterable[RunSpec],
    start_ms: int | None = None,
) -> list[str]:
    """Create every run in ``specs`` as :meth:`Rest.create_run` does without ``finish`` (the
    run, its tags, RUNNING), straight into the server's database (``backend_uri``, MLflow's own
    tables, one insert per table): for runs that only need to be there. A thousand cost the
    server and the test some 27 CPU-seconds through REST, one request each; here under one."""
    import uuid

    import sqlalchemy
    from mlflow.store.tracking.dbmodels import models

    root = Rest(url).artifact_root(experiment_id)
    base = int(time.time() * 1000) if start_ms is None else start_ms
    runs: list[dict[str, Any]] = []
    tags: list[dict[str, Any]] = []
    for i, spec in enumerate(specs):
        run_id = uuid.uuid4().hex
        runs.append(run_row(run_id, spec.name, experiment_id, root, base + i, None))
        own = run_tags(record_with_hashes(spec.hashes, spec.seed), spec.seed)
        own["mlflow.runName"] = spec.name
        tags += [{"key": k, "value": v, "run_uuid": run_id} for k, v in own.items()]
    engine = sqlalchemy.create_engine(backend_uri)
    try:
        with engine.begin() as conn:
            conn.execute(models.SqlRun.__table__.insert(), runs)
            conn.execute(models.SqlTag.__table__.insert(), tags)
    finally:
        engine.dispose()
    return [run["run_uuid"] for run in runs]


def filler_specs(count: int, offset: int = 0) -> list[RunSpec]:
    """Runs whose every hash is their own: they match nothing a test searches for."""
    return [
        RunSpec(f"filler-{i}", {k: fake_hash("filler", k, i) for k in HASH_KEYS}, seed=i)
        for i in range(offset, offset + count)
    ]


def twin_specs(count: int, hashes: Mapping[str, str], prefix: str = "twin") -> list[RunSpec]:
    """Runs that share ``hashes`` (replicates of one fingerprint)."""
    return [RunSpec(f"{prefix}-{i}", hashes, seed=0) for i in range(count)]


def attach_fingerprint(tracking_uri: str, run_id: str, record: Mapping[str, Any]) -> None:
    """Upload ``fingerprint/fingerprint.json`` for one run, through MLflow's own client."""
    import tempfile

    from mlflow import MlflowClient

    with tempfile.TemporaryDirectory(prefix="mfp-bulk-") as tmp:
        path = Path(tmp) / layout.FINGERPRINT_FILE
        path.write_text(json.dumps(record, indent=2))
        MlflowClient(tracking_uri).log_artifact(run_id, str(path), layout.ARTIFACT_DIR)
