"""Reruns and a bisect through a real two-node Ray cluster (issue 48), started by the test
(tests/support/ray.py). Each node stands for a machine kind: its capture replays a real GPU's
NVML recording (an H100 on the head, an A100 on the other), and each carries a site default
outside the fingerprint that moves the numbers (``SITE_DEFAULTS_DIR/lr_scale``: 1 and 2; the
record keeps a folder's variable by name only), the way a node's driver or library default does.

A and B train as Ray jobs, one on each node, B with a note that does nothing. bisect through
Ray places A's reruns on the head and the rerun with B's machine kind on the other node (each
rerun records that node's GPU), proves ``machine.kind`` and rules out the note. A bisect killed
while its rerun runs stops the Ray job and marks the run KILLED.

Cost: a two-node cluster (20-60 s on a loaded 2-core machine), three small trainings as jobs, a
bisect of about four reruns, one killed rerun."""

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

from mlflow_fingerprint import layout
from support.gitrepo import committed_copy
from support.paths import FIXTURES, JOBS
from support.ray import RayCluster, missing, ray_cluster
from support.stored import cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

GPUS = FIXTURES / "gpus"
NODES = (("h100.json", "1"), ("a100.json", "2"))
ENDED = ("SUCCEEDED", "FAILED", "STOPPED")


