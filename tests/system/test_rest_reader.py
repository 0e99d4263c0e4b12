"""The read-only commands on a real ``mlflow server`` read it through MLflow's REST API in a fresh
interpreter (``tracking/rest.py``), and answer exactly as they do through ``MlflowClient``: the
same output and exit code for every command and format, the same one line for every fault. The
interpreter that reads through the REST API never imports MLflow (nor torch)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.cli.main import main
from mlflow_fingerprint.errors import StoreError
from mlflow_fingerprint.tracking import rest, store
from support.auth_proxy import AuthProxy
from support.mlflow_team import MlflowServer
from support.tracking import active_tracking_uri

EXPERIMENT = "rest-reader"

# Runs the commands given as JSON in argv[1] in this fresh interpreter, one after another; prints
# each one's exit code, stdout and stderr, then the heavy modules it imported.
COMMANDS = """
import contextlib, io, json, sys
from mlflow_fingerprint.cli.main import main
answers = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    answers.append([code, out.getvalue(), err.getvalue()])
heavy = sorted(m for m in ("mlflow", "torch", "sqlalchemy") if m in sys.modules)
print(json.dumps({"answers": answers, "heavy": heavy}))
"""


def fresh(commands: list[list[str]], env: dict[str, str] | None = None) -> dict[str, Any]:
    """``commands`` answered by the CLI in one fresh interpreter (the REST path)."""
    import os

    done = subprocess.run(
        [sys.executable, "-c", COMMANDS, json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def in_process(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[Any]:
    """The same command here, where MLflow is imported: read through ``MlflowClient``."""
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return [code, out, err]


@pytest.fixture(scope="module")
def runs(mlflow_server_process: MlflowServer) -> list[str]:
    """Three fingerprinted runs (no training) on the session's server: ``explain`` needs three.
    Each logs a curve (``loss``) and a summary metric (``val_loss``, once, at step 0): the one
    ``explain`` picks when no metric is named, through either reader."""
    if not mlflow_server_process.running:
        mlflow_server_process.start()
    ids = []
    with pytest.MonkeyPatch.context() as mp, active_tracking_uri(mlflow_server_process.url, mp):
        for i in range(3):
            with mfp.fingerprinted(experiment=EXPERIMENT, flush_timeout_s=30) as run:
                for step in range(12):
                    mfp.log_metrics({"loss": 1.0 / (step + 1 + i % 2)}, step=step)
                mfp.log_metrics({"val_loss": 0.5 + 0.1 * i}, step=0)
            ids.append(str(run.run_id))
    return ids


def test_every_read_command_answers_as_mlflow_client_does_without_importing_mlflow(
    mlflow_server: str, runs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, c = runs
    commands = [
        [*command, *fmt]
        for command in (
            ["diff", a, b],
            ["diff", c],  # with the run before it, found by a search
            ["show", a],
            ["show", runs[1], "-e", EXPERIMENT],
            ["find", a],
            ["audit", a],
            ["explain", EXPERIMENT, "--metric", "loss"],
            ["explain", EXPERIMENT],  # the metric it picks: the summary one, by its step
        )
        for fmt in ([], ["--format", "json"])
    ]
    through_rest = fresh(commands)
    assert through_rest["heavy"] == []
    for argv, answer in zip(commands, through_rest["answers"], strict=True):
        assert answer == in_process(capsys, argv), argv
    explained = json.loads(through_rest["answers"][-1][1])
    assert explained["metric"] == "val_loss"
    diffed = json.loads(through_rest["answers"][1][1])
    assert diffed["metrics"][0]["name"] == "loss"  # the histories were read, paged
    assert diffed["metrics"][0]["first_divergence_step"] == 0


def test_faults_are_the_same_one_line(
    mlflow_server: str,
    runs: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.setenv(name, "")  # restored after the test: the URI's go there
    commands = [
        ["diff", "0123456789abcdef0123456789abcdef", runs[0]],
        ["show", "x", "-e", "no-such-experiment"],
        ["find", runs[0], "-e", "no-such-experiment"],
        ["show", runs[0], "--tracking-uri", "http://user:pw-Jq4-in-no-line@127.0.0.1:1"],
        # a password with a character a URL reserves, written as it is (URL parsers end the
        # host at it, and their messages showed the rest): refused, and shown in no line
        ["show", runs[0], "--tracking-uri", "http://user:pwQ7/Jq4-in-no-line@127.0.0.1:1"],
        ["show", runs[0], "--tracking-uri", "http://user:pwQ7#Jq4-in-no-line@127.0.0.1:1"],
        ["show", runs[0], "--tracking-uri", "http://user:77/Jq4-in-no-line@127.0.0.1:1"],
    ]
    through_rest = fresh(commands)
    assert through_rest["heavy"] == []
    for argv, answer in zip(commands, through_rest["answers"], strict=True):
        code, out, err = answer
        assert code == 2, answer
        assert out == "", answer
        assert err.count("\n") == 1, answer
        assert "Traceback" not in err
        for part in ("Jq4", "pwQ7", ":77"):
            assert part not in err, answer
        assert answer == in_process(capsys, argv), argv
    for _, _, err in through_rest["answers"][4:]:
        assert "percent-encode it" in err, err


def test_credentials_reach_the_server_as_mlflow_client_sends_them(
    mlflow_server: str,
    runs: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Behind an authenticating gateway: none (one line), a password in the URI, a token."""
    gateway = AuthProxy(mlflow_server, "trainer", "pw-Rt5-in-no-line", "tok-Mw8-in-no-line")
    gateway.start()
    try:
        for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
            monkeypatch.setenv(name, "")  # restored after the test: the URI's go there
        show = ["show", runs[0], "--format", "json", "--tracking-uri"]
        commands = [  # in this order: the URI's credentials stay for the commands after it
            [*show, gateway.url(with_credentials=False)],
            [*show, gateway.url()],
        ]
        through_rest = fresh(commands)
        bearer = fresh([commands[0]], {"MLFLOW_TRACKING_TOKEN": "tok-Mw8-in-no-line"})
        assert through_rest["heavy"] == bearer["heavy"] == []
        (refused, _, refused_err), (shown, _, _) = through_rest["answers"]
        assert refused == 2
        assert "401" in refused_err
        assert shown == 0
        assert bearer["answers"][0][0] == 0
        assert gateway.refused >= 1
        for argv, answer in zip(commands, through_rest["answers"], strict=True):
            assert "pw-Rt5" not in "".join(answer[1:])
            assert answer == in_process(capsys, argv), argv
    finally:
        gateway.stop()


