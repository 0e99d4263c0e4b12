"""Reruns as Ray jobs: submitted through Ray's job API (a ``ray://`` client address or the
dashboard's ``http://`` address) with the worktree as the job's ``working_dir`` (uploaded to the
cluster, so the node needs no shared storage), placed by ``entrypoint_resources`` on a node that
advertises the machine kind the job names, stopped on the cluster on a timeout or an
interruption, its logs read back from the job API. Several at once in a bisect's round: one per
live node unless told otherwise."""

from __future__ import annotations

import contextlib
import logging
import shlex
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import UsageError
from ..launch import Job
from ..placement import PREFIX
from ..process import GRACE_S, Finished, TimedOut, last_line, wait_for
from .remote import relative_command, sent_env

POLL_S = 0.5
# A job's driver takes no CPU of its own: the node's CPUs go to the training it starts.
ENTRY_CPUS = 0
DONE = ("SUCCEEDED", "FAILED", "STOPPED")


def _client(address: str) -> Any:
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        raise UsageError(
            "--executor ray needs Ray's job client: pip install 'mlflow-fingerprint[ray]'"
        ) from None
    try:
        return JobSubmissionClient(address)
    except Exception as exc:  # connection refused, a bad address: one line
        raise UsageError(f"--executor ray: cannot reach {address}: {exc}") from None


@contextlib.contextmanager
def _quiet_ray() -> Iterator[None]:
    """Ray's own logging held to errors while a job is submitted: its client says at INFO that
    it zips and uploads the worktree, lines that would land among the bisect's own on stderr."""
    logger = logging.getLogger("ray")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _alive(address: str) -> list[Any]:
    """The cluster's live nodes, as Ray's state API lists them (from the dashboard's address,
    which the job client resolves where ``address`` is a ``ray://`` one)."""
    from ray.util.state import list_nodes

    http = str(_client(address).get_address())
    try:
        nodes = list_nodes(address=http, detail=True, raise_on_missing_output=False)
    except Exception as exc:
        raise UsageError(f"--executor ray: cannot list the nodes of {address}: {exc}") from None
    return [n for n in nodes if n.state == "ALIVE"]


@dataclass(frozen=True)
class RayJobs:
    """Jobs submitted to the Ray cluster at ``address``, ``slots`` of them at once (:meth:`on`
    counts the live nodes). ``python``: the nodes' interpreter, with the package installed."""

    address: str
    python: str | None = "python"
    grace_s: float = GRACE_S
    slots: int = 1

    @staticmethod
    def on(address: str) -> RayJobs:
        """Jobs to the cluster at ``address``, as many at once as it has live nodes."""
        return RayJobs(address, slots=max(1, len(_alive(address))))

    def kinds(self) -> tuple[str, ...]:
        """The machine kinds the cluster's live nodes advertise as custom resources."""
        found = {
            name
            for n in _alive(self.address)
            for name in (n.resources_total or {})
            if name.startswith(PREFIX)
        }
        return tuple(sorted(found))

    def submit(self, job: Job) -> RayPending:
        return RayPending(self, job)

    def execute(self, job: Job) -> Finished:
        return wait_for(self.submit(job))


class RayPending:
    """One submitted Ray job, known by its submission id (``mfp-rerun-...``)."""

    def __init__(self, jobs: RayJobs, job: Job) -> None:
        self.jobs, self.job = jobs, job
        self.client = _client(jobs.address)
        cwd, command = relative_command(job, jobs.python)
        entrypoint = f"cd {shlex.quote(cwd)} && exec {shlex.join(command)}"
        self.id = f"mfp-rerun-{uuid.uuid4().hex[:12]}"
        runtime_env = {"working_dir": str(job.tree or job.cwd), "env_vars": sent_env(job.env)}
        self.started = time.monotonic()
        try:
            with _quiet_ray():
                self.client.submit_job(
                    entrypoint=entrypoint,
                    submission_id=self.id,
                    runtime_env=runtime_env,
                    entrypoint_num_cpus=ENTRY_CPUS,
                    entrypoint_resources={job.kind: 1} if job.kind else None,
                )
        except Exception as exc:
            raise UsageError(f"--executor ray: the job was not accepted: {exc}") from None
        self.deadline = self.started + job.timeout_s

    def _status(self) -> str:
        return str(self.client.get_job_status(self.id).value)

    def poll(self) -> Finished | None:
        status = self._status()
        if status not in DONE:
            if time.monotonic() <= self.deadline:
                return None
            self.cancel()
            raise TimedOut(self.job.timeout_s)
        info = self.client.get_job_info(self.id)
        code = 0 if status == "SUCCEEDED" else (getattr(info, "driver_exit_code", None) or 1)
        text = self.client.get_job_logs(self.id)
        wall = time.monotonic() - self.started
        log = f"ray job logs --address {self.jobs.address} {self.id}"
        return Finished(code, last_line(text, code, self.job.secrets), wall, log)

    def cancel(self) -> None:
        """Stop the job on the cluster (Ray sends its driver SIGTERM, then SIGKILL) and wait
        for it to end. Never raises: this runs on the way out of an interruption."""
        with contextlib.suppress(Exception):
            self.client.stop_job(self.id)
            deadline = time.monotonic() + self.jobs.grace_s
            while time.monotonic() < deadline and self._status() not in DONE:
                time.sleep(POLL_S)
