"""Reruns as Slurm batch jobs (``prove/executors/slurm.py``), without a cluster: the batch script
a job becomes, and one line where Slurm's client is missing. ``tests/system/test_cluster_slurm.py``
runs jobs on a real one-node cluster."""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

import pytest

from mlflow_fingerprint.errors import UsageError
from mlflow_fingerprint.prove.executors.slurm import SlurmJobs, SlurmPending, _script
from mlflow_fingerprint.prove.launch import Job

TOKEN = "ghp_" + "k3Y" * 12


def job(tree: Path) -> Job:
    env = {
        "MLFLOW_TRACKING_URI": "http://mlflow:5000",
        "OMP_NUM_THREADS": "1",
        "AWS_SECRET_ACCESS_KEY": TOKEN,
        "MLFLOW_FINGERPRINT_APPLY": '{"seeds.requested": 1}',
    }
    cwd = tree / "sub dir"
    command = ("/venv/bin/python", str(cwd / "train.py"), "--lr", "0.1")
    return Job(command, cwd, env, 600.0, tree=tree, kind="mfp-h100")


def test_the_batch_script_enters_the_job_s_folder_and_exports_only_what_is_sent(
    tmp_path: Path,
) -> None:
    script = _script(job(tmp_path), "python3")
    lines = script.splitlines()
    assert lines[0] == "#!/bin/sh"
    assert lines[1] == f"cd {shlex.quote(str(tmp_path / 'sub dir'))} || exit 97"
    assert lines[2:-1] == [
        "export MLFLOW_FINGERPRINT_APPLY='{\"seeds.requested\": 1}'",
        "export MLFLOW_TRACKING_URI=http://mlflow:5000",
        "export OMP_NUM_THREADS=1",
    ]
    assert lines[-1] == "exec python3 train.py --lr 0.1"
    assert TOKEN not in script
    assert script.endswith("\n")


def test_a_partition_is_passed_only_where_one_is_named() -> None:
    assert SlurmJobs("gpu")._partition() == ["-p", "gpu"]
    assert SlurmJobs()._partition() == []


def test_without_sbatch_a_job_is_refused_in_one_line_and_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(UsageError, match="sbatch is not on the PATH"):
        SlurmPending(SlurmJobs(), job(tmp_path / "tree"))
    assert not list(tmp_path.glob("mfp-slurm-*"))
