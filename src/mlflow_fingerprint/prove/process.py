"""Running a rerun's training: the small protocol a rerun needs of whatever runs it, and its
local implementation, a process group here (a cluster's are in ``executors/``).

An :class:`Executor` runs a :class:`~.launch.Job` to its end and says how it ended; on a timeout
it raises :class:`TimedOut`, and on an interruption (Ctrl-C, or SIGTERM turned into
``Terminated``) it lets the exception through, but only once the job is over. That is the whole
contract: a test, or another executor (a container, a remote machine), can stand in for a
process.

An executor that can hold several jobs at once is also a :class:`Pool`: ``submit`` starts a job
and returns at once with a :class:`Pending` the caller polls, and ``slots`` says how many it can
hold (locally, the free cores). :func:`run_round` runs one round of independent jobs on either:
all at once on a pool, one after another otherwise; a Ray or Slurm executor (``executors/``) is
a pool whose ``Pending`` asks the cluster. The round is polled from the calling thread, so Ctrl-C
(and SIGTERM) reaches it and every job still running is ended before the exception goes on.

:class:`LocalProcess` starts the training in a session (and so a process group) of its own, so
that ending it ends its DataLoader workers and anything else it started: SIGINT first, which a
``fingerprinted`` run answers by ending its MLflow run KILLED, then SIGKILL to whatever is left
after a grace period. Its output goes to a temporary file; the last line is kept for the error a
failed training becomes.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Protocol, runtime_checkable

from .launch import Job, masked

# How long a training has to end its run after SIGINT before its process group is killed.
GRACE_S = 10.0
# How often a round looks at its running jobs.
POLL_S = 0.05
TAIL_BYTES = 4096
TAIL_CHARS = 300


class TimedOut(Exception):
    """A job ran past its time bound; it has been ended."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"the rerun's training ran past its time bound of {timeout_s:g} s")
        self.timeout_s = timeout_s


@dataclass(frozen=True)
class Finished:
    """How a job ended on its own: its exit status, the last line it printed (redacted), where
    the executor measured it, how long it ran (0: not measured), and where the job ran on a
    cluster, how to read its whole output there (a file, or the command that prints it)."""

    returncode: int
    last_line: str
    wall_s: float = 0.0
    log: str | None = None


class Executor(Protocol):
    def execute(self, job: Job) -> Finished:
        """Run ``job`` to its end. ``TimedOut`` past ``job.timeout_s``; a KeyboardInterrupt (or
        ``Terminated``) raised while it runs propagates once the job has been ended."""
        ...


class Pending(Protocol):
    """A submitted job. ``poll``: None while it runs, how it ended once it has (``TimedOut``
    once past its time bound, after ending it); ``cancel``: end it now (an interruption)."""

    def poll(self) -> Finished | None: ...

    def cancel(self) -> None: ...


@runtime_checkable
class Pool(Protocol):
    """An executor that holds ``slots`` jobs at once, each started by ``submit``."""

    slots: int

    def execute(self, job: Job) -> Finished: ...

    def submit(self, job: Job) -> Pending: ...


def free_cores() -> int:
    """The cores this process may use that the machine's load leaves free; at least one."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    return max(1, cores - math.floor(busy))


class LocalPending:
    """One job's process group, started and not waited for."""

    def __init__(self, job: Job, grace_s: float) -> None:
        self.job = job
        self.grace_s = grace_s
        self.out = tempfile.TemporaryFile()  # noqa: SIM115 (closed by poll or cancel)
        self.started = time.monotonic()
        self.deadline = self.started + job.timeout_s
        try:
            self.process = subprocess.Popen(
                list(job.command),
                cwd=job.cwd,
                env=dict(job.env),
                stdin=subprocess.DEVNULL,
                stdout=self.out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            self.out.close()
            raise

    def poll(self) -> Finished | None:
        code = self.process.poll()
        if code is None:
            if time.monotonic() < self.deadline:
                return None
            self.cancel()
            raise TimedOut(self.job.timeout_s)
        kill_group(self.process.pid)  # a worker left behind by a training that exited
        wall = time.monotonic() - self.started
        with self.out:
            return Finished(code, _last_line(self.out, code, self.job.secrets), wall)

    def cancel(self) -> None:
        try:
            end_group(self.process, self.grace_s)
        finally:
            self.out.close()


@dataclass(frozen=True)
class LocalProcess:
    """A job as a local process group, ended whole on a timeout or an interruption; ``slots``
    of them at once in a round (default: the free cores)."""

    grace_s: float = GRACE_S
    slots: int = 1

    def submit(self, job: Job) -> LocalPending:
        return LocalPending(job, self.grace_s)

    def execute(self, job: Job) -> Finished:
        return wait_for(self.submit(job))


def wait_for(pending: Pending) -> Finished:
    """``pending`` polled to its end; ended on the way out of an interruption."""
    try:
        while (finished := pending.poll()) is None:
            time.sleep(POLL_S)
        return finished
    except TimedOut:
        raise
    except BaseException:
        pending.cancel()
        raise


Ended = Finished | TimedOut


def run_round(executor: Executor, jobs: list[Job]) -> list[Ended]:
    """How each of ``jobs`` ended, in their order: ``slots`` at a time where ``executor`` is a
    pool, else one after another. A timeout is one job's answer; an interruption ends every job
    still running and goes on."""
    if not isinstance(executor, Pool) or executor.slots < 2 or len(jobs) < 2:
        return [_ended(executor.execute, job) for job in jobs]
    waiting = list(enumerate(jobs))
    running: dict[int, Pending] = {}
    ended: dict[int, Ended] = {}
    try:
        while waiting or running:
            while waiting and len(running) < executor.slots:
                i, job = waiting.pop(0)
                running[i] = executor.submit(job)
            for i, pending in list(running.items()):
                try:
                    finished: Ended | None = pending.poll()
                except TimedOut as exc:
                    finished = exc
                if finished is not None:
                    ended[i] = finished
                    del running[i]
            if running:
                time.sleep(POLL_S)
    except BaseException:
        for pending in running.values():
            pending.cancel()
        raise
    return [ended[i] for i in range(len(jobs))]


def _ended(execute: Callable[[Job], Finished], job: Job) -> Ended:
    try:
        return execute(job)
    except TimedOut as exc:
        return exc


def _last_line(out: IO[bytes], code: int, secrets: frozenset[str]) -> str:
    out.seek(0, os.SEEK_END)
    out.seek(max(0, out.tell() - TAIL_BYTES))
    return last_line(out.read().decode(errors="replace"), code, secrets)


def last_line(text: str, code: int, secrets: frozenset[str]) -> str:
    """The last line of a job's output (its last characters), redacted, for the error a failed
    rerun becomes; its exit status where it printed nothing. Every executor's, local or not."""
    lines = text.strip().splitlines()
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
