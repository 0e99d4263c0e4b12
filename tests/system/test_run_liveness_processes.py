"""Whether the process that wrote a spool still runs, judged on real child processes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mlflow_fingerprint.tracking import liveness

CHILD_IDENTITY = (
    "import json; from mlflow_fingerprint.tracking.liveness import identity; "
    "print(json.dumps(identity()), flush=True)"
)


def child_identity(*, reap: bool) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """A real process's identity(), once it has ended: reaped, or else maybe not yet."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_IDENTITY], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    recorded = json.loads(child.stdout.read())
    if reap:
        child.wait(60)
    return child, recorded


def test_an_exited_and_reaped_process_is_gone() -> None:
    child, recorded = child_identity(reap=True)
    assert recorded["pid"] == child.pid
    verdict = liveness.judge(recorded)
    assert verdict.gone
    assert verdict.why == f"process {child.pid} on {recorded['hostname']} exited"


def test_a_zombie_is_gone() -> None:
    """Killed but not yet reaped by its parent (a launcher busy elsewhere): /proc still lists it,
    with the same start time."""
    child, recorded = child_identity(reap=False)
    try:
        stat = Path(f"/proc/{child.pid}/stat")
        deadline = time.monotonic() + 30
        while ") Z " not in stat.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ") Z " in stat.read_text()
        assert liveness.judge(recorded).gone
    finally:
        child.wait(30)


def test_another_host_is_never_judged_from_here() -> None:
    _, recorded = child_identity(reap=True)  # its pid is free here: must not matter
    verdict = liveness.judge({**recorded, "hostname": "gpu-node-17"})
    assert not verdict.gone
    assert "gpu-node-17 (another host)" in verdict.why


def test_another_pid_namespace_is_never_judged_from_here() -> None:
    _, recorded = child_identity(reap=True)
    verdict = liveness.judge({**recorded, "pid_namespace": "pid:[1]"})
    assert not verdict.gone
    assert "another container" in verdict.why
