"""Runs recorded on a real GPU (``tests/fixtures/gpu_runs/<machine>.json.gz``), put back into a
real MLflow store, so CI (which has no GPU) can diff, explain and replay them.

The fixture holds what ``tests/jobs/gpu_truth/record.py`` exported from the machine's store:
each run's tags, params, metric histories (step, value, time stamp) and the artifacts the
comparator reads, keyed ``<model>-<scenario>`` (``cnn-tf32``), a bisect's reruns as
``<key>.rerun<N>``. Loading gives each run a new id; ``fingerprint.rerun_of`` is pointed at the new
id of the run it reran. ``tests/jobs/gpu_truth/make_fixture.py`` writes the fixture.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mlflow_fingerprint import layout
from support.paths import FIXTURES

GPU_RUNS = FIXTURES / "gpu_runs"
EXPERIMENT = "gpu-truth"


@cache
def recording(machine: str = "h100") -> dict[str, Any]:
    """The fixture as recorded (runs, and how they were recorded)."""
    with gzip.open(GPU_RUNS / f"{machine}.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def measured(machine: str = "h100") -> dict[str, Any]:
    """What was measured beside the runs: the bisect's report, timings, the capture check."""
    return json.loads((GPU_RUNS / f"{machine}_measured.json").read_text())


@dataclass(frozen=True)
class LoadedRuns:
    """The runs of one recording in a store: key -> new run id."""

    uri: str
    ids: dict[str, str]

    def __getitem__(self, key: str) -> str:
        return self.ids[key]


def load(uri: str, machine: str = "h100") -> LoadedRuns:
    """Every run of the recording, with its recorded status, in ``uri``'s sqlite store (the
    artifacts in a folder beside the database)."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param, RunTag

    client = MlflowClient(uri)
    found = client.get_experiment_by_name(EXPERIMENT)
    artifacts = Path(uri.removeprefix("sqlite:///")).parent / "artifacts" / machine
    experiment_id = (
        found.experiment_id
        if found
        else client.create_experiment(EXPERIMENT, artifact_location=artifacts.as_uri())
    )
    ids: dict[str, str] = {}
    for run in recording(machine)["runs"]:
        created = client.create_run(
            experiment_id, start_time=run["start_time"], run_name=run["name"]
        )
        run_id = created.info.run_id
        ids[run["key"]] = run_id
        tags = dict(run["tags"])
        if run["rerun_of"]:
            tags[layout.TAG_RERUN_OF] = ids[run["rerun_of"]]
        metrics = [
            Metric(key, value, timestamp, step)
            for key, points in run["metrics"].items()
            for step, value, timestamp in points
        ]
        client.log_batch(
            run_id,
            params=[Param(k, v) for k, v in run["params"].items()],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        for i in range(0, len(metrics), 1000):
            client.log_batch(run_id, metrics=metrics[i : i + 1000])
        folder = Path(created.info.artifact_uri.removeprefix("file://"))
        for path, text in run["artifacts"].items():  # where MLflow's local artifact store puts them
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text)
        client.set_terminated(run_id, run["status"], end_time=run["end_time"])
    return LoadedRuns(uri, ids)
