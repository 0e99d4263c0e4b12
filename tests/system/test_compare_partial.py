"""A run whose fingerprint artifact is gone is compared on its ``fingerprint.*`` tags (issue 13:
``diff`` used to exit 2, "has no fingerprint", although the run carried the tags)."""

from __future__ import annotations

import json

import pytest

from mlflow_fingerprint import diff
from mlflow_fingerprint.cli.main import main as cli
from support.trained import TrainedRuns


@pytest.fixture
def runs(digits_runs: TrainedRuns) -> tuple[str, dict[str, str]]:
    """The session's trained runs (support/trained.py); ``a`` here is ``a_partial``, whose
    fingerprint artifact is gone, and ``a_again`` and ``seed1`` have theirs."""
    ids = {
        "a": digits_runs["a_partial"],
        "a_again": digits_runs["a"],
        "seed1": digits_runs["seed1"],
    }
    return digits_runs.uri, ids


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
