"""Shared helpers for the comparator tests (no tests here): records and real MLflow runs.

Fingerprint records come from real captures: ``tests/fixtures/fingerprints/cpu.json`` (this CPU
machine) and, for GPUs, a capture through the NVML replay of a recorded real GPU, with the torch
build edited to a CUDA one (the test machine's torch is a CPU build). Runs go into a real sqlite
MLflow store, with the fingerprint artifact and tags the run wrapper writes.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from mlflow_fingerprint import layout
from mlflow_fingerprint.model.hashing import compute_hashes
from support.paths import FIXTURES

TAGS = {
    layout.TAG_HASH: "fingerprint",
    layout.TAG_HASH_ENV: "env",
    layout.TAG_HASH_NUMERICS: "numerics",
    layout.TAG_HASH_RECIPE: "recipe",
}


def new_store(directory: Path, template: Path) -> str:
    """A store of its own in ``directory``, copied from conftest's ``mlflow_db_template``."""
    path = directory / "mlflow.db"
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


def cpu_record() -> dict[str, Any]:
    """A real capture of a CPU-only machine (torch CPU build, no NVIDIA driver)."""
    return json.loads((FIXTURES / "fingerprints" / "cpu.json").read_text())


def nvml_recording(name: str) -> dict[str, Any]:
    """A recorded real GPU's NVML readings as stored (``tests/fixtures/gpus/<name>``), for the
    tests that edit one before replaying it."""
    return json.loads((FIXTURES / "gpus" / name).read_text())


@cache
def _gpu_capture(gpu: str) -> str:
    import mlflow_fingerprint as mfp
    from mlflow_fingerprint.capture.nvml_replay import NvmlReplay

    fp = mfp.capture(nvml=NvmlReplay.from_file(FIXTURES / "gpus" / f"{gpu}.json"))
    return fp.to_json()


def gpu_record(
    gpu: str, cuda: str = "12.8", cudnn: str = "9.8.0", computed_on: str = "cuda"
) -> dict[str, Any]:
    """A capture through the replay of a recorded real GPU, as if torch were a CUDA build whose
    run computed on the GPU (``computed_on``, as the wrapper's end capture reads it)."""
    record = json.loads(_gpu_capture(gpu))
    record["cuda"]["torch_built_with"] = cuda
    record["cuda"]["cudnn_version"] = cudnn
    record["cuda"]["computed_on"] = computed_on
    return rehash(record)


def cpu_capture() -> dict[str, Any]:
    """A capture of this machine as a CPU-only one (the NVML replay of a machine without a
    driver), in the same process and repository as :func:`gpu_record`'s captures, so the two
    differ only in what the machines differ in."""
    return rehash(json.loads(_gpu_capture("no_driver")))


def edit(record: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy with dotted paths set (``edit(r, **{"seeds.requested": 1})``), hashes redone."""
    out = copy.deepcopy(dict(record))
    for path, value in changes.items():
        node = out
        *parents, last = path.split(".")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return rehash(out)


def rehash(record: dict[str, Any]) -> dict[str, Any]:
    record["hashes"] = compute_hashes(record)
    return record


def seeded(record: Mapping[str, Any], seed: int) -> dict[str, Any]:
    return edit(
        record,
        **{"seeds.requested": seed, "seeds.seeded_by": "test", "seeds.torch_initial_seed": seed},
    )


def write(tmp: Path, name: str, record: Mapping[str, Any]) -> str:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(record))
    return str(path)


def log_run(
    uri: str,
    experiment: str,
    name: str,
    record: Mapping[str, Any] | None,
    histories: Mapping[str, Sequence[float]],
    seed: Any = None,
    params: Mapping[str, Any] | None = None,
    status: str = "FINISHED",
) -> str:
    """A run with ``record`` as its fingerprint artifact and tags, ``params``, and each history
    logged at steps 0..n-1, ended with ``status`` (``RUNNING``: left open). ``record=None``
    makes a run without a fingerprint."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    artifacts = Path(uri.removeprefix("sqlite:///")).parent / "artifacts" / experiment
    experiment_id = (
        found.experiment_id
        if found
        else client.create_experiment(experiment, artifact_location=artifacts.as_uri())
    )
    tags: dict[str, str] = {}
    if record is not None:
        tags = {tag: record["hashes"][key] for tag, key in TAGS.items()}
        tags[layout.TAG_SEED] = str(seed if seed is not None else record["seeds"].get("requested"))
    run_id = client.create_run(experiment_id, run_name=name, tags=tags).info.run_id
    if record is not None:
        client.log_text(run_id, json.dumps(record), layout.FINGERPRINT_ARTIFACT)
    metrics = [
        Metric(key, float(v), 1_700_000_000_000 + i, i)
        for key, values in histories.items()
        for i, v in enumerate(values)
    ]
    batch = [Param(k, str(v)) for k, v in (params or {}).items()]
    for i in range(0, max(len(metrics), 1), 1000):  # one call for params and the first 1000
        client.log_batch(run_id, metrics=metrics[i : i + 1000], params=batch if i == 0 else [])
    if status != "RUNNING":
        client.set_terminated(run_id, status=status)
    return run_id
