"""The MLflow UI as a user meets it after ``make demo``: a real ``mlflow server`` over a sqlite
store holding two fingerprinted runs and the diff report logged into the second, read by a real
headless Chromium (Debian's chromium; ``.ci/run`` installs it where missing).

It checks what a person sees: from MLflow's experiment list, with **Model training** picked in the
sidebar as the README says, and from the address the product prints, the experiment opens on the
training runs table (not MLflow 3's GenAI overview, which a click in a new browser opens), run B's
page shows the ``fingerprint.*`` tags, the report's artifact page shows the verdict, and each
run's description, written from the other run renamed to hold Markdown links, images, HTML and
``javascript:`` URLs, shows them as text (issue 45).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from mlflow import MlflowClient

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main
from support.browser import chromium, experiment_url, open_page, run_url
from support.mlflow_team import MlflowServer

pytestmark = pytest.mark.usefixtures("restore_environ")

EXPERIMENT = "fingerprint-ui"
# Run names a description quotes, each what a Markdown renderer would make live markup of; the
# describer cuts a name at 60 characters, so each fits.
HOSTILE_NAMES = {
    "A": "[click](http://evil.example/) <img src=x onerror=alert(1)>",
    "B": "![px](http://evil.example/p.png) [js](javascript:alert(1))",
}
# What the page must not hold after rendering a description: a link or image leading anywhere
# the names said, an element the names wrote.
LIVE_MARKUP = (
    'document.querySelectorAll(\'a[href*="evil.example"], a[href^="javascript:"], '
    'img[src*="evil.example"], img[src="x"], img[onerror]\').length'
)


def needs_chromium() -> None:
    """Skip, saying why, where no chromium is installed; under CI (which installs it) fail."""
    if chromium() is not None:
        return
    reason = "no chromium on PATH: apt-get install chromium (bash .ci/run does)"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def train_pair(digits: ModuleType) -> tuple[str, str]:
    """Two short digits runs (A seeded 0, B seeded 1) through the decorator; their run ids."""
    ids = []
    for name, seed in (("A", 0), ("B", 1)):

        @mfp.fingerprinted(experiment=EXPERIMENT, run_name=name, seed=seed)
        def train(loader: Any, val_loader: Any) -> dict[str, float]:
            return digits.train(loader, epochs=1, val_loader=val_loader, max_steps=5)

        train(*digits.make_loaders(batch_size=64))
        import mlflow

        ids.append(mlflow.last_active_run().info.run_id)
    return ids[0], ids[1]


def test_the_ui_shows_training_runs_fingerprint_tags_and_the_diff_report(
    sqlite_tracking_uri: str, digits: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    needs_chromium()
    a, b = train_pair(digits)
    code = main(
        ["diff", a, b, "--format", "html", "--log-to", b, "--output", str(tmp_path / "r.html")]
    )
    assert code == 1  # another seed: the runs differ
    report = f"{layout.REPORT_DIR}/{a[:12]}_vs_{b[:12]}.html"
    assert report in capsys.readouterr().err
    client = MlflowClient(sqlite_tracking_uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment.tags[layout.MLFLOW_EXPERIMENT_KIND] == layout.EXPERIMENT_KIND_TRAINING
    tags = client.get_run(b).data.tags

    server = MlflowServer(sqlite_tracking_uri, str(tmp_path / "served"), env={})
    server.start()
    try:
        with open_page() as page:
            # As a user meets it: the experiment list, then a click on the experiment's name.
            # MLflow 3.17 opens it in the view of the sidebar's GenAI | Model training switch
            # (GenAI in a new browser), whatever the experiment's kind tag says; the README says
            # to pick Model training, which the browser then remembers.
            page.goto(f"{server.url}/#/experiments")
            page.wait_for(EXPERIMENT, "Model training")
            page.click(EXPERIMENT, within="main")
            page.wait_for("Token Usage")
            assert "workflowType=genai" in page.location()
            page.goto(f"{server.url}/#/experiments")
            page.wait_for(EXPERIMENT, "Model training")
            page.click("Model training")
            page.wait_for("Model registry")  # the sidebar of the training view, drawn again
            page.click(EXPERIMENT, within="main")
            table = page.wait_for("2 matching runs", "Run Name")
            assert "Token Usage" not in table
            assert f"/experiments/{experiment.experiment_id}/runs" in page.location()
            assert {"A", "B"} <= set(table.split("\n"))

            # The address the product prints opens the runs table in any browser.
            page.evaluate("localStorage.clear()")
            page.goto(experiment_url(server.url, experiment.experiment_id))
            table = page.wait_for("2 matching runs", "Run Name")
            assert "Token Usage" not in table, "the GenAI overview, not the runs table"
            assert {"A", "B"} <= set(table.split("\n"))

            page.goto(run_url(server.url, experiment.experiment_id, b))
            run_page = page.wait_for(layout.TAG_HASH, layout.TAG_GPU)
            for key in (layout.TAG_HASH, layout.TAG_GPU, layout.TAG_HASH_ENV):
                assert f"{key}\n: {tags[key]}" in run_page, key  # the UI's "key: value" list
            lines = run_page.split("\n")
            assert layout.TAG_LEGACY_SPOOL_ID not in lines  # bookkeeping, out of the namespace
            assert layout.INTERNAL_SPOOL_ID in lines

            page.goto(run_url(server.url, experiment.experiment_id, b, f"artifacts/{report}"))
            shown = page.wait_for("Verdict: explained", timeout_s=90)
            assert "data.loaders" in shown or "seeds.requested" in shown

            # Each run described from the other, renamed to hold live markup: shown as text.
            described_with_hostile_names(client, a, b)
            for run, other in ((b, "A"), (a, "B")):
                page.goto("about:blank")  # a fresh load: the UI keeps the runs it read
                page.goto(run_url(server.url, experiment.experiment_id, run))
                text = page.wait_for("mlflow-fingerprint: vs run", settle_s=2)
                page.screenshot(tmp_path / f"description-{other}.png")
                assert HOSTILE_NAMES[other] in text, text  # every character, as text
                assert page.evaluate(LIVE_MARKUP) == 0
            assert (tmp_path / "description-A.png").stat().st_size > 10_000  # a drawn page
    finally:
        server.close()


def described_with_hostile_names(client: MlflowClient, a: str, b: str) -> None:
    """Runs A and B renamed to ``HOSTILE_NAMES``, and each given the description the run's
    describer writes (``describe_run``, as after a training), from a diff with the other."""
    from mlflow_fingerprint.cli.describe_run import describe

    client.update_run(a, name=HOSTILE_NAMES["A"])
    client.update_run(b, name=HOSTILE_NAMES["B"])
    describe(b, a)
    describe(a, b)
    for run, other in ((b, "A"), (a, "B")):
        line = client.get_run(run).data.tags[layout.MLFLOW_DESCRIPTION]
        assert line.startswith("mlflow-fingerprint: vs run "), line
        assert HOSTILE_NAMES[other] not in line  # escaped as stored
