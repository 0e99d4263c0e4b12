"""Every command that talks to a tracking server ends in a bounded time against one that takes
connections and never answers: ``sync`` within its ``--timeout`` (the spools kept), ``show`` and
``diff`` within a few request timeouts, saying "timed out" rather than "could not connect"."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_sync import spooled_run

from mlflow_fingerprint.tracking.spool import list_spools
from support.paths import ROOT
from support.silent_server import SilentServer
from support.stored import cli


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer().start()
    yield server
    server.stop()


def cli_env(spool_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_HTTP_REQUEST")}
    env["PYTHONPATH"] = str(ROOT / "src")
    env["MLFLOW_FINGERPRINT_SPOOL"] = str(spool_dir)
    env.update(extra)
    return env


def test_sync_against_a_silent_server_ends_within_its_time_limit(
    silent: SilentServer, spool_dir: Path
) -> None:
    for name in ("one", "two"):
        spooled_run(spool_dir, silent.url, steps=3, name=name)
    started = time.monotonic()
    done = cli("sync", "--timeout", "4", env=cli_env(spool_dir), timeout=120)
    took = time.monotonic() - started
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert took < 4 + 15  # the limit, plus the interpreter's start and the last line
    assert "time limit of 4 s" in err
    assert "Traceback" not in err
    assert len(list_spools(spool_dir)) == 2  # nothing given up


@pytest.mark.parametrize("command", ["show", "diff"])
def test_show_and_diff_give_up_on_a_silent_server_and_say_it_timed_out(
    silent: SilentServer, spool_dir: Path, command: str
) -> None:
    runs = ["0" * 32] if command == "show" else ["0" * 32, "1" * 32]
    env = cli_env(spool_dir, MLFLOW_FINGERPRINT_REQUEST_TIMEOUT="2")
    started = time.monotonic()
    done = cli(command, *runs, "--tracking-uri", silent.url, env=env, timeout=120)
    took = time.monotonic() - started
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "timed out" in err
    assert "could not connect" not in err
    assert took < 2 * 2 + 1 + 15, took  # two tries of 2 s, the back-off, the interpreter
