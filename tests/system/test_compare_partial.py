"""A run whose fingerprint artifact is gone is compared on its ``fingerprint.*`` tags (issue 13:
``diff`` used to exit 2, "has no fingerprint", although the run carried the tags)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from urllib.parse import urlparse

import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.cli.main import main as cli
from support.records import new_store

STEPS = ["--epochs", "1", "--max-steps", "6"]


@pytest.fixture(scope="module")
def runs(digits, tmp_path_factory, mlflow_db_template):
    import mlflow
    from mlflow import MlflowClient

    root = tmp_path_factory.mktemp("partial")
    uri = new_store(root, mlflow_db_template)
    MlflowClient(uri).create_experiment("partial", artifact_location=(root / "art").as_uri())
    ids = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(root / "spool"))
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        try:
            for name, seed in (("a", "0"), ("a_again", "0"), ("seed1", "1")):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    args = ["--seed", seed, *STEPS, "--experiment", "partial", "--run-name", name]
                    digits.main([*args, "--tracking-uri", uri])
                ids[name] = json.loads(out.getvalue().strip().splitlines()[-1])["run_id"]
        finally:
            mlflow.set_tracking_uri(None)
    client = MlflowClient(uri)
    for name in ("a",):  # A's local artifact folder is gone; its tags and metrics remain
        folder = Path(urlparse(client.get_run(ids[name]).info.artifact_uri).path)
        shutil.rmtree(folder / "fingerprint")
    return uri, ids


def test_a_seed_change_is_explained_from_the_tags_and_the_partial_record_is_named(runs):
    uri, ids = runs
    report = diff(ids["a"], ids["seed1"], tracking_uri=uri)
    assert report.verdict == "explained"
    assert report.differences[0].field == "seeds.requested"
    assert (report.differences[0].a, report.differences[0].b) == ("0", "1")
    (note,) = [n for n in report.notes if "partial" in n]
    assert note.startswith(f"A's record is partial: the fingerprint artifact of run {ids['a']}")


def test_equal_runs_with_one_partial_record_are_the_same(runs):
    uri, ids = runs
    report = diff(ids["a_again"], ids["a"], tracking_uri=uri)
    assert report.verdict == "same_results"
    assert [d for d in report.differences if d.effect != "none"] == []
    assert any(n.startswith("B's record is partial") for n in report.notes)


def test_the_command_line_compares_instead_of_exiting_2(runs, capsys):
    uri, ids = runs
    code = cli(["diff", ids["a"], ids["seed1"], "--tracking-uri", uri, "--format", "json"])
    assert code == 1
    assert json.loads(capsys.readouterr().out)["verdict"] == "explained"
