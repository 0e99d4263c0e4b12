"""Distributed jobs on GPUs, from fingerprints the real capture code makes through NVML replays of
recorded real GPUs: a ``torchrun`` job whose ranks see different GPUs (slow), and the comparator's
NCCL and rank-by-rank GPU rules on jobs built from per-rank captures.

Per-rank records are captured in this process with the rank's torchrun variables, its NCCL
environment and ``MLFLOW_FINGERPRINT_NVML_REPLAY`` set, then merged as rank 0 merges them. Two facts
no CPU machine can produce are stated rather than captured, as ``support.records.gpu_record``
states the CUDA build: the torch build (this torch is a CPU wheel) and the process group's backend
(a CPU torch has no NCCL to build a group with).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from test_distributed import _torchrun

from mlflow_fingerprint import capture, layout
from mlflow_fingerprint.capture.distributed import DISTRIBUTED_ENV
from mlflow_fingerprint.compare.diff import diff
from mlflow_fingerprint.compare.report import Difference, Report
from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.run import ranks
from mlflow_fingerprint.settings import NVML_REPLAY
from support import paths
from support.records import edit

FIXTURES = paths.FIXTURES / "gpus"
CUDA = "12.8"  # the CUDA build a GPU job's torch reports (torch.version.cuda)
NO_GPU = "no_driver"  # a machine without an NVIDIA driver, whatever this one has
NCCL_ROW = "NCCL_ALGO / NCCL_PROTO / channel count / NCCL version"
GPU_ROW = "GPU model / compute capability / architecture"


@cache
def _capture(gpu: str, rank: int, world: int, env: tuple[tuple[str, str], ...]) -> str:
    """The JSON of a capture made as rank ``rank`` of ``world`` on the replayed ``gpu``."""
    with pytest.MonkeyPatch.context() as mp:
        for name in DISTRIBUTED_ENV:
            mp.delenv(name, raising=False)
        mp.setenv(NVML_REPLAY, str(FIXTURES / f"{gpu}.json"))
        mp.setenv("RANK", str(rank))
        mp.setenv("LOCAL_RANK", str(rank))
        mp.setenv("WORLD_SIZE", str(world))
        for name, value in env:
            mp.setenv(name, value)
        return capture().to_json()


def rank_record(
    gpu: str,
    rank: int,
    world: int = 2,
    backend: str | None = "nccl",
    cuda: str | None = CUDA,
    **env: str,
) -> dict[str, Any]:
    """One rank's record: captured, then given the torch build and the group's backend."""
    record = json.loads(_capture(gpu, rank, world, tuple(sorted(env.items()))))
    return edit(
        record,
        **{
            "distributed.initialized": backend is not None,
            "distributed.backend": backend,
            "cuda.torch_built_with": cuda,
            "cuda.computed_on": "cuda" if cuda else "cpu",
        },
    )


def job(
    *gpus: str, backend: str | None = "nccl", cuda: str | None = CUDA, **env: str
) -> Fingerprint:
    """Rank 0's fingerprint with every rank's merged in, one rank per GPU named."""
    records = [
        rank_record(gpu, rank, len(gpus), backend, cuda, **env) for rank, gpu in enumerate(gpus)
    ]
    return ranks.merge(Fingerprint.from_dict(records[0]), records)


def by_field(report: Report) -> dict[str, Difference]:
    return {d.field: d for d in report.differences}


# -- NCCL settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value"), [("NCCL_ALGO", "Ring"), ("NCCL_PROTO", "Simple")])
def test_an_nccl_setting_on_a_gpu_job_is_its_one_numerics_cause(name: str, value: str) -> None:
    report = diff(job("h100", "h100"), job("h100", "h100", **{name: value}))
    (only,) = report.effective_differences
    assert only.field == f"distributed.env.{name}"
    assert (only.a, only.b, only.effect) == (None, value, "numerics")
    assert NCCL_ROW in only.source
    # Every rank's env hash changed with it: that is the same change, not a second cause.
    found = by_field(report)
    assert found["distributed.ranks.1.hashes.env"].effect == "none"
    assert "rank 0" in found["distributed.ranks.1.hashes.env"].explanation
    assert report.exit_code == 1


def test_the_same_nccl_setting_on_a_cpu_gloo_job_changes_nothing() -> None:
    a = job(NO_GPU, NO_GPU, backend="gloo", cuda=None)
    b = job(NO_GPU, NO_GPU, backend="gloo", cuda=None, NCCL_ALGO="Ring")
    report = diff(a, b)
    nccl = by_field(report)["distributed.env.NCCL_ALGO"]
    assert nccl.effect == "none"
    assert "gloo" in nccl.explanation
    assert report.effective_differences == ()
    assert report.exit_code == 0


@pytest.mark.parametrize(
    ("gpu", "backend", "effect"),
    [
        ("h100", "gloo", "none"),  # GPUs, but gloo summed the gradients
        (NO_GPU, "nccl", "numerics"),  # NCCL summed them though NVML could not read the GPUs
        ("h100", "cpu:gloo,cuda:nccl", "numerics"),  # CUDA tensors go through NCCL
        ("h100", None, "numerics"),  # no group when captured: a GPU job is taken to use NCCL
    ],
)
def test_the_process_group_backend_decides_whether_nccl_summed(
    gpu: str, backend: str | None, effect: str
) -> None:
    a = job(gpu, gpu, backend=backend)
    b = job(gpu, gpu, backend=backend, NCCL_ALGO="Tree")
    assert by_field(diff(a, b))["distributed.env.NCCL_ALGO"].effect == effect


# -- rank by rank -------------------------------------------------------------------------------


def test_rank_1_on_another_gpu_model_is_the_top_cause() -> None:
    report = diff(job("h100", "h100"), job("h100", "a100"))
    top = report.differences[0]
    assert (top.field, top.effect) == ("distributed.ranks.1.gpu", "numerics")
    assert (top.a, top.b) == ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")
    assert GPU_ROW in top.source
    found = by_field(report)
    capability = found["distributed.ranks.1.compute_capability"]
    assert (capability.a, capability.b, capability.effect) == ("9.0", "8.0", "numerics")
    assert found["distributed.ranks.1.sm_count"].effect == "numerics"
    assert found["distributed.ranks.1.driver"].rank > found["distributed.ranks.1.sm_count"].rank
    assert not [
        d for d in report.effective_differences if d.field.startswith("distributed.ranks.0")
    ]


def test_rank_1_on_a_same_architecture_gpu_is_as_weak_a_cause_as_for_one_process() -> None:
    """H100 and H200: Hopper sm_90 with 132 SMs both; memory and driver differ."""
    per_rank = by_field(diff(job("h100", "h100"), job("h100", "h200")))
    single = by_field(diff(rank_record("h100", 0, 1, None), rank_record("h200", 0, 1, None)))
    rank_gpu, gpu = per_rank["distributed.ranks.1.gpu"], single["gpu.devices.0.name"]
    assert (rank_gpu.effect, rank_gpu.explanation) == (gpu.effect, gpu.explanation)
    assert "same architecture and SM count" in gpu.explanation
    assert "distributed.ranks.1.compute_capability" not in per_rank
    assert single["gpu.devices.0.memory_total_mib"].effect == "none"
    assert single["gpu.driver_version"].effect == "numerics"
    assert "rarely" in single["gpu.driver_version"].explanation


def test_a_rank_gpu_under_a_cpu_only_torch_did_no_arithmetic() -> None:
    per_rank = by_field(
        diff(
            job("h100", "h100", backend="gloo", cuda=None),
            job("h100", "a100", backend="gloo", cuda=None),
        )
    )
    for field in ("gpu", "compute_capability", "driver"):
        change = per_rank[f"distributed.ranks.1.{field}"]
        assert change.effect == "none", field
        assert "did no arithmetic" in change.explanation, field


# -- real torchrun jobs whose ranks see different GPUs -----------------------------------------


def _rank_gpus(client: Any, run_id: str) -> list[tuple[str, str]]:
    """(name, compute capability) of each rank's GPU, from its ``rank-<i>.json`` artifact."""
    found = []
    for rank in (0, 1):
        path = client.download_artifacts(run_id, layout.rank_artifact(rank))
        device = json.loads(Path(path).read_text())["gpu"]["devices"][0]
        found.append((device["name"], device["compute_capability"]))
    return found


