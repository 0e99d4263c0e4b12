"""The git probe against real repositories made in temporary directories."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.capture.git import open_repo, read_diff
from support.env_churn import churning_environment
from support.gitrepo import REMOTE_TOKEN, git, printed_diff, repo_with_token_remote

TOKEN = REMOTE_TOKEN


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return repo_with_token_remote(tmp_path / "repo")


def test_clean_repo_records_commit_branch_and_clean_state(repo: Path) -> None:
    fp = mfp.capture(cwd=repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    assert fp.get("git.commit") == head
    assert fp.get("git.branch") == "main"
    assert fp.get("git.dirty") is False
    assert fp.get("git.diff_digest") is None


def test_editing_a_tracked_file_changes_recipe_hash_only(repo: Path) -> None:
    before = mfp.capture(cwd=repo)
    (repo / "train.py").write_text("lr = 0.2\n")
    after = mfp.capture(cwd=repo)
    assert after.get("git.dirty") is True
    assert after.get("git.diff_digest")
    assert before.hashes["recipe"] != after.hashes["recipe"]
    assert before.hashes["env"] == after.hashes["env"]
    assert before.hashes["numerics"] == after.hashes["numerics"]


def test_two_different_edits_give_different_diff_digests(repo: Path) -> None:
    (repo / "train.py").write_text("lr = 0.2\n")
    first = mfp.capture(cwd=repo).get("git.diff_digest")
    (repo / "train.py").write_text("lr = 0.3\n")
    assert mfp.capture(cwd=repo).get("git.diff_digest") != first


def test_untracked_files_do_not_change_the_recipe(repo: Path) -> None:
    before = mfp.capture(cwd=repo)
    (repo / "notes.txt").write_text("not code")
    after = mfp.capture(cwd=repo)
    assert after.get("git.untracked_count") == 1
    assert after.get("git.dirty") is False
    assert before.hashes["recipe"] == after.hashes["recipe"]


@pytest.mark.parametrize("uri", ["sqlite:///mlflow.db", "./mlruns"])
def test_the_tracking_stores_own_files_are_not_the_projects(
    repo: Path, uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLflow's default store beside the code (the sqlite file and what sqlite keeps beside it,
    or a file store), its artifacts and the spool change with every run: none is listed."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(repo / "spool"))
    for name in ("mlflow.db", "mlflow.db-journal", "mlflow.db-wal", "mlflow.db-shm", "notes.txt"):
        (repo / name).write_text("x")
    for folder in ("mlruns/0", "spool/run"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "meta.yaml").write_text("x")
    listed = mfp.capture(cwd=repo).get("git.untracked_files")
    # with a file store, a sqlite file beside it is no store of this process's: the project's
    sqlite = [] if uri.startswith("sqlite") else [n for n in sorted(os.listdir(repo)) if ".db" in n]
    assert listed == sorted([*sqlite, "notes.txt"])


def test_new_commit_changes_recipe(repo: Path) -> None:
    before = mfp.capture(cwd=repo)
    (repo / "train.py").write_text("lr = 0.2\n")
    git(repo, "commit", "-qam", "second")
    assert mfp.capture(cwd=repo).hashes["recipe"] != before.hashes["recipe"]


def test_remote_credentials_never_appear(repo: Path) -> None:
    fp = mfp.capture(cwd=repo)
    assert fp.get("git.remote_url") == "https://example.com/r.git?access_token=***"
    assert TOKEN not in fp.to_json()


def test_not_a_repository_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "script.py")])
    section = mfp.capture(cwd=tmp_path).get("git")
    assert set(section) == {"unavailable"}
    assert "not a git repository" in section["unavailable"]


def test_repository_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    fp = mfp.capture(cwd=tmp_path)
    assert fp.get("git.commit") == {"unavailable": "no commits yet"}


def test_corrupt_index_becomes_unavailable_fields(repo: Path) -> None:
    (repo / ".git" / "index").write_bytes(b"DIRC garbage that is not an index")
    fp = mfp.capture(cwd=repo)
    assert fp.get("git.commit") == git(repo, "rev-parse", "HEAD").strip()
    assert "unavailable" in fp.get("git.dirty")
    json.loads(fp.to_json())  # still a complete, serialisable record


def test_git_is_read_while_another_thread_changes_the_environment(repo: Path) -> None:
    """git is started with a copy of the environment: copied while MLflow's telemetry thread
    unset a variable, ``{**os.environ}`` raised and the section was lost."""
    from mlflow_fingerprint.capture import git as git_probe
    from mlflow_fingerprint.capture.core import make_context

    head = git(repo, "rev-parse", "HEAD").strip()
    ctx = make_context(cwd=repo)
    with churning_environment():
        sections = [git_probe.probe(ctx) for _ in range(12)]
    assert [section.get("commit") for section in sections] == [head] * 12
    assert all(section["dirty"] is False for section in sections)


def test_the_capture_leaves_the_index_to_the_users_own_git(repo: Path) -> None:
    """Files touched but not changed, beside one edited: ``git diff`` would rewrite the index
    under index.lock, which fails a ``git commit`` the user runs meanwhile. The capture reads
    the same diff and writes nothing."""
    (repo / "helper.py").write_text("x = 1\n")
    (repo / "notes.md").write_text("notes\n")
    git(repo, "add", "helper.py", "notes.md")
    git(repo, "commit", "-q", "-m", "two more files")
    index = repo / ".git" / "index"
    later = index.stat().st_mtime + 60  # stat data no longer matches the index: not racy either
    for name in ("helper.py", "notes.md"):
        os.utime(repo / name, (later, later))
    (repo / "train.py").write_text("lr = 0.2\n")
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    fp = mfp.capture(cwd=repo)
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
    assert fp.get("git.changed_count") == 1
    assert fp.get("git.diff_digest") == hashlib.sha256(printed_diff(repo)).hexdigest()[:16]


# Settings users do set, each of which changes what a plain ``git diff HEAD`` prints.
HOSTILE_CONFIG = {
    "diff.noprefix": "true",
    "diff.mnemonicPrefix": "true",
    "diff.algorithm": "histogram",
    "diff.context": "1",
    "diff.interHunkContext": "5",
    "diff.renames": "false",
    "diff.suppressBlankEmpty": "true",
    "diff.indentHeuristic": "false",
    "core.quotePath": "false",
}


def test_the_diff_digest_does_not_depend_on_the_users_git_config(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One change, two users: the digest must say the code is the same, and the stored diff must
    still be one ``git apply`` takes (a rerun applies it to the run's commit)."""
    lines = [f"w{i} = {i}\n" for i in range(20)]
    (repo / "model.py").write_text("".join(lines))
    git(repo, "add", "model.py")
    git(repo, "commit", "-q", "-m", "a file long enough for the context to matter")
    lines[10] = "w10 = -10\n"
    (repo / "model.py").write_text("".join(lines))
    (repo / "train.py").write_text("lr = 0.2\n\n\ndef step(x):\n    return x\n")
    (repo / "donnée.py").write_text("x = 1\n")
    git(repo, "add", "donnée.py")
    default = mfp.capture(cwd=repo).get("git.diff_digest")
    for key, value in HOSTILE_CONFIG.items():
        git(repo, "config", key, value)
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=7")  # over any --unified, for git itself
    stored = read_diff(open_repo(repo), keep_bytes=1 << 20).head
    assert printed_diff(repo) != stored  # what the config makes a plain ``git diff HEAD`` print
    assert mfp.capture(cwd=repo).get("git.diff_digest") == default
    assert b"\n--- a/train.py\n+++ b/train.py\n" in stored
    assert b'"a/donn\\303\\251e.py"' in stored  # quoted as git quotes it by default
    check = subprocess.run(
        ["git", "apply", "--check", "-R", "-"], cwd=repo, input=stored, capture_output=True
    )
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("renames", [None, "false"])
def test_a_staged_rename_is_one_changed_file(repo: Path, renames: str | None) -> None:
    """``git status -z`` writes a rename's old path as a field of its own after the entry: it is
    not another changed file, whatever its name (``ab c.py`` looked like an entry). A user who
    turned ``status.renames`` off gets the same count as everyone else."""
    (repo / "ab c.py").write_text("x = 1\ny = 2\nz = 3\n")
    git(repo, "add", "ab c.py")
    git(repo, "commit", "-q", "-m", "a file with a space")
    git(repo, "mv", "ab c.py", "renamed.py")
    if renames is not None:
        git(repo, "config", "status.renames", renames)
    fp = mfp.capture(cwd=repo)
    assert fp.get("git.dirty") is True
    assert fp.get("git.changed_count") == 1
    assert fp.get("git.untracked_count") == 0
