"""``fingerprint explain --log-to`` (``cli/cmd_explain.py``): the report printed is kept in the
run named, as an artifact, and stderr says where; the analysis is tests/unit/explain's."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from mlflow_fingerprint.cli import cmd_explain
from mlflow_fingerprint.cli.main import build_parser
from support.records import cpu_record, edit, log_run, seeded


def test_log_to_keeps_the_report_in_the_run(
    sqlite_tracking_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = []
    for lr, mean in ((0.1, 0.5), (0.01, 0.9)):
        for s, noise in enumerate((0.0, 0.02, -0.01)):
            record = seeded(edit(cpu_record(), **{"program.call.lr": lr}), s)
            runs.append(
                log_run(
                    sqlite_tracking_uri,
                    "sweep",
                    f"{lr}-{s}",
                    record,
                    {"val_loss": [mean + noise]},
                    params={"lr": lr},
                )
            )
    args = build_parser().parse_args(["explain", "sweep", "--quiet", "--log-to", runs[0]])
    assert cmd_explain.run(args) == 0
    out, err = capsys.readouterr()
    said = " ".join(err.split())  # the line is fitted to the terminal's width
    assert said.startswith(f"fingerprint: report stored in run {runs[0]} as ")
    path = said.rsplit(" as ", 1)[1]
    stored = Path(MlflowClient().download_artifacts(runs[0], path, str(tmp_path))).read_text()
    assert stored.rstrip("\n") == out.rstrip("\n")
    assert "lr" in stored
