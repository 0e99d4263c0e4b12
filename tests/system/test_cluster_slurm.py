"""Reruns and a bisect through a real Slurm cluster (issue 48): munged, slurmctld and slurmd
started by the test on this host (tests/support/slurm.py), one node whose features say the
machine kind it offers, this host's own. Two runs of ``tests/jobs/bisect_project`` differ in
their learning rate (which moves the curve) and a note (which does nothing): a rerun through
``sbatch`` reproduces A, a bisect through it names the learning rate and rules out the note, and
the dry run lists the kinds the cluster offers, and an interrupted rerun is
cancelled on the cluster. Cost: one cluster (under a second to start), two
tiny trainings, a handful of reruns and one interrupted job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from support.gitrepo import committed_copy
from support.paths import FIXTURES, JOBS, ROOT
from support.slurm import missing, slurm_cluster
from support.stored import cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

RUNS = {"a": ["--seed", "0", "--steps", "4"], "b": ["--seed", "0", "--steps", "4", "--lr", "0.2",
        "--note", "tried"]}  # fmt: skip


class Cluster:
    """The project's repository, store and runs, and the Slurm cluster reruns go to."""

    def __init__(self, base: Path, slurm_env: dict[str, str]) -> None:
        self.base = base
        self.repo = committed_copy(JOBS / "bisect_project", base / "project")
        self.uri = f"sqlite:///{base / 'mlflow.db'}"
        (base / "tmp").mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_FINGERPRINT_")}
        self.env.update(slurm_env)
        self.env.update(
            {
                "PYTHONPATH": str(ROOT / "src"),
                "MLFLOW_TRACKING_URI": self.uri,
                "MLFLOW_FINGERPRINT_SPOOL": str(base / "spool"),
                "TMPDIR": str(base / "tmp"),  # the worktrees: storage the node shares
                "OMP_NUM_THREADS": "1",
                "MLFLOW_FINGERPRINT_DESCRIBE": "0",
            }
        )
        self.ids = {name: self.train(args) for name, args in RUNS.items()}

    def train(self, args: list[str], **more: str) -> str:
        env = {**self.env, **more}
        out = subprocess.run(
            [sys.executable, "train.py", *args],
            cwd=self.repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stderr.split("mlflow-fingerprint: run ")[1].split()[0]

    def cli(self, *args: str) -> tuple[int, Any, str]:
        out = cli(*args, "--format", "json", env=self.env, cwd=self.repo, timeout=500)
        err = out.stderr.decode(errors="replace")
        assert out.returncode in (0, 1), err[-3000:]
        return out.returncode, json.loads(out.stdout), err

    def jobs(self, fields: str = "%j") -> list[str]:
        """The jobs the controller ran, each as ``fields`` (squeue's format), oldest first."""
        out = subprocess.run(
            ["squeue", "-h", "-t", "all", "--sort=i", "-o", fields],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return out.stdout.splitlines()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    absent = missing()
    if absent and os.environ.get("CI") != "true":
        pytest.skip(f"Slurm's daemons are not installed: {', '.join(absent)}")
    assert not absent, f"CI installs slurm-wlm and munge (.ci/run); missing: {absent}"
    from mlflow_fingerprint.prove.placement import kind_here

    base = tmp_path_factory.mktemp("slurm")
    with slurm_cluster(base / "slurm", [kind_here().name]) as slurm_env:
        yield Cluster(base, slurm_env)


def test_rerun_through_sbatch_reproduces_the_run(cluster: Cluster) -> None:
    code, result, err = cluster.cli(
        "rerun", cluster.ids["a"], "--executor", "slurm", "--until-step", "2"
    )
    assert code == 0, err[-2000:]
    assert result["reproduced"] is True
    assert "runs on a node of RUN's machine kind" in err
    assert "mfp-rerun" in cluster.jobs()


def test_bisect_through_slurm_names_the_cause_and_rules_out_the_no_op(cluster: Cluster) -> None:
    before = cluster.jobs().count("mfp-rerun")
    code, result, err = cluster.cli(
        "bisect", cluster.ids["a"], cluster.ids["b"], "--executor", "slurm"
    )
    assert code == 0, err[-3000:]
    assert result["verdict"] == "proven"
    assert [c["field"] for c in result["causes"]] == ["program.options.lr"]
    assert "program.options.note" in result["ruled_out"]
    assert cluster.jobs().count("mfp-rerun") - before == len(result["reruns"])


def test_a_kind_no_node_offers_is_not_settable_and_says_which(cluster: Cluster) -> None:
    """B ran on an H100 node (its capture replayed a real one's NVML readings) whose site
    default doubles the learning rate; the one node is this host's kind. The bisect reruns A on
    it, cannot set B's machine and says why; a rerun of B is refused in one line, no job sent."""
    jobs = len(cluster.jobs())
    site = cluster.base / "site_h100"
    site.mkdir()
    (site / "lr_scale").write_text("2")
    b = cluster.train(
        RUNS["a"],
        MLFLOW_FINGERPRINT_NVML_REPLAY=str(FIXTURES / "gpus" / "h100.json"),
        SITE_DEFAULTS_DIR=str(site),
    )
    code, result, err = cluster.cli("bisect", cluster.ids["a"], b, "--executor", "slurm")
    assert code == 1, err[-3000:]
    assert result["verdict"] == "not_settable"
    assert "machine.kind" in result["cannot_set"]
    why = [n for n in result["notes"] if n.startswith("machine.kind: no node of kind")]
    assert len(why) == 1, result
    assert "mfp_gpu_NVIDIA_H100_80GB_HBM3_x1" in why[0], why
    assert why[0].endswith("B's"), why
    out = subprocess.run(
        [sys.executable, "-m", "mlflow_fingerprint.cli", "rerun", b, "--executor", "slurm"],
        cwd=cluster.repo, env=cluster.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "no node of kind mfp_gpu_NVIDIA_H100" in lines[0], out.stderr
    assert len(cluster.jobs()) - jobs == len(result["reruns"])


def test_dry_run_lists_the_kinds_the_cluster_offers(cluster: Cluster) -> None:
    from mlflow_fingerprint.prove.placement import kind_here

    _, result, _ = cluster.cli(
        "bisect", cluster.ids["a"], cluster.ids["b"], "--executor", "slurm", "--dry-run"
    )
    offered = [n for n in result["notes"] if n.startswith("the cluster's nodes offer")]
    assert offered == [f"the cluster's nodes offer the machine kinds: {kind_here().name}"]


SLEEPER = """
import sys, time
from mlflow_fingerprint.prove.executors.slurm import SlurmJobs
from mlflow_fingerprint.prove.launch import Job
from pathlib import Path
tree = Path(sys.argv[1])
(tree / "sleep.py").write_text("import time\\nprint('started', flush=True)\\ntime.sleep(120)\\n")
job = Job((sys.executable, str(tree / "sleep.py")), tree, {}, 300, tree=tree)
SlurmJobs(grace_s=2).execute(job)
"""


def test_interrupting_a_rerun_cancels_its_job_on_the_cluster(cluster: Cluster) -> None:
    tree = cluster.base / "tmp" / "sleeper"
    tree.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", SLEEPER, str(tree)], env=cluster.env, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(
        j.endswith(" mfp-rerun RUNNING") for j in cluster.jobs("%i %j %T")
    ):
        time.sleep(0.5)
    job_id = next(j for j in cluster.jobs("%i %j %T") if j.endswith(" mfp-rerun RUNNING")).split()[
        0
    ]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert b"KeyboardInterrupt" in err
    state = [j.split()[2] for j in cluster.jobs("%i %j %T") if j.startswith(job_id + " ")]
    assert state in (["CANCELLED"], ["FAILED"]), state


FAILING = """
import json, sys
from pathlib import Path
from mlflow_fingerprint.prove.executors.slurm import SlurmJobs
from mlflow_fingerprint.prove.launch import Job
tree = Path(sys.argv[1])
lines = ["print('first line')", "print('the last line')", "raise SystemExit(3)"]
(tree / "fail.py").write_text("\\n".join(lines))
ended = SlurmJobs().execute(Job((sys.executable, str(tree / "fail.py")), tree, {}, 120, tree=tree))
print(json.dumps([ended.returncode, ended.last_line, ended.log]))
"""


def test_a_failed_jobs_whole_output_is_kept_where_its_error_says(cluster: Cluster) -> None:
    tree = cluster.base / "tmp" / "failing"
    tree.mkdir()
    out = subprocess.run(
        [sys.executable, "-c", FAILING, str(tree)],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    code, last, log = json.loads(out.stdout)
    assert (code, last) == (3, "the last line")
    assert Path(log).read_text().splitlines()[:2] == ["first line", "the last line"]
