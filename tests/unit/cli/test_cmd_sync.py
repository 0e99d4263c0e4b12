"""``fingerprint sync`` (``cli/cmd_sync.py``) before it reaches a store: a spool folder with
nothing in it, one that is not there, and which tracking URI a spooled run goes to. Replays
against real stores and servers are tests/system/test_sync*.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint.cli import cmd_sync
from mlflow_fingerprint.cli.main import EXIT_BAD_INPUT, build_parser, main


def test_an_empty_spool_folder_is_nothing_to_sync(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(["sync", "--spool-dir", str(tmp_path)])
    assert cmd_sync.run(args) == 0
    assert capsys.readouterr().out == f"nothing to sync in {tmp_path}\n"


def test_a_spool_folder_that_is_not_there_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sync", "--spool-dir", str(tmp_path / "gone")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err == f"fingerprint sync: error: spool directory {tmp_path / 'gone'} does not exist\n"


def test_the_command_line_s_uri_wins_over_the_run_s_own() -> None:
    assert cmd_sync._uri_for("sqlite:///run.db", "http://override:5000") == "http://override:5000"
    assert cmd_sync._uri_for("sqlite:///run.db", None) == "sqlite:///run.db"
