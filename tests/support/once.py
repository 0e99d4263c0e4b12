"""What a whole pytest run builds once, its xdist workers included.

A session fixture is built once per xdist worker: two workers train the same runs or migrate the
same database twice. ``once_per_run`` builds a thing in the folder the workers' temporary folders
share, under a lock there: the first worker to ask builds it and writes what it is (JSON); the
others wait for that and read it. The thing must be read-only to the tests that share it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def shared_folder(factory: pytest.TempPathFactory) -> Path:
    """The run's temporary folder: the workers' common parent under xdist."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]) -> Any:
    """``build(folder)``'s JSON-able result, built by one worker of the run. A folder without a
    result (its builder failed) is built again from nothing."""
    base = shared_folder(factory)
    folder, result = base / name, base / f"{name}.json"
    with open(base / f"{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if result.exists():
            return json.loads(result.read_text())
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        built = build(folder)
        written = result.with_suffix(".tmp")
        written.write_text(json.dumps(built))
        written.replace(result)
        return built
