"""``fingerprint rerun`` and ``mfp.rerun`` on real trainings (issues 15 and 23, 46): a rerun
reproduces its run, says what it set and stores no secret, is named for what it is (in the
MLflow UI too), and ``--dry-run`` runs nothing. The runs and the reruns are ``bisect_runs.py``'s,
built once for this folder."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from bisect_runs import TOKEN, Project, cli_here

from mlflow_fingerprint import layout

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_reruns_are_named_for_what_they_are_and_run_names_still_work(
    project: Project, jobs: dict[str, Any]
) -> None:
    """After a bisect of the demo's pair, each rerun is ``A·rerun N (what it set)``, no run but
    A is named A, and ``diff A B -e EXPERIMENT`` finds the two runs and reports (exit 1)."""
    report = jobs["bisect:w2"].json()
    client = project.client()
    names = [client.get_run(r["run_id"]).info.run_name for r in report["reruns"]]
    assert names[0] == "A·rerun 1 (as recorded)", names
    assert all(re.fullmatch(r"A·rerun \d+ \(.+\)", n) for n in names), names
    assert any("workers=2" in n for n in names), names
    done = project.cli("diff", "A", "B", "-e", "bisect")
    assert done.code == 1, done.err
    assert re.search(r"^A: A \([0-9a-f]{8}\)    B: B \([0-9a-f]{8}\)$", done.out, re.M), done.out


def test_rerun_reproduces_a_run_that_returned_its_final_metrics(
    project: Project, jobs: dict[str, Any]
) -> None:
    import mlflow

    done = jobs["rerun:until"]
    result = done.json()
    assert done.code == 0, done.err[-3000:]
    assert result["reproduced"] is True
    assert result["stopped_at"] == 3
    assert result["summary_differs"] == []
    tags = mlflow.MlflowClient(project.uri).get_run(result["run_id"]).data.tags
    assert tags[layout.TAG_RERUN_OF] == project.ids["a"]
    assert tags[layout.TAG_STOPPED_AT] == "3"


def test_rerun_with_set_values_says_what_it_set_and_stores_no_secret(
    project: Project, jobs: dict[str, Any]
) -> None:
    import mlflow

    done = jobs["rerun:set"]
    result = done.json()
    assert done.code == 1, done.err[-3000:]
    assert result["reproduced"] is False
    expected = {
        "seeds.requested": 5,
        "program.options.lr": "0.3",
        "program.options.api-key": "***",
    }
    assert result["overrides"] == expected
    tags = mlflow.MlflowClient(project.uri).get_run(result["run_id"]).data.tags
    assert json.loads(tags[layout.TAG_OVERRIDES]) == expected
    assert TOKEN not in done.out + done.err
    stored = [
        path
        for path in project.base.rglob("*")
        if path.is_file() and not path.is_symlink() and TOKEN.encode() in path.read_bytes()
    ]
    assert stored == []  # the store, its artifacts, the spool


def test_a_run_opened_with_mlflow_start_run_can_be_rerun(jobs: dict[str, Any]) -> None:
    """The run context provider tags it as a rerun; it runs to its end (no stop: the decorator
    is not there to take it) and its diff against the run follows."""
    done = jobs["rerun:plain"]
    assert done.code == 0, done.err[-3000:]
    assert "reproduced: every metric equal, bit for bit, over the whole run" in done.out
    assert "verdict: same_results" in done.out


def test_dry_run_prints_each_rerun_and_runs_nothing(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project.repo)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", project.uri)
    client = project.client()
    experiment = client.get_experiment_by_name("bisect").experiment_id
    before = len(client.search_runs([experiment]))
    code, out, err = cli_here(
        monkeypatch,
        capsys,
        *("rerun", project.ids["a"], "--set", f"program.options.api-key={TOKEN}"),
        *("--dry-run", "--format", "json"),
    )
    assert code == 0, err
    (launch,) = json.loads(out)["launches"]
    assert launch["commit"] == project.commits["first"]
    assert launch["entry"]["path"] == "train.py"
    assert launch["argv"][:3] == ["train.py", "--seed", "0"]
    assert "***" in launch["argv"]
    assert launch["cwd"] == "."
    assert launch["env"]["MLFLOW_FINGERPRINT_RERUN_OF"] == project.ids["a"]
    assert launch["overrides"] == {"program.options.api-key": "***"}
    assert TOKEN not in out + err
    code, out, err = cli_here(
        monkeypatch, capsys, "bisect", project.ids["a"], project.ids["seed_env"], "--dry-run"
    )
    assert code == 0, err
    assert "program.options.seed: 0 -> 1 (option)" in out
    assert "torch.threads.env.OMP_NUM_THREADS: 1 -> 2 (env)" in out
    assert "OMP_NUM_THREADS=2" in out  # the largest rerun's environment
    settable, cannot = out.split("cannot be set here:")
    assert "PYTHONPATH" not in settable
    assert "torch.threads.env.PYTHONPATH" in cannot
    assert len(client.search_runs([experiment])) == before
    assert project.leftovers() == []


def test_the_ui_lists_each_rerun_by_what_it_set(
    project: Project, jobs: dict[str, Any], tmp_path: Path
) -> None:
    """Issue 46, in the MLflow UI after the real bisect of the demo's pair: the runs table,
    searched for the names starting with A, shows A once and every rerun as ``A·rerun N (...)``
    (before, five runs called A); each rerun's page is titled with its name. Headless Chromium,
    with a screenshot of the table."""
    from support.browser import chromium, open_page, run_url, show_columns
    from support.mlflow_team import MlflowServer

    if chromium() is None:
        reason = "no chromium on PATH: apt-get install chromium (bash .ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    client = project.client()
    reruns = [r["run_id"] for r in jobs["bisect:w2"].json()["reruns"]]
    names = [client.get_run(r).info.run_name for r in reruns]
    experiment = client.get_experiment_by_name("bisect").experiment_id
    server = MlflowServer(project.uri, str(tmp_path / "served"), env={})
    server.start()
    try:
        with open_page() as page:
            show_columns(page, server.url, experiment, [], search="attributes.run_name LIKE 'A%'")
            page.goto(f"{server.url}/#/experiments/{experiment}/runs?workflowType=machine_learning")
            table = page.wait_for("Run Name", names[0], settle_s=2)
            page.screenshot(tmp_path / "reruns.png")
            shown = table.split("\n")
            assert shown.count("A") == 1, table  # only A is named A
            assert set(names) <= set(shown), (names, table)
            assert (tmp_path / "reruns.png").stat().st_size > 10_000  # a drawn page
            for run, name in zip(reruns[:2], names[:2], strict=True):
                page.goto("about:blank")
                page.goto(run_url(server.url, experiment, run))
                assert name in page.wait_for(name).split("\n")
    finally:
        server.close()
