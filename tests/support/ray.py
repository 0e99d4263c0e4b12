"""A real local Ray cluster of two nodes on this host, for tests/system/test_cluster_ray.py and
benchmarks/bench_bisect.py: ``ray start --head`` at 127.0.0.1 and a second ``ray start
--address`` at 127.0.0.2 (another loopback address: two raylets on one address collide), each
node started with an environment of its own (the NVML recording its capture replays, a site's
defaults) and advertising the machine kind that environment makes it (``python -m
mlflow_fingerprint.prove.placement --ray``) as a custom resource.

Ray 2.60's GCS and raylets listen on every interface whatever ``--node-ip-address`` says, and
the head reports the host's address; the dashboard, the job API the tests use, is bound to
127.0.0.1. ``ray stop --force`` on the way out ends every Ray process of this user: only one
module starts a cluster. Where Ray is not installed the test fails in CI (it installs the
``ray`` extra, Makefile) and skips elsewhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from support.paths import ROOT
from support.procs import free_port

START_S = 240.0
RAY = str(Path(sys.executable).parent / "ray")


def missing() -> str | None:
    """Why no Ray cluster can be started here, or None."""
    try:
        import ray.job_submission  # noqa: F401
    except ImportError:
        return "Ray is not installed (pip install 'mlflow-fingerprint[ray]')"
    return None if Path(RAY).exists() else f"{RAY} is missing"


@dataclass(frozen=True)
class RayCluster:
    """A running cluster: its job API's address and the kind each node advertises."""

    dashboard: str
    kinds: tuple[str, ...]
    env: Mapping[str, str]

    @property
    def spec(self) -> str:
        return "ray+" + self.dashboard


def node_kind(env: Mapping[str, str]) -> str:
    """The machine kind a node with ``env`` captures itself as."""
    out = subprocess.run(
        [sys.executable, "-m", "mlflow_fingerprint.prove.placement", "--slurm"],
        env={**env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout.strip()


@contextmanager
def ray_cluster(
    nodes: list[Mapping[str, str]], base_env: Mapping[str, str]
) -> Iterator[RayCluster]:
    """Two (or more) nodes, the first the head; ``nodes[i]`` is node i's own variables."""
    temp = Path(tempfile.mkdtemp(prefix="mfpray", dir="/tmp"))  # short: Ray's socket paths
    env = {
        **base_env,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(ROOT / "src"), base_env.get("PYTHONPATH")])
        ),
        # The nodes' `python` is this one (the interpreter a Ray job runs: docs/clusters.md).
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), base_env.get("PATH", "")]),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_DEDUP_LOGS": "0",
    }
    envs = [{**env, **own} for own in nodes]
    kinds = tuple(node_kind(e) for e in envs)
    gcs, dashboard = free_port(), free_port()
    try:
        for i, (own, kind) in enumerate(zip(envs, kinds, strict=True)):
            where = (
                ["--head", f"--port={gcs}", "--dashboard-host=127.0.0.1",
                 f"--dashboard-port={dashboard}", f"--ray-client-server-port={free_port()}",
                 f"--temp-dir={temp}", "--node-ip-address=127.0.0.1"]
                if i == 0
                else [f"--address=127.0.0.1:{gcs}", f"--node-ip-address=127.0.0.{i + 1}"]
            )  # fmt: skip
            started = subprocess.run(
                [RAY, "start", *where, "--num-cpus=1", f"--resources={json.dumps({kind: 1})}",
                 f"--dashboard-agent-listen-port={free_port()}", "--disable-usage-stats"],
                env=own, capture_output=True, text=True, timeout=START_S,
            )  # fmt: skip
            if started.returncode:
                raise AssertionError(f"ray start (node {i}) failed:\n{started.stderr[-3000:]}")
        address = f"http://127.0.0.1:{dashboard}"
        _wait_nodes(address, len(nodes))
        yield RayCluster(address, kinds, env)
    finally:
        subprocess.run([RAY, "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


def _wait_nodes(address: str, count: int) -> None:
    from ray.util.state import list_nodes

    deadline = time.monotonic() + START_S
    alive = 0
    while time.monotonic() < deadline:
        try:
            alive = sum(n.state == "ALIVE" for n in list_nodes(address=address))
        except Exception:
            alive = 0
        if alive >= count:
            return
        time.sleep(0.5)
    raise AssertionError(f"{alive} of {count} Ray nodes alive after {START_S:g} s")