class Project:
    """The project's repository, store and runs, and the Ray cluster they ran on."""

    def __init__(self, base: Path, ray: RayCluster) -> None:
        self.base, self.ray = base, ray
        self.ids: dict[str, str] = {}
        self.repo = committed_copy(JOBS / "bisect_project", base / "project")
        self.uri = f"sqlite:///{base / 'mlflow.db'}"
        self.env = {
            **ray.env,
            "MLFLOW_TRACKING_URI": self.uri,
            "MLFLOW_FINGERPRINT_SPOOL": str(base / "spool"),
            "OMP_NUM_THREADS": "1",
            "MLFLOW_FINGERPRINT_DESCRIBE": "0",
        }
        from ray.job_submission import JobSubmissionClient

        self.client = JobSubmissionClient(ray.dashboard)

    def train(self, node: int, args: list[str]) -> str:
        """Train ``args`` as a Ray job on node ``node``, in place (storage the node reads)."""
        sid = self.client.submit_job(
            entrypoint=f"cd {self.repo} && exec {sys.executable} train.py {' '.join(args)}",
            runtime_env={"env_vars": {k: self.env[k] for k in (
                "MLFLOW_TRACKING_URI", "MLFLOW_FINGERPRINT_SPOOL", "OMP_NUM_THREADS",
                "MLFLOW_FINGERPRINT_DESCRIBE")}},
            entrypoint_num_cpus=0,
            entrypoint_resources={self.ray.kinds[node]: 1},
        )  # fmt: skip
        status = self.wait(sid, 300)
        logs = self.client.get_job_logs(sid)
        assert status == "SUCCEEDED", logs[-3000:]
        return logs.split("mlflow-fingerprint: run ")[1].split()[0]

    def wait(self, sid: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while (status := self.status(sid)) not in ENDED and time.monotonic() < deadline:
            time.sleep(0.5)
        return status

    def status(self, sid: str) -> str:
        return str(self.client.get_job_status(sid).value)

    def reruns(self) -> list[Any]:
        return [j for j in self.client.list_jobs() if (j.submission_id or "").startswith("mfp-")]

    def cli(self, *args: str) -> tuple[int, Any, str]:
        out = cli(*args, "--format", "json", env=self.env, cwd=self.repo, timeout=700)
        err = out.stderr.decode(errors="replace")
        assert out.returncode in (0, 1), err[-3000:]
        return out.returncode, json.loads(out.stdout), err

    def tags(self, run_id: str) -> dict[str, str]:
        import mlflow

        return dict(mlflow.MlflowClient(self.uri).get_run(run_id).data.tags)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Any:
    absent = missing()
    if absent and os.environ.get("CI") != "true":
        pytest.skip(absent)
    assert absent is None, f"CI installs the ray extra (Makefile); {absent}"
    base = tmp_path_factory.mktemp("ray")
    nodes = []
    for i, (recording, scale) in enumerate(NODES):
        site = base / f"site{i}"
        site.mkdir()
        (site / "lr_scale").write_text(scale)
        nodes.append(
            {
                "MLFLOW_FINGERPRINT_NVML_REPLAY": str(GPUS / recording),
                "SITE_DEFAULTS_DIR": str(site),
            }
        )
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_FINGERPRINT_")}
    with ray_cluster(nodes, base_env) as ray:
        p = Project(base, ray)
        p.ids = {
            "a": p.train(0, ["--seed", "0", "--steps", "4"]),
            "b": p.train(1, ["--seed", "0", "--steps", "4", "--note", "tried"]),
        }
        yield p


def test_the_nodes_offer_two_kinds_and_the_runs_recorded_their_nodes(project: Project) -> None:
    kinds = project.ray.kinds
    assert kinds[0] != kinds[1]
    assert "H100" in kinds[0], kinds
    assert "A100" in kinds[1], kinds
    a, b = (project.tags(project.ids[k]) for k in ("a", "b"))
    assert "H100" in a[layout.TAG_GPU]
    assert "A100" in b[layout.TAG_GPU]
    _, result, _ = project.cli(
        "bisect",
        *project.ids.values(),
        "--executor",
        project.ray.spec,
        "--dry-run",
    )
    offered = [n for n in result["notes"] if n.startswith("the cluster's nodes offer")]
    assert offered == [f"the cluster's nodes offer the machine kinds: {', '.join(sorted(kinds))}"]


def test_bisect_places_reruns_on_the_kinds_and_proves_the_machine(project: Project) -> None:
    ids = project.ids
    before = len(project.reruns())
    code, result, err = project.cli("bisect", ids["a"], ids["b"], "--executor", project.ray.spec)
    assert code == 0, err[-3000:]
    assert " INFO " not in err, err[-3000:]  # Ray's own log lines kept off the bisect's stderr
    assert result["verdict"] == "proven", result
    assert [c["field"] for c in result["causes"]] == ["machine.kind"]
    assert "program.options.note" in result["ruled_out"]
    assert len(project.reruns()) - before == len(result["reruns"])
    for rerun in result["reruns"]:
        gpu = project.tags(rerun["run_id"])[layout.TAG_GPU]
        on_b = "machine.kind" in rerun["overrides"]
        assert ("A100" if on_b else "H100") in gpu, (rerun["overrides"], gpu)
    assert any("machine.kind" in r["overrides"] for r in result["reruns"])


def test_killing_the_bisect_stops_its_job_on_the_cluster(project: Project) -> None:
    ids = project.ids
    slow = project.train(0, ["--seed", "0", "--steps", "60", "--pause", "0.25"])
    before = {j.submission_id for j in project.reruns()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow_fingerprint.cli", "bisect", slow, ids["b"],
         "--executor", project.ray.spec, "--until-step", "50"],
        cwd=project.repo, env=project.env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    import mlflow

    client = mlflow.MlflowClient(project.uri)
    experiment = [client.get_run(slow).info.experiment_id]
    deadline = time.monotonic() + 300
    training: list[Any] = []  # the rerun's MLflow run, once its training has made it
    while time.monotonic() < deadline and not training and proc.poll() is None:
        training = client.search_runs(experiment, "attributes.status = 'RUNNING'")
        time.sleep(0.5)
    assert training, "no rerun started training"
    running = [
        j
        for j in project.reruns()
        if j.submission_id not in before and str(j.status.value) == "RUNNING"
    ]
    assert len(running) == 1, running
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    sid = running[0].submission_id
    assert project.status(sid) == "STOPPED", err[-2000:]
    assert client.get_run(training[0].info.run_id).info.status == "KILLED", err[-2000:]
