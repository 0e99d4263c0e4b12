"""Distributed runs: per-rank fingerprints gathered on rank 0, the heterogeneity check, the
comparator's world-size and rank-by-rank rules, and (slow) real ``torchrun`` jobs under gloo."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from mlflow_fingerprint import capture, layout
from mlflow_fingerprint.compare.diff import diff
from mlflow_fingerprint.model.fingerprint import Fingerprint
from mlflow_fingerprint.model.hashing import compute_hashes
from mlflow_fingerprint.run import ranks
from support.paths import JOBS, ROOT
from support.torchrun import TORCHRUN_TIMEOUT_S, torchrun


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    return capture().to_dict()


def _rank_record(base: dict[str, Any], rank: int, world: int, **numerics: Any) -> dict[str, Any]:
    record = copy.deepcopy(base)
    record["distributed"].update(
        {"initialized": True, "backend": "gloo", "world_size": world, "rank": rank}
    )
    record["determinism"].update(numerics)
    record["data"]["declared"] = {"batch_size": 32}
    record["hashes"] = compute_hashes(record)
    return record


def _job(base: dict[str, Any], world: int = 2, **rank1_numerics: Any) -> Fingerprint:
    records = [
        _rank_record(base, r, world, **(rank1_numerics if r == 1 else {})) for r in range(world)
    ]
    return ranks.merge(Fingerprint.from_dict(records[0]), records)


def test_homogeneous_job_merges_ranks_without_changing_hashes(base: dict[str, Any]) -> None:
    job = _job(base)
    assert [r["rank"] for r in job.get("distributed.ranks")] == [0, 1]
    assert job.get("distributed.heterogeneous") is False
    assert job.hashes == Fingerprint.from_dict(_rank_record(base, 0, 2)).hashes
    tags = ranks.job_tags(job)
    assert tags[layout.TAG_WORLD_SIZE] == "2"
    assert tags[layout.TAG_DISTRIBUTED_BACKEND] == "gloo"
    assert tags[layout.TAG_DISTRIBUTED_HETEROGENEOUS] == "false"
    assert tags[layout.distinct_tag("numerics")] == "1"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ranks.warn_if_heterogeneous(job)


def test_a_rank_with_other_numerics_flags_is_flagged(base: dict[str, Any]) -> None:
    job = _job(base, deterministic_algorithms=True, cudnn_benchmark=True)
    assert job.get("distributed.heterogeneous") is True
    assert ranks.job_tags(job)[layout.distinct_tag("numerics")] == "2"
    with pytest.warns(ranks.HeterogeneousJobWarning, match="2 numerics flag sets"):
        ranks.warn_if_heterogeneous(job)


def test_single_process_fingerprint_has_no_job_tags(base: dict[str, Any]) -> None:
    assert ranks.job_tags(Fingerprint.from_dict(base)) == {}


def test_rank_artifacts_are_named_per_rank(base: dict[str, Any]) -> None:
    records = [_rank_record(base, r, 2) for r in range(2)]
    artifacts = ranks.rank_artifacts(records, set())
    assert [a[0].file for a in artifacts] == [
        layout.rank_artifact(0),
        layout.rank_artifact(1),
    ]
    assert json.loads(artifacts[1][1]())["distributed"]["rank"] == 1


def test_metric_mode_is_checked() -> None:
    assert ranks.metric_mode("per_rank") == "per_rank"
    with pytest.raises(ValueError, match="metrics must be one of"):
        ranks.metric_mode("sum")


def test_world_size_is_the_top_cause_and_names_the_global_batch(base: dict[str, Any]) -> None:
    single = copy.deepcopy(base)
    single["data"]["declared"] = {"batch_size": 32}
    single["hashes"] = compute_hashes(single)
    report = diff(_job(base), Fingerprint.from_dict(single))
    top = report.differences[0]
    assert top.field == "distributed.world_size"
    assert top.effect == "recipe"
    assert "32 × 2 = 64" in top.explanation
    assert "32 × 1 = 32" in top.explanation
    assert "World size / GPU count" in top.source
    # rank 1 exists only on one side: world_size says it, the rank's fields do not.
    rank1 = [d for d in report.differences if d.field.startswith("distributed.ranks.1")]
    assert all(d.effect == "none" for d in rank1)


def test_runs_compare_rank_by_rank(base: dict[str, Any]) -> None:
    report = diff(_job(base), _job(base, deterministic_algorithms=True))
    effects = {d.field: d.effect for d in report.differences}
    assert effects["distributed.ranks.1.hashes.numerics"] == "numerics"
    assert "distributed.ranks.0.hashes.numerics" not in effects


def test_nccl_settings_matter_only_on_gpu_jobs(base: dict[str, Any]) -> None:
    a, b = _job(base).to_dict(), _job(base).to_dict()
    b["distributed"]["env"] = {**(b["distributed"].get("env") or {}), "NCCL_ALGO": "Tree"}
    report = diff(Fingerprint.from_dict(a), Fingerprint.from_dict(b))
    (nccl,) = [d for d in report.differences if d.field == "distributed.env.NCCL_ALGO"]
    assert nccl.effect == "none"
    assert "GPU" in nccl.explanation


# -- real torchrun jobs ------------------------------------------------------------------------


def _torchrun(
    uri: str, *extra: str, nproc: int = 2, script: str = "ddp_digits.py"
) -> dict[str, Any]:
    """Run ``tests/<script>`` (a digits.py job) under torchrun; rank 0's JSON line and stderr."""
    env = {"MLFLOW_TRACKING_URI": uri}
    args = ("--tracking-uri", uri, *extra)
    if nproc > 1:
        done = torchrun(JOBS / script, *args, nproc=nproc, env=env)
    else:
        done = subprocess.run(
            [sys.executable, str(JOBS / script), *args],
            env={**os.environ, "OMP_NUM_THREADS": "1", **env},
            capture_output=True,
            text=True,
            timeout=TORCHRUN_TIMEOUT_S,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr[-4000:]
    line = [x for x in done.stdout.splitlines() if x.startswith('{"run_id"')][-1]
    return {**json.loads(line), "stdout": done.stdout, "stderr": done.stderr}


def test_two_rank_torchrun_job_is_one_run_holding_both_ranks(mlflow_server: str) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(mlflow_server)
    job = _torchrun(
        mlflow_server, "--experiment", "ddp-two", "--metrics", "per_rank", "--report-at-exit"
    )
    # Each rank's side group was freed before the teardown, without the cyclic collector.
    assert _side_groups_at_exit(job["stdout"]) == [0, 0]
    runs = client.search_runs(
        [client.get_experiment_by_name("ddp-two").experiment_id], max_results=10
    )
    assert [r.info.run_id for r in runs] == [job["run_id"]]  # rank 1 opened no run
    run = runs[0]
    assert run.data.tags[layout.TAG_WORLD_SIZE] == "2"
    assert run.data.tags[layout.TAG_DISTRIBUTED_BACKEND] == "gloo"
    assert run.data.tags[layout.TAG_DISTRIBUTED_HETEROGENEOUS] == "false"
    files = {a.path for a in client.list_artifacts(run.info.run_id, layout.RANKS_DIR)}
    assert files == {layout.rank_artifact(0), layout.rank_artifact(1)}
    assert "loss" in run.data.metrics
    assert "loss/rank1" in run.data.metrics

    single = _torchrun(mlflow_server, "--experiment", "ddp-one", nproc=1)
    report = diff(job["run_id"], single["run_id"], tracking_uri=mlflow_server)
    top = report.differences[0]
    assert top.field == "distributed.world_size"
    assert "32 × 2 = 64" in top.explanation
    assert report.verdict == "explained"


def test_heterogeneous_job_warns_and_says_so_in_its_tags(mlflow_server: str) -> None:
    from mlflow import MlflowClient

    job = _torchrun(
        mlflow_server,
        "--experiment",
        "ddp-hetero",
        "--hetero",
        "--metrics",
        "mean",
        "--report-at-exit",
    )
    assert _side_groups_at_exit(job["stdout"]) == [0, 0]
    assert "HeterogeneousJobWarning" in job["stderr"]
    assert "numerics flag sets" in job["stderr"]
    run = MlflowClient(mlflow_server).get_run(job["run_id"])
    assert "loss" in run.data.metrics  # the mean over ranks, logged by rank 0 only
    assert not any(name.startswith("loss/") for name in run.data.metrics)
    tags = run.data.tags
    assert tags[layout.TAG_DISTRIBUTED_HETEROGENEOUS] == "true"
    assert tags[layout.distinct_tag("numerics")] == "2"


def _side_groups_at_exit(stdout: str) -> list[int]:
    """Each rank's ``--report-at-exit`` count (the ranks share torchrun's stdout)."""
    found = re.findall(r'\{"side_groups_at_exit": (\d+)\}', stdout)
    assert len(found) == 2, stdout
    return [int(n) for n in found]


def _ranks_job(*flags: str) -> subprocess.CompletedProcess[str]:
    """``tests/ranks_job.py`` (the gather alone) on 2 ranks under torchrun; it must succeed."""
    return torchrun(JOBS / "ranks_job.py", *flags)


@pytest.mark.parametrize("hetero", [False, True])
def test_real_gloo_gather_initialises_the_group_and_checks_heterogeneity(hetero: bool) -> None:
    """Homogeneous: the group is initialised by us; heterogeneous: by the script itself."""
    done = _ranks_job(*(["--hetero", "--user-init"] if hetero else []))
    tags = json.loads([x for x in done.stdout.splitlines() if x.startswith("{")][-1])
    assert tags[layout.TAG_WORLD_SIZE] == "2"
    assert tags[layout.TAG_DISTRIBUTED_HETEROGENEOUS] == str(hetero).lower()
    assert ("HeterogeneousJobWarning" in done.stderr) is hetero


def test_a_group_we_initialised_is_destroyed_before_the_interpreter_tears_down() -> None:
    """Left to the teardown, gloo's threads can abort a finished rank ("terminate called without
    an active exception", exit -6), failing the whole torchrun job."""
    at_exit = _at_exit(_ranks_job("--leave-group"))
    assert at_exit == [{"initialized_at_exit": False, "side": 0}] * 2


def test_a_trainers_group_is_left_to_it_and_only_our_side_group_destroyed_at_exit() -> None:
    """A group the program initialised (a trainer's) is not ours to destroy; our side group is."""
    at_exit = _at_exit(_ranks_job("--leave-group", "--user-init"))
    assert at_exit == [{"initialized_at_exit": True, "side": 0}] * 2


def _at_exit(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """Each rank's ``--leave-group`` report, in the order the ranks printed them (the ranks
    share torchrun's stdout, so two reports can land on one line)."""
    found = [json.loads(x) for x in re.findall(r'\{"initialized_at_exit"[^}]*\}', done.stdout)]
    assert len(found) == 2, done.stdout
    return found


def test_the_side_group_does_not_outlive_the_users_destroy_process_group(tmp_path: Path) -> None:
    """Nothing of ours may keep a process group alive past destroy_process_group(): one freed
    in the interpreter's teardown can abort the process (a one-rank group shows it, in a fresh
    process so no group leaks into the test session)."""
    script = (
        "import gc, socket, weakref\n"
        "import torch.distributed as dist\n"
        "from mlflow_fingerprint.run import ranks\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()\n"
        "dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{port}', rank=0,"
        " world_size=1)\n"
        "side = ranks._side_group(dist)\n"
        "assert ranks._side_group(dist) is side  # one side group per process group\n"
        "refs = [weakref.ref(side), weakref.ref(dist.group.WORLD)]\n"
        "del side\n"
        "dist.destroy_process_group()\n"
        "gc.collect()\n"
        "print([r() is None for r in refs])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[True, True]"
