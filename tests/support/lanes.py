"""Independent processes of one test module, run side by side on the machine's cores.

Each example script or TensorFlow job is a training of its own in a process of its own, with its
own store: nothing orders them. Run one after the other they leave a 2-core CI machine half idle
for minutes (most of each process is a single-threaded import of torch or TensorFlow); started
in lanes, as many as there are cores, they take about half the time, and each test still checks
its own process's result.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mlflow_fingerprint.environment import environ_copy

LANES = max(2, min(4, os.cpu_count() or 2))


@dataclass(frozen=True)
class Job:
    """One process to run: its command, working directory and environment."""

    cmd: Sequence[str]
    cwd: Path | None = None
    env: Mapping[str, str] | None = None
    timeout_s: float = 600.0
    merge_stderr: bool = False  # stderr into stdout, as a person piping the output sees it


@dataclass
class Lanes:
    """Jobs by name, started on first use, at most ``lanes`` at a time; ``result(name)`` waits
    for one. Jobs run in the order given, so put the slowest first."""

    jobs: Mapping[str, Job]
    lanes: int = LANES
    _futures: dict[str, Future[subprocess.CompletedProcess[str]]] = field(default_factory=dict)
    _pool: ThreadPoolExecutor | None = None

    def start(self) -> None:
        """Start every job. A job without an environment of its own gets this thread's
        environment as it is now, copied in one piece (``environ_copy``): a lane must never hand
        its child the C ``environ`` (``env=None``), which the tests' own threads rewrite between
        tests (each test's ``os.environ`` is restored at its end) while the lanes go on.
        ``subprocess`` starts a child with ``vfork``, the GIL released, and a child that calls
        ``execv`` while the parent reallocates that array fails with ``EFAULT`` ("Bad address",
        seen once in CI)."""
        if self._pool is not None:
            return
        inherited = environ_copy()
        self._pool = ThreadPoolExecutor(self.lanes, thread_name_prefix="lane")
        for name, job in self.jobs.items():
            self._futures[name] = self._pool.submit(_run, job, inherited)

    def result(self, name: str) -> subprocess.CompletedProcess[str]:
        self.start()
        return self._futures[name].result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _run(job: Job, inherited: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(job.cmd),
        cwd=job.cwd,
        env=dict(job.env if job.env is not None else inherited),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if job.merge_stderr else subprocess.PIPE,
        text=True,
        timeout=job.timeout_s,
        check=False,
    )
