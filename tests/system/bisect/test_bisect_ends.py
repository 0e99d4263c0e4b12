"""How a rerun ends when it is ended from outside: SIGTERM and a time bound end its training, its
process group, its worktree and its run, and no rerun leaves a worktree behind. The recorded
runs and the reruns ended are ``bisect_runs.py``'s, built once for this folder."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from bisect_runs import Project, alive, wait_until

from mlflow_fingerprint import layout

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_no_rerun_leaves_a_worktree(project: Project, jobs: dict[str, Any]) -> None:
    assert jobs  # every bisect and rerun has run
    assert project.leftovers() == []


def test_sigterm_ends_the_training_its_worktree_and_its_run(
    project: Project, jobs: dict[str, Any]
) -> None:
    end = jobs["signal:term"]
    assert end.code == 128 + signal.SIGTERM, end.err[-3000:]
    assert "fingerprint: ended by SIGTERM" in end.err
    assert "Traceback" not in end.err
    assert end.training
    assert end.left == []
    assert not any(alive(pid) for pid in end.training)
    with pytest.raises(ProcessLookupError):  # the training led its own process group
        os.killpg(min(end.training), 0)
    assert end.tree is not None
    assert not end.tree.exists()
    run = project.client().get_run(end.run_id)
    assert run.info.status == "KILLED"
    assert "SIGTERM" in run.data.tags[layout.INTERNAL_END_REASON]


def test_a_rerun_past_its_time_bound_is_ended_and_its_run_failed(
    project: Project, jobs: dict[str, Any]
) -> None:
    end = jobs["signal:timeout"]
    assert end.code == 2, end.err[-3000:]
    (line,) = [line for line in end.err.splitlines() if ": error: " in line]
    assert "ran past its time bound of 30 s" in line
    assert end.left == []
    assert end.tree is not None
    assert not end.tree.exists()
    assert end.run_id is not None  # its training had opened its run
    run = project.client().get_run(end.run_id)
    assert run.info.status == "FAILED"
    assert "time bound" in run.data.tags[layout.INTERNAL_END_REASON]


def test_a_timed_out_job_ends_its_whole_process_group(tmp_path: Path) -> None:
    """The executor alone: a job that ignores SIGINT and started a child of its own."""
    from mlflow_fingerprint.prove.launch import Job
    from mlflow_fingerprint.prove.process import LocalProcess, TimedOut

    pids = tmp_path / "pids"
    code = (
        "import os, signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(600)\n"
    )
    job = Job((sys.executable, "-c", code), tmp_path, dict(os.environ), timeout_s=3)
    started = time.monotonic()
    with pytest.raises(TimedOut):
        LocalProcess(grace_s=1).execute(job)
    assert time.monotonic() - started < 30
    started_pids = [int(p) for p in pids.read_text().split()]
    wait_until(lambda: not any(alive(p) for p in started_pids), 10, "the group ends")
