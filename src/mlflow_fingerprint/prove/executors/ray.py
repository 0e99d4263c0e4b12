"""Reruns as Ray jobs: submitted through Ray's job API (a ``ray://`` client address or the
dashboard's ``http://`` address) with the worktree as the job's ``working_dir`` (uploaded to the
cluster, so the node needs no shared storage), placed by ``entrypoint_resources`` on a node that
advertises the machine kind the job names, stopped on the cluster on a timeout or an
interruption, its logs read back from the job API."""

from __future__ import annotations

import contextlib
import shlex
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ...errors import UsageError
from ..launch import Job
from ..placement import PREFIX
from ..process import GRACE_S, Finished, TimedOut
from .remote import last_line, relative_command, sent_env

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


@dataclass
class RayJobs:
    """Jobs submitted to the Ray cluster at ``address``."""

    address: str
    python: str = "python"  # the nodes' interpreter, with the package installed
    grace_s: float = GRACE_S
    submitted: list[str] = field(default_factory=list)  # submission ids, in order

    def kinds(self) -> tuple[str, ...]:
        """The machine kinds the cluster's live nodes advertise as custom resources."""
        from ray.util.state import list_nodes

        try:
            nodes = list_nodes(address=self._http(), detail=True, raise_on_missing_output=False)
        except Exception as exc:
            raise UsageError(
                f"--executor ray: cannot list the nodes of {self.address}: {exc}"
            ) from None
        found = {
            name
            for n in nodes
            if n.state == "ALIVE"
            for name in (n.resources_total or {})
            if name.startswith(PREFIX)
        }
        return tuple(sorted(found))

    def _http(self) -> str:
        """The dashboard address list_nodes reads (the client resolves a ray:// address)."""
        return str(_client(self.address).get_address())

    def execute(self, job: Job) -> Finished:
        client = _client(self.address)
        cwd, command = relative_command(job, self.python)
        entrypoint = f"cd {shlex.quote(cwd)} && exec {shlex.join(command)}"
        sid = f"mfp-rerun-{uuid.uuid4().hex[:12]}"
        runtime_env = {"working_dir": str(job.tree or job.cwd), "env_vars": sent_env(job.env)}
        try:
            client.submit_job(
                entrypoint=entrypoint,
                submission_id=sid,
                runtime_env=runtime_env,
                entrypoint_num_cpus=ENTRY_CPUS,
                entrypoint_resources={job.kind: 1} if job.kind else None,
            )
        except Exception as exc:
            raise UsageError(f"--executor ray: the job was not accepted: {exc}") from None
        self.submitted.append(sid)
        deadline = time.monotonic() + job.timeout_s
        try:
            while (status := str(client.get_job_status(sid).value)) not in DONE:
                if time.monotonic() > deadline:
                    self._stop(client, sid)
                    raise TimedOut(job.timeout_s)
                time.sleep(POLL_S)
        except TimedOut:
            raise
        except BaseException:
            self._stop(client, sid)
            raise
        info = client.get_job_info(sid)
        code = 0 if status == "SUCCEEDED" else (getattr(info, "driver_exit_code", None) or 1)
        return Finished(code, last_line(client.get_job_logs(sid), code, job.secrets))

    def _stop(self, client: Any, sid: str) -> None:
        """Stop the job on the cluster (Ray sends its driver SIGTERM, then SIGKILL) and wait
        for it to end. Never raises: this runs on the way out of an interruption."""
        with contextlib.suppress(Exception):
            client.stop_job(sid)
            deadline = time.monotonic() + self.grace_s
            while time.monotonic() < deadline:
                if str(client.get_job_status(sid).value) in DONE:
                    return
                time.sleep(POLL_S)
