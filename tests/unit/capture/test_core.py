"""Every probe is isolated and bounded in time: failures become ``unavailable`` fields."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mlflow_fingerprint.capture.core import Probe, make_context, run_probes


def ok(ctx: Any) -> dict[str, Any]:
    return {"value": 1}


def boom(ctx: Any) -> dict[str, Any]:
    raise PermissionError("no access to /dev/nvidia0")


def exits(ctx: Any) -> dict[str, Any]:
    raise SystemExit(3)


def not_a_dict(ctx: Any) -> Any:
    return 42


def test_raising_probes_become_unavailable_and_others_survive() -> None:
    out = run_probes(make_context(), {"a": ok, "b": boom, "c": exits, "d": not_a_dict}, 5.0)
    assert out["a"] == {"value": 1}
    assert out["b"] == {"unavailable": "probe failed: PermissionError: no access to /dev/nvidia0"}
    assert out["c"]["unavailable"].startswith("probe failed: SystemExit")
    assert out["d"] == {"unavailable": "probe returned no record"}


@pytest.fixture
def hangs() -> Iterator[Probe]:
    """A probe that holds its thread until the test has ended."""
    release = threading.Event()

    def probe(ctx: Any) -> dict[str, Any]:
        release.wait(30)
        return {"late": True}

    yield probe
    release.set()


def test_a_hanging_probe_is_cut_at_the_deadline(hangs: Probe) -> None:
    start = time.monotonic()
    out = run_probes(make_context(), {"fast": ok, "slow": hangs}, 0.3)
    elapsed = time.monotonic() - start
    assert elapsed < 2.0
    assert out["fast"] == {"value": 1}
    assert out["slow"] == {"unavailable": "probe timed out after 0.3s"}


def test_a_probe_holding_the_shared_thread_does_not_cost_the_probes_behind_it(
    hangs: Probe,
) -> None:
    start = time.monotonic()
    out = run_probes(make_context(), {"first": ok, "stuck": hangs, "behind": ok}, 3.0)
    elapsed = time.monotonic() - start
    assert out["first"] == {"value": 1}
    assert out["behind"] == {"value": 1}  # moved to a thread of its own, not lost with "stuck"
    assert out["stuck"] == {"unavailable": "probe timed out after 3s"}
    assert 2.5 < elapsed < 5.0


def test_probes_that_wait_on_the_os_get_a_thread_each_and_the_rest_share_one() -> None:
    threads: dict[str, str] = {}

    def named(name: str) -> Any:
        def probe(ctx: Any) -> dict[str, Any]:
            threads[name] = threading.current_thread().name
            return {"value": 1}

        return probe

    names = ["git", "cuda", "torch", "python", "program"]
    out = run_probes(make_context(), {n: named(n) for n in names}, 5.0, frozenset({"git", "cuda"}))
    assert all(out[n] == {"value": 1} for n in names)
    assert threads["git"] != threads["cuda"]
    assert threads["torch"] == threads["python"] == threads["program"]
    others = (threads["git"], threads["cuda"], threading.current_thread().name)
    assert threads["torch"] not in others
