"""Running a rerun's training: the small protocol a rerun needs of whatever runs it, and the one
implementation it has today, a local process.

An :class:`Executor` runs a :class:`~.launch.Job` to its end and says how it ended; on a timeout
it raises :class:`TimedOut`, and on an interruption (Ctrl-C, or SIGTERM turned into
``Terminated``) it lets the exception through, but only once the job is over. That is the whole
contract: a test, or another executor (a container, a remote machine), can stand in for a
process.

:class:`LocalProcess` starts the training in a session (and so a process group) of its own, so
that ending it ends its DataLoader workers and anything else it started: SIGINT first, which a
``fingerprinted`` run answers by ending its MLflow run KILLED, then SIGKILL to whatever is left
after a grace period. Its output goes to a temporary file; the last line is kept for the error a
failed training becomes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import IO, Protocol

from .launch import Job, masked

# How long a training has to end its run after SIGINT before its process group is killed.
GRACE_S = 10.0
TAIL_BYTES = 4096
TAIL_CHARS = 300


class TimedOut(Exception):
    """A job ran past its time bound; it has been ended."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"the rerun's training ran past its time bound of {timeout_s:g} s")
        self.timeout_s = timeout_s


@dataclass(frozen=True)
class Finished:
    """How a job ended on its own: its exit status and the last line it printed (redacted)."""

    returncode: int
    last_line: str


class Executor(Protocol):
    def execute(self, job: Job) -> Finished:
        """Run ``job`` to its end. ``TimedOut`` past ``job.timeout_s``; a KeyboardInterrupt (or
        ``Terminated``) raised while it runs propagates once the job has been ended."""
        ...


@dataclass(frozen=True)
class LocalProcess:
    """A job as a local process group, ended whole on a timeout or an interruption."""

    grace_s: float = GRACE_S

    def execute(self, job: Job) -> Finished:
        with tempfile.TemporaryFile() as out:
            process = subprocess.Popen(
                list(job.command),
                cwd=job.cwd,
                env=dict(job.env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                code = process.wait(timeout=job.timeout_s)
            except subprocess.TimeoutExpired:
                end_group(process, self.grace_s)
                raise TimedOut(job.timeout_s) from None
            except BaseException:
                end_group(process, self.grace_s)
                raise
            kill_group(process.pid)  # a worker left behind by a training that exited
            return Finished(code, _last_line(out, code, job.secrets))


def _last_line(out: IO[bytes], code: int, secrets: frozenset[str]) -> str:
    out.seek(0, os.SEEK_END)
    out.seek(max(0, out.tell() - TAIL_BYTES))
    lines = out.read().decode(errors="replace").strip().splitlines()
    last = lines[-1][-TAIL_CHARS:] if lines else f"exit {code}"
    return masked(last, secrets)


def end_group(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """End ``process`` and its group: SIGINT (the training ends its run and flushes), then, past
    ``grace_s``, SIGKILL to everything left in the group. A second Ctrl-C while waiting kills at
    once: this runs on the way out of an interruption."""
    try:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGINT)
        deadline = time.monotonic() + grace_s
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        kill_group(process.pid)
        with contextlib.suppress(Exception):
            process.wait(timeout=grace_s)


def kill_group(pgid: int) -> None:
    """SIGKILL whatever is left in process group ``pgid``; nothing where it is empty."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
