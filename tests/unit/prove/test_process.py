"""Running a rerun's jobs (``prove/process.py``): rounds of jobs on a pool or one after another,
timeouts as one job's answer, an interruption that ends every running job, and the line a
failed job becomes. The executor here is one that runs each job in this process, as the
protocol allows (``LocalProcess`` starting real trainings is tested in ``tests/system``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mlflow_fingerprint.prove.launch import Job
from mlflow_fingerprint.prove.process import (
    TAIL_CHARS,
    Finished,
    Pool,
    TimedOut,
    free_cores,
    last_line,
    run_round,
    wait_for,
)


def job(name: str, timeout_s: float = 5.0) -> Job:
    return Job((name,), Path("."), {}, timeout_s)


@dataclass
class InProcess:
    """Each job ends after ``polls`` polls with the exit code its name says (``exit-3``), or
    runs past its bound (``slow``); ``slots`` at once. It notes what ran and what was ended."""

    slots: int = 2
    polls: int = 2
    log: list[str] = field(default_factory=list)
    interrupt_after: int | None = None

    def submit(self, j: Job) -> InProcessPending:
        self.log.append(f"start {j.command[0]}")
        return InProcessPending(self, j)

    def execute(self, j: Job) -> Finished:
        return wait_for(self.submit(j))


@dataclass
class InProcessPending:
    pool: InProcess
    job: Job
    seen: int = 0

    def poll(self) -> Finished | None:
        self.seen += 1
        name = self.job.command[0]
        if self.pool.interrupt_after is not None and self.seen > self.pool.interrupt_after:
            raise KeyboardInterrupt
        if self.seen < self.pool.polls:
            return None
        if name == "slow":
            self.cancel()
            raise TimedOut(self.job.timeout_s)
        self.pool.log.append(f"end {name}")
        return Finished(int(name.removeprefix("exit-")), f"{name} done")

    def cancel(self) -> None:
        self.pool.log.append(f"cancel {self.job.command[0]}")


def test_the_in_process_executor_is_a_pool() -> None:
    assert isinstance(InProcess(), Pool)


def test_a_round_runs_its_jobs_side_by_side_and_answers_in_their_order() -> None:
    pool = InProcess(slots=2)
    ended = run_round(pool, [job("exit-0"), job("slow", 1.5), job("exit-3")])
    assert [type(e).__name__ for e in ended] == ["Finished", "TimedOut", "Finished"]
    assert ended[0].returncode == 0
    assert ended[2].returncode == 3
    assert str(ended[1]) == "the rerun's training ran past its time bound of 1.5 s"
    # two at a time: the third starts only once one of the first two has ended
    assert pool.log[:2] == ["start exit-0", "start slow"]
    assert pool.log.index("start exit-3") > pool.log.index("end exit-0")


def test_a_pool_of_one_slot_runs_the_jobs_one_after_another() -> None:
    pool = InProcess(slots=1)
    ended = run_round(pool, [job("exit-0"), job("exit-1")])
    assert [e.returncode for e in ended] == [0, 1]  # type: ignore[union-attr]
    assert pool.log == ["start exit-0", "end exit-0", "start exit-1", "end exit-1"]


def test_an_interruption_ends_every_job_still_running_and_goes_on() -> None:
    pool = InProcess(slots=2, polls=5, interrupt_after=1)
    with pytest.raises(KeyboardInterrupt):
        run_round(pool, [job("exit-0"), job("exit-0")])
    assert pool.log.count("cancel exit-0") == 2
    single = InProcess(polls=5, interrupt_after=1)
    with pytest.raises(KeyboardInterrupt):
        single.execute(job("exit-0"))
    assert single.log == ["start exit-0", "cancel exit-0"]


def test_a_failed_job_s_line_is_its_last_one_cut_and_redacted() -> None:
    token = "ghp_" + "k3Y" * 12
    text = f"step 1\nTraceback ...\nValueError: bad token {token}\n\n"
    assert last_line(text, 1, frozenset({token})) == "ValueError: bad token ***"
    assert last_line("", 137, frozenset()) == "exit 137"
    assert len(last_line("x" * 1000, 1, frozenset())) == TAIL_CHARS


def test_the_free_cores_are_at_least_one_and_at_most_this_process_s() -> None:
    assert 1 <= free_cores() <= len(os.sched_getaffinity(0))
