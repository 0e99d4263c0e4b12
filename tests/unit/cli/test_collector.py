"""The ``fingerprint`` process's garbage collector: off while a command runs, everything frozen
when it ends, back on over a frozen heap for a command that runs long."""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from mlflow_fingerprint.cli import collector, main


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    """Each test leaves the test process's collector as it found it (on, nothing frozen)."""
    assert gc.isenabled()
    assert not gc.get_freeze_count()
    yield
    gc.unfreeze()
    gc.enable()


def _collectable(obj: object) -> bool:
    """Whether the collector would walk ``obj``: in a generation, not frozen."""
    return any(o is obj for o in gc.get_objects())


def test_off_while_the_command_runs_and_everything_frozen_at_its_end() -> None:
    with collector.held_off():
        inside = gc.isenabled()
        kept = [[n] for n in range(1000)]  # objects the body made: frozen with the rest
    assert inside is False
    assert gc.isenabled()
    assert not _collectable(kept)


def test_a_command_that_runs_long_gets_the_collector_back() -> None:
    with collector.held_off(seconds=0.05):
        deadline = time.monotonic() + 5
        while not gc.isenabled() and time.monotonic() < deadline:
            time.sleep(0.01)
        resumed = gc.isenabled()
        frozen_then = gc.get_freeze_count()
        cycle: list[object] = []
        cycle.append(cycle)  # garbage made after the timer: the collector sees it
        del cycle
        found = gc.collect()
        made_after = [[n] for n in range(1000)]  # frozen too when the command ends
    assert resumed
    assert frozen_then > 0
    assert found >= 1
    assert not _collectable(made_after)


def test_a_collector_the_caller_turned_off_or_froze_is_left_alone() -> None:
    gc.disable()
    with collector.held_off(seconds=0.01):
        time.sleep(0.05)
        still_off = not gc.isenabled()
    assert still_off
    assert not gc.isenabled()
    assert not gc.get_freeze_count()
    gc.enable()
    gc.freeze()
    frozen = gc.get_freeze_count()
    with collector.held_off():
        on_inside = gc.isenabled()
        made_inside = [[n] for n in range(1000)]
    assert on_inside
    # Nothing more frozen: the body's objects stay collectable. The count itself only falls
    # (another thread of the test process may free a frozen object meanwhile), never rises.
    assert _collectable(made_inside)
    assert gc.get_freeze_count() <= frozen


def test_the_timer_never_outlives_the_command() -> None:
    before = set(threading.enumerate())
    with collector.held_off():
        pass
    time.sleep(0.05)
    assert not [t for t in threading.enumerate() if t not in before and t.is_alive()]


def test_the_fingerprint_entry_point_holds_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, bool] = {}

    def command() -> int:
        seen["enabled"] = gc.isenabled()
        return 0

    monkeypatch.setattr(main, "main", command)
    monkeypatch.setattr(sys, "argv", ["fingerprint"])
    with pytest.raises(SystemExit) as ended:
        main.entry()
    assert ended.value.code == 0
    assert seen == {"enabled": False}
    assert gc.get_freeze_count() > 0
