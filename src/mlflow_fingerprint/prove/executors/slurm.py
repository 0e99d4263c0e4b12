"""Reruns as Slurm batch jobs: ``sbatch`` on the worktree (which must lie on storage the nodes
share), placed with ``--constraint`` on a node whose features hold the machine kind the job
names, polled with ``scontrol``, cancelled with ``scancel`` on a timeout or an interruption.
Several at once in a bisect's round: one per node of the partition unless told otherwise."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...errors import UsageError
from ..launch import Job
from ..placement import PREFIX
from ..process import GRACE_S, Finished, TimedOut, last_line, wait_for
from .remote import relative_command, sent_env

POLL_S = 0.5
CLI_TIMEOUT_S = 30.0
# How long a cancelled job may stay COMPLETING (its node ending the processes: Slurm's KillWait
# and the epilog) before cancel gives up waiting.
ENDING_S = 30.0
WAITING = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED")
_EXIT = re.compile(r"\bExitCode=(\d+):(\d+)")
_STATE = re.compile(r"\bJobState=(\w+)")


@dataclass(frozen=True)
class SlurmJobs:
    """Jobs submitted to Slurm's default partition, or ``partition``; ``slots`` of them at once
    (:meth:`on` counts the partition's nodes). ``python``: the interpreter the nodes run, where
    not the job's own (the nodes share its path, docs/clusters.md)."""

    partition: str | None = None
    python: str | None = None
    grace_s: float = GRACE_S
    slots: int = 1

    @staticmethod
    def on(partition: str | None) -> SlurmJobs:
        """Jobs to ``partition``, as many at once as it has nodes."""
        flags = ["-p", partition] if partition else []
        counts = _slurm(["sinfo", "-h", "-o", "%D", *flags]).split()
        return SlurmJobs(partition, slots=max(1, sum(int(c) for c in counts if c.isdigit())))

    def kinds(self) -> tuple[str, ...]:
        """The machine kinds among the features of the partition's nodes."""
        out = _slurm(["sinfo", "-h", "-o", "%f", *self._partition()])
        found = {f for line in out.split() for f in line.split(",") if f.startswith(PREFIX)}
        return tuple(sorted(found))

    def _partition(self) -> list[str]:
        return ["-p", self.partition] if self.partition else []

    def submit(self, job: Job) -> SlurmPending:
        return SlurmPending(self, job)

    def execute(self, job: Job) -> Finished:
        return wait_for(self.submit(job))


class SlurmPending:
    """One batch job: its script and output in a folder under TMPDIR (storage the nodes share),
    removed once the job has ended well or been cancelled, kept where it failed."""

    def __init__(self, jobs: SlurmJobs, job: Job) -> None:
        self.jobs, self.job = jobs, job
        # Under TMPDIR (shared with the nodes, as the worktrees are), not inside the worktree's
        # folder: that goes with the checkout, and a failed job's output is kept to be read.
        self.folder = Path(tempfile.mkdtemp(prefix="mfp-slurm-"))
        try:
            script = self.folder / "job.sh"
            script.write_text(_script(job, jobs.python))
            script.chmod(0o700)
            self.output = self.folder / "out.txt"
            submit = ["sbatch", "--parsable", "--export=NONE", "-o", str(self.output)]
            submit += ["-J", "mfp-rerun", *jobs._partition()]
            submit += ["--time", str(max(1, int(job.timeout_s // 60) + 2))]
            if job.kind:
                submit += ["--constraint", job.kind]
            self.started = time.monotonic()
            self.id = _slurm([*submit, str(script)]).strip().split(";")[0]
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.deadline = self.started + job.timeout_s

    def poll(self) -> Finished | None:
        state = _state(self.id)
        if state in WAITING:
            if time.monotonic() <= self.deadline:
                return None
            self.cancel()
            raise TimedOut(self.job.timeout_s)
        code = _exit_code(self.id)
        code = code if state == "COMPLETED" else code or 1
        text = self.output.read_text(errors="replace") if self.output.exists() else ""
        wall = time.monotonic() - self.started
        if code:  # kept for the user to read: the error names it
            return Finished(code, last_line(text, code, self.job.secrets), wall, str(self.output))
        shutil.rmtree(self.folder, ignore_errors=True)
        return Finished(code, last_line(text, code, self.job.secrets), wall)

    def cancel(self) -> None:
        """SIGINT to the training (it ends its run KILLED), then the job cancelled past the
        grace period, and a wait (bounded) until the controller has it ended, not completing:
        the caller may say it is gone. Never raises: this runs on the way out of an
        interruption."""
        with contextlib.suppress(Exception):
            _slurm(["scancel", "--signal=INT", "--full", self.id])
            self._wait_ended(self.jobs.grace_s)
        with contextlib.suppress(Exception):
            _slurm(["scancel", self.id])
            self._wait_ended(ENDING_S)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _wait_ended(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while _state(self.id) in WAITING and time.monotonic() < deadline:
            time.sleep(POLL_S)


def _script(job: Job, python: str | None) -> str:
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
