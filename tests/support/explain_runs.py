"""Stores of many fingerprinted runs for ``explain``, built from recorded fingerprints.

A cluster of four kinds of machine (an A100 with torch 2.5, an H100 and an L4 with torch 2.7,
captured through the NVML replays of real GPUs, and a CPU-only machine), each run
with one of five learning rates, five batch sizes and two weight decays, and five seeds: 200
configurations x 5 seeds = 1,000 runs. The metric follows a known model (the learning rate
matters most, then the batch size, then the machine, plus seed noise), so a benchmark can check
that what ``explain`` says at scale is right, not only fast.

Runs are written through a real ``mlflow server``'s REST API from a thread pool (create with the
``fingerprint.*`` tags the run wrapper writes, log-batch, update to FINISHED), and the record as
the artifact ``fingerprint/fingerprint.json``: written into the artifact root where the server
gives runs a local one, uploaded through the server's artifact API where it proxies them.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np

from mlflow_fingerprint import layout
from mlflow_fingerprint.model.hashing import digest, group_payload
from mlflow_fingerprint.tracking.tags import fingerprint_tags
from support.bulk import Rest, run_row
from support.records import cpu_capture, edit, gpu_record

MACHINES = {  # name -> (torch version, effect on the metric)
    "a100": ("2.5.1+cu124", 0.00),
    "h100": ("2.7.0+cu126", 0.01),
    "l4": ("2.7.0+cu126", 0.01),
    "cpu": ("2.7.0+cpu", 0.03),
}
LRS = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
BATCHES = (16, 32, 64, 128, 256)
DECAYS = (0.0, 1e-4)
SEEDS = 5
NOISE_SD = 0.01


@dataclass(frozen=True)
class RunData:
    name: str
    record: dict[str, Any]
    params: dict[str, str]
    val_loss: float


def _seeded(config: dict[str, Any], seed: int) -> dict[str, Any]:
    """``records.seeded(config, seed)`` without copying the whole record and hashing it again:
    only the seeds change, so only the recipe's hash and the overall one do (100,000 runs of a
    benchmark are made in seconds, not hours). The sections but ``seeds`` are shared."""
    record = dict(config)
    record["seeds"] = {
        **config["seeds"],
        "requested": seed,
        "seeded_by": "test",
        "torch_initial_seed": seed,
    }
    hashes = dict(config["hashes"])
    hashes["recipe"] = digest(group_payload(record, "recipe"))
    hashes["fingerprint"] = digest([hashes["env"], hashes["numerics"], hashes["recipe"]])
    record["hashes"] = hashes
    return record


def _base(machine: str) -> dict[str, Any]:
    record = cpu_capture() if machine == "cpu" else gpu_record(machine)
    return edit(record, **{"torch.version": MACHINES[machine][0]})


def cluster_runs(
    machines: Sequence[str] = tuple(MACHINES),
    lrs: Sequence[float] = LRS,
    batches: Sequence[int] = BATCHES,
    decays: Sequence[float] = DECAYS,
    seeds: int = SEEDS,
) -> list[RunData]:
    """Every configuration x seed, with its metric drawn from the model (seeded: the same runs
    every time)."""
    return list(iter_cluster_runs(machines, lrs, batches, decays, seeds))


def iter_cluster_runs(
    machines: Sequence[str] = tuple(MACHINES),
    lrs: Sequence[float] = LRS,
    batches: Sequence[int] = BATCHES,
    decays: Sequence[float] = DECAYS,
    seeds: int = SEEDS,
) -> Iterator[RunData]:
    """:func:`cluster_runs` one at a time: 100,000 records are not held at once."""
    rng = np.random.default_rng(0)
    bases = {m: _base(m) for m in machines}
    for machine, lr, batch, decay in itertools.product(machines, lrs, batches, decays):
        config = edit(
            bases[machine],
            **{
                "program.call.lr": lr,
                "program.call.batch_size": batch,
                "program.call.weight_decay": decay,
            },
        )
        mean = (
            0.3
            + 0.1 * math.log10(lr / 1e-2) ** 2
            + 0.01 * math.log2(batch / 64) ** 2
            + MACHINES[machine][1]
        )
        for seed in range(seeds):
            yield RunData(
                f"{machine}-lr{lr:g}-b{batch}-wd{decay:g}-s{seed}",
                _seeded(config, seed),
                {"lr": f"{lr:g}", "weight_decay": f"{decay:g}"},
                float(mean + rng.normal(0, NOISE_SD)),
            )


def _put_artifact(rest: Rest, artifact_uri: str, data: bytes) -> None:
    """The record into the run's artifact root: a file for a local root, an upload through the
    server's artifact API (``mlflow-artifacts:``) otherwise."""
    parsed = urlparse(artifact_uri)
    if parsed.scheme == "file":
        path = Path(unquote(parsed.path)) / layout.FINGERPRINT_ARTIFACT
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return
    if parsed.scheme != "mlflow-artifacts":
        raise ValueError(f"cannot write artifacts to {artifact_uri}")
    url = (
        f"{rest.url}/api/2.0/mlflow-artifacts/artifacts{parsed.path}/{layout.FINGERPRINT_ARTIFACT}"
    )
    resp = rest._session().put(url, data=data, timeout=rest.timeout_s)
    resp.raise_for_status()


