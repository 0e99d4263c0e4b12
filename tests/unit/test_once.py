"""``support/once.py``: what the xdist workers of one pytest run share is built by one of them.

Two workers are two threads here: ``flock`` locks belong to an open file, and each call opens
the lock file itself, so one thread waits for the other as one process waits for another.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from support.once import once_per_run


class Factory:
    """What ``once_per_run`` reads of pytest's ``TempPathFactory``: the worker's own folder."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def getbasetemp(self) -> Path:
        return self.base


def test_the_first_worker_builds_and_the_other_reads_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    built: list[Path] = []
    building = threading.Event()

    def build(folder: Path) -> dict[str, Any]:
        built.append(folder)
        building.set()
        time.sleep(0.3)  # the other worker asks meanwhile
        (folder / "made").write_text("once")
        return {"folder": str(folder), "builds": len(built)}

    results: dict[str, Any] = {}

    def worker(name: str) -> None:
        factory = Factory(tmp_path / f"popen-{name}")
        results[name] = once_per_run(factory, "thing", build)  # type: ignore[arg-type]

    first = threading.Thread(target=worker, args=("gw0",))
    first.start()
    assert building.wait(5)
    second = threading.Thread(target=worker, args=("gw1",))
    second.start()
    first.join(10)
    second.join(10)
    assert built == [tmp_path / "thing"]  # in the folder both workers' folders share
    assert results["gw0"] == results["gw1"] == {"folder": str(tmp_path / "thing"), "builds": 1}
    assert (tmp_path / "thing" / "made").read_text() == "once"


def test_a_build_that_failed_is_built_again_from_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # one process: its own folder

    def broken(folder: Path) -> None:
        (folder / "half").write_text("left by a build that failed")
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError):
        once_per_run(Factory(tmp_path), "thing", broken)  # type: ignore[arg-type]
    left: list[list[str]] = []

    def build(folder: Path) -> str:
        left.append(sorted(p.name for p in folder.iterdir()))
        return "built"

    assert once_per_run(Factory(tmp_path), "thing", build) == "built"  # type: ignore[arg-type]
    assert left == [[]]
    assert once_per_run(Factory(tmp_path), "thing", build) == "built"  # type: ignore[arg-type]
    assert len(left) == 1  # read, not built again
