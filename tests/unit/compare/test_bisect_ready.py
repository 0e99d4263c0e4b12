"""The bisect hint is given only where ``fingerprint bisect`` can run at that moment (issue 46):
against real git repositories in temporary folders."""

from __future__ import annotations

from pathlib import Path

from mlflow_fingerprint.compare.bisect_ready import NO_COMMIT, missing, placed
from mlflow_fingerprint.compare.report import RunRef
from mlflow_fingerprint.compare.resolve import Resolved
from support.gitrepo import git


def run_with(commit: object) -> Resolved:
    return Resolved(RunRef("A", "0" * 32), {"git": {"commit": commit}}, ())


def test_runs_without_a_commit_are_told_to_commit(tmp_path: Path) -> None:
    no_commit = {"unavailable": "not a git repository: /tmp/x"}
    assert missing([run_with(no_commit), run_with("a" * 40)], tmp_path) == NO_COMMIT
    assert not placed(NO_COMMIT)  # no command to offer: it would fail anywhere


def test_outside_the_runs_repository_the_hint_says_where_to_run_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    head = git(repo, "rev-parse", "HEAD").strip()
    runs = [run_with(head), run_with(head)]
    assert missing(runs, repo) is None  # the hint works here
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert "inside a clone" in str(missing(runs, elsewhere))
    assert placed(missing(runs, elsewhere))  # the command is offered, with where it runs
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(other, "commit", "-q", "--allow-empty", "-m", "another project")
    assert missing(runs, other) == (
        f"run it inside the runs' repository, or fetch commit {head[:12]} into this one"
    )