def _write(rest: Rest, experiment_id: str, run: RunData, start_ms: int) -> str:
    tags = fingerprint_tags(run.record, set())
    created = rest.post(
        "runs/create",
        {
            "experiment_id": experiment_id,
            "run_name": run.name,
            "start_time": start_ms,
            "tags": [{"key": k, "value": v} for k, v in tags.items()],
        },
    )["run"]["info"]
    _put_artifact(rest, created["artifact_uri"], json.dumps(run.record).encode())
    params = [*run.params.items(), ("seed", str(run.record["seeds"]["requested"]))]
    rest.post(
        "runs/log-batch",
        {
            "run_id": created["run_id"],
            "params": [{"key": k, "value": v} for k, v in params],
            "metrics": [
                {"key": "val_loss", "value": run.val_loss, "timestamp": start_ms, "step": 0}
            ],
        },
    )
    rest.post(
        "runs/update",
        {"run_id": created["run_id"], "status": "FINISHED", "end_time": start_ms + 1000},
    )
    return str(created["run_id"])


def write_runs(url: str, experiment: str, runs: Sequence[RunData], threads: int = 8) -> list[str]:
    """Create ``runs`` in ``experiment`` on the server at ``url``; their ids, in order."""
    rest = Rest(url)
    experiment_id = rest.experiment(experiment)
    base = int(time.time() * 1000)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mfp-bulk") as pool:
        futures = [
            pool.submit(_write, rest, experiment_id, run, base + i) for i, run in enumerate(runs)
        ]
        return [f.result() for f in futures]


def _artifact_folder(artifact_uri: str, destination: Path) -> Path:
    """Where the server keeps the files of artifact root ``artifact_uri``: a ``file:`` root is
    a folder; ``mlflow-artifacts:/<path>`` is ``<path>`` under the server's destination."""
    parsed = urlparse(artifact_uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "mlflow-artifacts":
        return destination / unquote(parsed.path).lstrip("/")
    raise ValueError(f"cannot write artifacts to {artifact_uri}")


def write_runs_sql(
    url: str,
    backend_uri: str,
    destination: Path,
    experiment: str,
    runs: Iterable[RunData],
    batch: int = 2000,
) -> int:
    """Create ``runs`` in ``experiment`` of the server at ``url`` straight through its database
    (``backend_uri``: MLflow's own tables, one multi-row insert per table per ``batch`` runs)
    and its artifact folder (``destination``, where the server keeps proxied artifacts): the
    same rows and files the REST calls of :func:`write_runs` leave, 100,000 runs in minutes
    rather than hours. The experiment is made through the server, so its artifact root is the
    one the server gives. Returns how many runs were written."""
    import uuid

    import sqlalchemy
    from mlflow.store.tracking.dbmodels import models

    rest = Rest(url)
    experiment_id = rest.experiment(experiment)
    location = rest.artifact_root(experiment_id)
    engine = sqlalchemy.create_engine(backend_uri)
    tables = {
        name: model.__table__
        for name, model in (
            ("runs", models.SqlRun),
            ("tags", models.SqlTag),
            ("params", models.SqlParam),
            ("metrics", models.SqlMetric),
            ("latest_metrics", models.SqlLatestMetric),
        )
    }
    base = int(time.time() * 1000)
    count = 0
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in tables}

    def flush() -> None:
        with engine.begin() as conn:
            for name, table in tables.items():
                if rows[name]:
                    conn.execute(table.insert(), rows[name])
                rows[name].clear()

    for run in runs:
        run_id = uuid.uuid4().hex
        start = base + count
        row = run_row(run_id, run.name, experiment_id, location, start, start + 1000)
        rows["runs"].append(row)
        path = _artifact_folder(row["artifact_uri"], destination) / layout.FINGERPRINT_ARTIFACT
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(run.record))
        tags = {**fingerprint_tags(run.record, set()), "mlflow.runName": run.name}
        rows["tags"] += [{"key": k, "value": v, "run_uuid": run_id} for k, v in tags.items()]
        params = {**run.params, "seed": str(run.record["seeds"]["requested"])}
        rows["params"] += [{"key": k, "value": v, "run_uuid": run_id} for k, v in params.items()]
        metric = {
            "key": "val_loss",
            "value": run.val_loss,
            "timestamp": start,
            "step": 0,
            "is_nan": False,
            "run_uuid": run_id,
        }
        rows["metrics"].append(metric)
        rows["latest_metrics"].append(dict(metric))
        count += 1
        if count % batch == 0:
            flush()
    flush()
    engine.dispose()
    return count