def test_torchrun_job_on_an_h100_and_an_a100_is_flagged_and_compared_rank_by_rank(
    mlflow_server: str,
) -> None:
    """Each rank replays its own GPU; training is on the CPU (gloo, CPU torch) in both jobs, so
    the comparator must call rank 1's other GPU ``none`` and the numbers must agree."""
    from mlflow import MlflowClient

    def run(gpus: str) -> dict[str, Any]:
        return _torchrun(
            mlflow_server, "--experiment", "gpu-ranks", "--gpus", gpus, script="gpu_ranks_job.py"
        )

    mixed, same = run("h100,a100"), run("h100,h100")
    assert "HeterogeneousJobWarning" in mixed["stderr"]
    assert "2 GPU models" in mixed["stderr"]
    assert "2 GPU drivers" in mixed["stderr"]
    assert "HeterogeneousJobWarning" not in same["stderr"]
    client = MlflowClient(mlflow_server)
    tags = client.get_run(mixed["run_id"]).data.tags
    assert tags[layout.distinct_tag("gpu_models")] == "2"
    assert tags[layout.distinct_tag("drivers")] == "2"
    assert tags[layout.TAG_DISTRIBUTED_HETEROGENEOUS] == "true"
    assert tags[layout.TAG_GPU].startswith("NVIDIA H100 80GB HBM3")  # rank 0's
    h100, a100 = ("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA A100-SXM4-80GB", "8.0")
    assert _rank_gpus(client, mixed["run_id"]) == [h100, a100]
    assert _rank_gpus(client, same["run_id"]) == [h100, h100]

    report = diff(same["run_id"], mixed["run_id"], tracking_uri=mlflow_server)
    found = by_field(report)
    capability = found["distributed.ranks.1.compute_capability"]
    assert (capability.a, capability.b, capability.effect) == ("9.0", "8.0", "none")
    assert "CPU-only torch" in found["distributed.ranks.1.gpu"].explanation
    assert found["distributed.ranks.1.hashes.env"].effect == "numerics"  # rank 1 differs
    assert not [f for f in found if f.startswith("distributed.ranks.0.") and "hashes" not in f]
    assert report.verdict == "same_results"
