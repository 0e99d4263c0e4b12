"""``fingerprint find`` (``cli/cmd_find.py``): the runs whose hash matches, one row each."""

from __future__ import annotations

import json

import pytest

from mlflow_fingerprint.cli import cmd_find
from mlflow_fingerprint.cli.main import build_parser
from support.records import cpu_record, log_run, seeded


def test_the_runs_with_the_same_record_are_listed_and_no_other(
    sqlite_tracking_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    same = seeded(cpu_record(), 0)
    a = log_run(sqlite_tracking_uri, "find", "a", same, {"loss": [1.0]})
    twin = log_run(sqlite_tracking_uri, "find", "twin", same, {"loss": [1.0]})
    other = log_run(sqlite_tracking_uri, "find", "other", seeded(cpu_record(), 1), {"loss": [1.0]})
    assert cmd_find.run(build_parser().parse_args(["find", a])) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 run(s) with ")
    assert twin in out
    assert other not in out
    args = build_parser().parse_args(["find", a, "--format", "json"])
    assert cmd_find.run(args) == 0
    found = json.loads(capsys.readouterr().out)
    assert [m["run_id"] for m in found["matches"]] == [twin]
