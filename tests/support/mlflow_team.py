"""A real ``mlflow server`` subprocess: the team-server shape, PostgreSQL rows and S3 artifacts.

Two artifact layouts, both used by real teams:

- ``proxied`` (MLflow's default since 2.0): ``--serve-artifacts --artifacts-destination s3://…``;
  clients upload over HTTP to the tracking server, which alone holds the S3 credentials;
- ``direct``: ``--no-serve-artifacts --default-artifact-root s3://…``; clients write to S3
  themselves and need ``MLFLOW_S3_ENDPOINT_URL`` and AWS credentials.

The server can be killed (SIGKILL, no goodbye) and started again on the same port, which is what
the outage tests need: a client keeps its URI across the restart.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .procs import InfraError, free_port, kill_group, log_tail, wait_for

START_TIMEOUT_S = float(os.environ.get("MFP_TEST_SERVER_START_TIMEOUT", "180"))
# Variables of the test process that must not leak into the server (it has its own store).
_DROP = (
    "MLFLOW_TRACKING_URI",
    "MLFLOW_TRACKING_USERNAME",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
    "MLFLOW_EXPERIMENT_NAME",
    "MLFLOW_EXPERIMENT_ID",
    "MLFLOW_RUN_ID",
)


def healthy(url: str, timeout_s: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=timeout_s) as resp:
            return resp.status == 200
    except OSError:
        return False


@dataclass
class MlflowServer:
    """One ``mlflow server``; ``url`` stays the same across :meth:`kill` and :meth:`start`."""

    backend_uri: str
    artifact_uri: str
    env: Mapping[str, str]
    mode: str = "proxied"
    # One uvicorn worker: the server then runs in uvicorn's own process; with two, uvicorn
    # supervises two processes that each import MLflow's whole app, seconds of CPU at every
    # start and restart, and no test reads what a second worker changes.
    workers: int = 1
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    log: Path = field(
        default_factory=lambda: Path(
            tempfile.mkstemp(prefix="mfp-mlflow-server-", suffix=".log")[1]
        )
    )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            self.backend_uri,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
        ]
        if self.mode == "proxied":
            cmd += ["--serve-artifacts", "--artifacts-destination", self.artifact_uri]
        elif self.mode == "direct":
            cmd += ["--no-serve-artifacts", "--default-artifact-root", self.artifact_uri]
        else:
            raise ValueError(f"unknown artifact mode {self.mode!r}")
        return cmd

    def spawn(self) -> subprocess.Popen:
        """Start the process without waiting for it to answer (the "killed at start" fault)."""
        if self.running:
            raise InfraError(f"mlflow server on {self.url} is already running")
        env = {k: v for k, v in os.environ.items() if k not in _DROP}
        env.update(self.env)
        env.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
        # The GenAI job runner starts seven more Python processes that import all of MLflow;
        # on a 2-core CI machine that triples the start time and we run no jobs.
        env.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.command(),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        return self.proc

    def start(self, timeout_s: float = START_TIMEOUT_S) -> MlflowServer:
        """Start and wait until ``/health`` answers."""
        proc = self.spawn()
        wait_for(
            lambda: healthy(self.url),
            timeout_s,
            f"mlflow server on {self.url}",
            alive=lambda: proc.poll() is None,
            log=self.log,
        )
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the server and its workers: an outage, not a shutdown."""
        if self.proc is not None:
            kill_group(self.proc, signal.SIGKILL)

    def stop(self) -> None:
        if self.proc is not None:
            kill_group(self.proc, signal.SIGTERM)

    def restart(self) -> MlflowServer:
        self.kill()
        return self.start()

    def log_tail(self) -> str:
        return log_tail(self.log, 30)

    def close(self) -> None:
        self.stop()
        self.log.unlink(missing_ok=True)


@contextlib.contextmanager
def running_server(
    backend_uri: str,
    artifact_uri: str,
    env: Mapping[str, str],
    mode: str = "proxied",
    workers: int = 1,
) -> Iterator[MlflowServer]:
    server = MlflowServer(backend_uri, artifact_uri, dict(env), mode, workers)
    try:
        server.start()
        yield server
    finally:
        server.close()
