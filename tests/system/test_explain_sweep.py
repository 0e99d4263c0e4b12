"""``explain`` on a real CPU sweep (``support/sweep.py``, trained once per session): the two
options that change the result come first, the seeds are the noise floor, the thread count is
ruled out, and the pair of options that always changed together is one block."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint import layout
from mlflow_fingerprint.cli.main import main
from mlflow_fingerprint.present.explain import render
from mlflow_fingerprint.present.explain.text import HEADER
from support.paths import ROOT
from support.sweep import EXPERIMENT

pytestmark = pytest.mark.usefixtures("restore_environ")

PAIR = ("program.call.dropout", "program.call.weight_decay")
CONTRACT = {
    "metric",
    "at",
    "runs",
    "noise",
    "factors",
    "ruled_out",
    "outliers",
    "missing",
    "separate_by",
    "left_out",
}


@pytest.fixture(scope="module")
def report(cpu_sweep):
    uri, _ = cpu_sweep
    return mfp.explain(EXPERIMENT, tracking_uri=uri)


def test_the_two_options_come_first(report) -> None:
    assert report.metric == "val_loss"
    assert report.runs == 32
    assert not report.left_out
    first_two = {report.factors[0].fields, report.factors[1].fields}
    assert first_two == {("program.call.lr",), ("program.call.width",)}
    assert all(f.verdict == "important" for f in report.factors[:2])


def test_the_seeds_are_the_noise_floor(report) -> None:
    noise = report.noise
    assert "seeds.requested" in noise.fields
    assert (noise.groups, noise.runs) == (16, 32)  # 16 configurations x 2 seeds
    assert 0 < noise.share < 0.5
    assert not any(f.startswith("seeds.") for factor in report.factors for f in factor.fields)


def test_the_thread_count_is_ruled_out(report) -> None:
    assert "torch.threads.intra_op" in report.ruled_out
    (threads,) = [f for f in report.factors if f.fields == ("torch.threads.intra_op",)]
    assert threads.verdict == "ruled_out"
    assert threads.interval[1] <= 0.05


def test_the_confounded_pair_is_one_block(report) -> None:
    (block,) = [f for f in report.factors if f.kind == "main" and set(PAIR) <= set(f.fields)]
    assert block.fields == PAIR
    assert block.confounded
    assert {lv.value for lv in block.by_value} == {
        "dropout=0.0, weight_decay=0.0",
        "dropout=0.5, weight_decay=0.01",
    }
    (separation,) = report.separate_by
    assert separation.fields == PAIR
    assert "dropout=0.5 with weight_decay=0.0" in separation.runs_needed


def test_nothing_within_the_noise_is_called_important(report) -> None:
    for factor in report.important:
        assert factor.p is not None
        assert factor.p < 0.05
        assert factor.interval[0] > 0


def test_the_cli_report_fits_one_screen_and_json_keeps_the_contract(cpu_sweep, capsys) -> None:
    uri, _ = cpu_sweep
    assert main(["explain", EXPERIMENT, "--tracking-uri", uri, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= CONTRACT
    assert set(data["noise"]) >= {"sd", "share", "groups", "runs"}
    for factor in data["factors"]:
        assert set(factor) >= {"fields", "share", "interval", "by_value", "confounded"}
        for level in factor["by_value"].values():
            assert set(level) >= {"n", "mean"}
    assert set(data["missing"]) >= {"runs", "fields"}
    report = mfp.explain(EXPERIMENT, tracking_uri=uri)
    assert data == json.loads(render(report, "json"))  # the CLI's JSON is the result's
    text = render(report, "text")
    lines = text.splitlines()
    assert len(lines) <= 40
    assert lines[0].startswith(f"fingerprint explain {EXPERIMENT}: val_loss (final value)")


def test_html_is_self_contained_with_one_stacked_chart_and_strip_plots(report) -> None:
    page = render(report, "html")
    assert page.count('aria-label="split of the variance"') == 1
    assert 'aria-label="program.call.lr"' in page
    assert 'aria-label="program.call.width"' in page
    assert page.count('class="run"') >= 2 * 32  # every run a dot in each strip plot
    assert "<script" not in page
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)


def test_log_to_stores_the_report_in_a_run(cpu_sweep, capsys, tmp_path: Path) -> None:
    uri, runs = cpu_sweep
    target = runs[0].run_id
    code = main(
        ["explain", EXPERIMENT, "--tracking-uri", uri, "--format", "markdown", "--log-to", target]
    )
    out, err = capsys.readouterr()
    assert code == 0
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    experiment_id = client.get_run(target).info.experiment_id
    path = layout.explain_artifact(experiment_id, "val_loss", "md")
    assert path in err
    stored = Path(client.download_artifacts(target, path, str(tmp_path)))
    assert stored.read_text() == out


def test_readme_transcript_is_what_explain_prints(report) -> None:
    """The README shows a real transcript of this sweep; its numbers come from the machine it
    ran on, its words and columns must still be what the code prints."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- explain-sample:start -->\n```text\n(.*?)```", readme, re.S)
    assert block is not None
    shown = block.group(1).splitlines()
    assert shown[0] == f"$ fingerprint explain {EXPERIMENT}"
    printed = render(report, "text").splitlines()
    assert re.sub(r"[\d.]+", "#", shown[1]) == re.sub(r"[\d.]+", "#", printed[0])
    header = re.compile(r"\s{2,}".join(map(re.escape, HEADER)))
    assert any(header.fullmatch(line) for line in shown)
    assert any(header.fullmatch(line) for line in printed)