def test_reader_returns_what_mlflow_client_returns(mlflow_server: str, runs: list[str]) -> None:
    from mlflow import MlflowClient

    reader, client = rest.Reader(mlflow_server), MlflowClient(mlflow_server)
    ours, theirs = reader.get_run(runs[0]), client.get_run(runs[0])
    for name in ("run_id", "experiment_id", "run_name", "status", "start_time", "artifact_uri"):
        assert getattr(ours.info, name) == getattr(theirs.info, name), name
    assert ours.data.tags == theirs.data.tags
    assert ours.data.params == theirs.data.params
    assert ours.data.metrics == theirs.data.metrics
    steps = {m.key: (m.step, m.timestamp) for m in theirs.data._metric_objs}
    assert {m.key: (m.step, m.timestamp) for m in ours.data._metric_objs} == steps
    assert steps["loss"][0] == 11
    assert steps["val_loss"][0] == 0
    experiment = reader.get_experiment_by_name(EXPERIMENT)
    assert experiment is not None
    assert reader.get_experiment_by_name("no-such-experiment") is None
    ids = [experiment.experiment_id]
    page = reader.search_runs(ids, "", max_results=2, order_by=["attributes.start_time ASC"])
    assert [r.info.run_id for r in page] == runs[:2]
    assert page.token
    rest_page = reader.search_runs(
        ids, "", max_results=2, order_by=["attributes.start_time ASC"], page_token=page.token
    )
    assert [r.info.run_id for r in rest_page] == runs[2:]
    assert rest_page.token is None
    listed = [(f.path, f.is_dir) for f in reader.list_artifacts(runs[0], "fingerprint")]
    assert listed == [(f.path, f.is_dir) for f in client.list_artifacts(runs[0], "fingerprint")]
    history = reader.metric_history_page(runs[0], "loss", 5, None)
    assert [m.step for m in history] == [0, 1, 2, 3, 4]
    assert history.token
    with pytest.raises(StoreError) as missing:
        reader.get_run("0123456789abcdef0123456789abcdef")
    assert store.is_not_found(missing.value)


def test_an_artifact_path_cannot_leave_the_runs_artifacts(mlflow_server: str, runs: list[str]):
    reader = rest.Reader(mlflow_server)
    with pytest.raises(StoreError, match="leads outside"):
        reader.download_artifacts(runs[0], "../../other/artifacts/fingerprint.json", "/tmp")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MLFLOW_TRACKING_AUTH", "my_auth_plugin"),
        ("MLFLOW_WORKSPACE", "team-a"),
        ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "many"),  # MLflow's refusal, in its words
    ],
)
def test_settings_only_mlflow_applies_leave_the_reading_to_it(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert rest.serves("http://127.0.0.1:5000")
    assert not rest.serves("sqlite:///x.db")
    monkeypatch.setenv(variable, value)
    assert not rest.serves("http://127.0.0.1:5000")
    monkeypatch.delenv(variable)
    monkeypatch.setenv("HOME", str(tmp_path))  # MLflow's credentials file
    (tmp_path / ".mlflow").mkdir()
    (tmp_path / ".mlflow" / "credentials").write_text("[mlflow]\n")
    assert not rest.serves("http://127.0.0.1:5000")
