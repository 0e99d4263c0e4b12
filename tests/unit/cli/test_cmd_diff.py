"""``fingerprint diff`` (``cli/cmd_diff.py``): its exit code says same or different, and
``--log-to`` keeps the report in the run named, as an artifact, after saying where."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from mlflow_fingerprint.cli import cmd_diff
from mlflow_fingerprint.cli.main import build_parser
from support.records import cpu_record, log_run, seeded, write


def test_the_same_record_is_exit_0_and_another_seed_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(tmp_path, "a", seeded(cpu_record(), 0))
    b = write(tmp_path, "b", seeded(cpu_record(), 1))
    assert cmd_diff.run(build_parser().parse_args(["diff", a, a])) == 0
    capsys.readouterr()
    assert cmd_diff.run(build_parser().parse_args(["diff", a, b])) == 1
    assert "seeds.requested" in capsys.readouterr().out


def test_log_to_stores_the_report_in_the_run(
    sqlite_tracking_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = log_run(sqlite_tracking_uri, "pairs", "a", seeded(cpu_record(), 0), {"loss": [1.0, 0.5]})
    b = log_run(sqlite_tracking_uri, "pairs", "b", seeded(cpu_record(), 1), {"loss": [1.0, 0.6]})
    args = build_parser().parse_args(["diff", a, b, "--format", "markdown", "--log-to", b])
    assert cmd_diff.run(args) == 1
    out, err = capsys.readouterr()
    said = " ".join(err.split())  # the line is fitted to the terminal's width
    assert said.startswith(f"fingerprint: report stored in run {b} as ")
    path = said.rsplit(" as ", 1)[1]
    assert path.endswith(".md")
    stored = Path(MlflowClient().download_artifacts(b, path, str(tmp_path))).read_text()
    assert stored.rstrip("\n") == out.rstrip("\n")  # the report printed is the one kept
