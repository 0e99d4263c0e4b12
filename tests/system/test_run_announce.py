"""The end of a decorated run: the closing line's command works at that moment (issue 13: "to
diff a run, a new user must look its id up in the UI"; issue 29: on the first run of an
experiment it was a ``diff`` that failed), ``fingerprint diff RUN`` picks the same run, and the
run's MLflow description says how it differs from that run."""

from __future__ import annotations

import contextlib
import io
import json
import re
import time

import psutil

from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main as cli
from mlflow_fingerprint.run import announce
from support.records import new_store

STEPS = ["--epochs", "1", "--max-steps", "5"]


def train(digits, uri: str, name: str, seed: str, capsys) -> tuple[str, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        args = ["--seed", seed, *STEPS, "--experiment", "announce", "--run-name", name]
        digits.main([*args, "--tracking-uri", uri])
    return json.loads(out.getvalue().strip().splitlines()[-1])["run_id"], capsys.readouterr().err


def closing_command(err: str, run_id: str) -> list[str]:
    lines = err.splitlines()
    (at,) = [i for i, ln in enumerate(lines) if ln.startswith("mlflow-fingerprint: run")]
    assert f"run {run_id} (experiment announce)" in lines[at]
    # the closing lines fit a terminal, the command on lines of its own (continued by a
    # backslash, as a shell reads them back)
    start = next(i for i in range(at, len(lines)) if lines[i].startswith("  fingerprint "))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith(" \\"))
    assert max(len(line) for line in lines[at : end + 1]) <= 100, lines
    command = " ".join(line.removesuffix(" \\").strip() for line in lines[start : end + 1])
    return re.fullmatch(r"fingerprint (.*)", command).group(1).split()


def describers_of(run_id: str) -> list[psutil.Process]:
    found = []
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if run_id in child.cmdline():
                found.append(child)
    return found


def description(uri: str, run_id: str, wait_s: float = 0.0) -> str | None:
    from mlflow import MlflowClient

    deadline = time.monotonic() + wait_s
    while True:
        text = MlflowClient(uri).get_run(run_id).data.tags.get(layout.MLFLOW_DESCRIPTION)
        if text is not None or time.monotonic() > deadline:
            return text
        time.sleep(0.5)


def test_each_run_prints_a_command_that_works_and_is_described(
    digits, tmp_path, mlflow_db_template, monkeypatch, capsys
):
    import mlflow

    uri = new_store(tmp_path, mlflow_db_template)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(tmp_path / "spool"))
    monkeypatch.delenv("MLFLOW_FINGERPRINT_QUIET", raising=False)
    monkeypatch.setenv("MLFLOW_FINGERPRINT_DESCRIBE", "1")
    # Here the lookup of the run to compare with gets all the time a loaded machine needs (a
    # CI's two cores shared by three workers ran it past the 0.5 s a run's end waits, and the
    # line fell back to `show`); that fallback is the unit test's (tests/unit/run/).
    monkeypatch.setattr(announce, "WAIT_S", 60.0)
    try:
        first, first_err = train(digits, uri, "first", "0", capsys)
        second, second_err = train(digits, uri, "second", "1", capsys)
        third, third_err = train(digits, uri, "third", "0", capsys)
        monkeypatch.setenv("MLFLOW_FINGERPRINT_QUIET", "1")
        monkeypatch.setenv("MLFLOW_FINGERPRINT_DESCRIBE", "0")
        fourth, quiet_err = train(digits, uri, "fourth", "1", capsys)
        assert describers_of(fourth) == []  # off: no process started
    finally:
        mlflow.set_tracking_uri(None)
    assert "mlflow-fingerprint: run" not in quiet_err

    # the first run of an experiment: nothing to diff it with, so the line says `show`
    command = closing_command(first_err, first)
    assert command == ["show", first, "--tracking-uri", uri]
    assert cli(command) == 0
    assert f"run first ({first[:8]})" in capsys.readouterr().out
    code = cli(["diff", first, "--tracking-uri", uri])
    assert code == 2
    assert f"fingerprint show {first}" in capsys.readouterr().err

    # later runs: diff with the previous finished run of the same recipe, else the latest
    command = closing_command(second_err, second)
    assert command == ["diff", first, second, "--tracking-uri", uri]
    assert cli([*command, "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    top = report["differences"][0]  # one change: the --seed option, with the seeds it set
    assert top["field"] == "program.options.seed"
    assert "seeds.requested" in [c["field"] for c in top["consequences"]]
    # third is seeded as first was: the same recipe, although second ran in between
    assert closing_command(third_err, third)[:3] == ["diff", first, third]
    assert cli(["diff", third, "--tracking-uri", uri, "--format", "json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["a"]["run_id"] == first

    # the descriptions, written by a process of their own after each run
    described = description(uri, second, wait_s=90)
    assert described is not None
    assert described.startswith("mlflow-fingerprint: vs run first (")
    assert "; most likely program.options.seed (0 -> 1)" in described
    assert "\n" not in described
    assert description(uri, third, wait_s=90).startswith("mlflow-fingerprint: vs run first (")
    assert description(uri, first) is None  # nothing before it
    assert description(uri, fourth) is None
