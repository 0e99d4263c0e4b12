"""The closing line of a decorated run and ``fingerprint diff RUN`` with one argument (issue 13:
"to diff a run, a new user must look its id up in the UI")."""

from __future__ import annotations

import contextlib
import io
import json
import re

from mlflow_fingerprint.cli.main import main as cli
from support.records import new_store

STEPS = ["--epochs", "1", "--max-steps", "5"]


def train(digits, uri: str, name: str, seed: str, capsys) -> tuple[str, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        args = ["--seed", seed, *STEPS, "--experiment", "announce", "--run-name", name]
        digits.main([*args, "--tracking-uri", uri])
    return json.loads(out.getvalue().strip().splitlines()[-1])["run_id"], capsys.readouterr().err


def test_each_run_prints_the_command_that_diffs_it_with_the_previous_one(
    digits, tmp_path, mlflow_db_template, monkeypatch, capsys
):
    import mlflow

    uri = new_store(tmp_path, mlflow_db_template)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(tmp_path / "spool"))
    monkeypatch.delenv("MLFLOW_FINGERPRINT_QUIET", raising=False)
    try:
        first, _ = train(digits, uri, "first", "0", capsys)
        second, err = train(digits, uri, "second", "1", capsys)
        monkeypatch.setenv("MLFLOW_FINGERPRINT_QUIET", "1")
        _, quiet_err = train(digits, uri, "third", "1", capsys)
    finally:
        mlflow.set_tracking_uri(None)
    (line,) = [ln for ln in err.splitlines() if ln.startswith("mlflow-fingerprint: run")]
    assert f"run {second} (experiment announce)" in line
    command = re.search(r"fingerprint diff (.*)$", line).group(1).split()
    assert command[:3] == [second, "--tracking-uri", uri]
    assert "mlflow-fingerprint: run" not in quiet_err

    code = cli(["diff", *command, "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert (report["a"]["run_id"], report["b"]["run_id"]) == (first, second)
    top = report["differences"][0]  # one change: the --seed option, with the seeds it set
    assert top["field"] == "program.options.seed"
    assert "seeds.requested" in [c["field"] for c in top["consequences"]]


def test_the_first_run_of_an_experiment_has_nothing_to_compare_with(
    digits, tmp_path, mlflow_db_template, monkeypatch, capsys
):
    import mlflow

    uri = new_store(tmp_path, mlflow_db_template)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(tmp_path / "spool"))
    try:
        only, _ = train(digits, uri, "only", "0", capsys)
    finally:
        mlflow.set_tracking_uri(None)
    code = cli(["diff", only, "--tracking-uri", uri])
    err = capsys.readouterr().err
    assert code == 2
    assert "no earlier finished run" in err
    assert "Traceback" not in err
