"""Whether a spool's writer is provably gone, judged against real processes and the real /proc.

The records judged are what real processes said of themselves; the situations a test cannot
create (another host, a reboot, a recycled pid) are that record with the one field changed that
such a situation changes.
"""

from __future__ import annotations

from typing import Any

import pytest

from mlflow_fingerprint.tracking import liveness


def test_this_process_is_alive() -> None:
    here = liveness.identity()
    assert here["start_ticks"] is not None
    verdict = liveness.judge(here)
    assert not verdict.gone
    assert verdict.why.endswith("is still running")


def test_a_live_pid_that_started_at_another_time_is_another_process() -> None:
    recycled = {**liveness.identity(), "start_ticks": liveness.identity()["start_ticks"] - 1}
    verdict = liveness.judge(recycled)
    assert verdict.gone
    assert "now another process's" in verdict.why


def test_a_restarted_host_ended_every_process() -> None:
    verdict = liveness.judge({**liveness.identity(), "boot_id": "0" * 8})
    assert verdict.gone
    assert "restarted" in verdict.why


@pytest.mark.parametrize("recorded", [None, {}, {"pid": "12"}])
def test_no_record_proves_nothing(recorded: dict[str, Any] | None) -> None:
    assert not liveness.judge(recorded).gone
