"""Reruns as Slurm batch jobs: ``sbatch`` on the worktree (which must lie on storage the nodes
share), placed with ``--constraint`` on a node whose features hold the machine kind the job
names, polled with ``squeue``, cancelled with ``scancel`` on a timeout or an interruption."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...errors import UsageError
from ..launch import Job
from ..placement import PREFIX
from ..process import GRACE_S, Finished, TimedOut
from .remote import last_line, relative_command, sent_env

POLL_S = 0.5
CLI_TIMEOUT_S = 30.0
_EXIT = re.compile(r"\bExitCode=(\d+):(\d+)")
_STATE = re.compile(r"\bJobState=(\w+)")


@dataclass(frozen=True)
class SlurmJobs:
    """Jobs submitted to Slurm's default partition, or ``partition``."""

    partition: str | None = None
    python: str = sys.executable  # the nodes share this interpreter's path (docs/clusters.md)
    grace_s: float = GRACE_S

    def kinds(self) -> tuple[str, ...]:
        """The machine kinds among the features of the partition's nodes."""
        out = _slurm(["sinfo", "-h", "-o", "%f", *self._partition()])
        found = {f for line in out.split() for f in line.split(",") if f.startswith(PREFIX)}
        return tuple(sorted(found))

    def _partition(self) -> list[str]:
        return ["-p", self.partition] if self.partition else []

    def execute(self, job: Job) -> Finished:
        with tempfile.TemporaryDirectory(
            prefix="mfp-slurm-", dir=job.tree and job.tree.parent
        ) as d:
            script = Path(d) / "job.sh"
            script.write_text(_script(job, self.python))
            script.chmod(0o700)
            output = Path(d) / "out.txt"
            submit = ["sbatch", "--parsable", "--export=NONE", "-o", str(output), "-J", "mfp-rerun"]
            submit += [*self._partition(), "--time", str(max(1, int(job.timeout_s // 60) + 2))]
            if job.kind:
                submit += ["--constraint", job.kind]
            job_id = _slurm([*submit, str(script)]).strip().split(";")[0]
            deadline = time.monotonic() + job.timeout_s
            try:
                while (state := _state(job_id)) in ("PENDING", "RUNNING", "CONFIGURING"):
                    if time.monotonic() > deadline:
                        self._cancel(job_id)
                        raise TimedOut(job.timeout_s)
                    time.sleep(POLL_S)
            except TimedOut:
                raise
            except BaseException:
                self._cancel(job_id)
                raise
            code = _exit_code(job_id) if state == "COMPLETED" else _exit_code(job_id) or 1
            text = output.read_text(errors="replace") if output.exists() else ""
            return Finished(code, last_line(text, code, job.secrets))

    def _cancel(self, job_id: str) -> None:
        """SIGINT to the training (it ends its run KILLED), then the job cancelled past the
        grace period. Never raises: this runs on the way out of an interruption."""
        with contextlib.suppress(Exception):
            _slurm(["scancel", "--signal=INT", "--full", job_id])
            deadline = time.monotonic() + self.grace_s
            while _state(job_id) in ("RUNNING", "PENDING") and time.monotonic() < deadline:
                time.sleep(POLL_S)
        with contextlib.suppress(Exception):
            _slurm(["scancel", job_id])


def _script(job: Job, python: str) -> str:
    """The batch script: into the job's directory, the sent variables only, the command."""
    cwd, command = relative_command(job, python)
    tree = job.tree or job.cwd
    exports = [f"export {k}={shlex.quote(v)}" for k, v in sorted(sent_env(job.env).items())]
    lines = ["#!/bin/sh", f"cd {shlex.quote(str(Path(tree) / cwd))} || exit 97", *exports]
    return "\n".join([*lines, "exec " + shlex.join(command), ""])


def _slurm(argv: list[str]) -> str:
    """A Slurm command's output; a UsageError in one line where it is missing or fails."""
    if shutil.which(argv[0]) is None:
        raise UsageError(f"--executor slurm: {argv[0]} is not on the PATH (Slurm's client)")
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, env=os.environ.copy()
        )
    except subprocess.TimeoutExpired:
        raise UsageError(
            f"--executor slurm: {argv[0]} did not answer in {CLI_TIMEOUT_S:g} s"
        ) from None
    if done.returncode:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise UsageError(f"--executor slurm: {argv[0]} failed: {why}")
    return done.stdout


def _show(job_id: str) -> str:
    return _slurm(["scontrol", "show", "job", job_id])


def _state(job_id: str) -> str:
    m = _STATE.search(_show(job_id))
    return m[1] if m else "UNKNOWN"


def _exit_code(job_id: str) -> int:
    """The job's exit status (a signal's number past 128, as a shell reports it)."""
    m = _EXIT.search(_show(job_id))
    if not m:
        return 1
    code, signal = int(m[1]), int(m[2])
    return code or (128 + signal if signal else 0)
