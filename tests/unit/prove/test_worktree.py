"""The git commands a rerun's worktree is made with, on a real repository."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from mlflow_fingerprint.prove import worktree
from mlflow_fingerprint.prove.recipe import Recipe
from support.gitrepo import committed_repo


def test_git_runs_while_another_thread_rewrites_the_environment(tmp_path: Path) -> None:
    """A bisect called on one thread of a program whose other threads set variables: git must
    start every time. Started with the C ``environ`` (``env=None``) through ``vfork``, it failed
    with EFAULT ("Bad address") in about half such starts; with a copy of the environment, in
    none."""
    repo = committed_repo(tmp_path / "repo", {"train.py": "lr = 0.1\n"})
    head = worktree.git(repo, "rev-parse", "HEAD").strip()
    saved = dict(os.environ)
    stop = threading.Event()

    def rewrite() -> None:
        i = 0
        while not stop.is_set():
            for k in range(30):
                os.environ[f"MFP_CHURN_{k}"] = "v" * (i % 50)
            os.environ.clear()
            os.environ.update(saved)
            i += 1

    churn = threading.Thread(target=rewrite)
    churn.start()
    try:
        seen = [worktree.git(repo, "rev-parse", "HEAD").strip() for _ in range(15)]
    finally:
        stop.set()
        churn.join()
    assert seen == [head] * 15


def test_a_worktree_links_the_files_git_does_not_track(tmp_path: Path) -> None:
    """An ignored data folder and an untracked file of this working tree are linked into the
    rerun's worktree; what git tracks is the run's own checkout, not a link."""
    repo = committed_repo(tmp_path / "repo", {"train.py": "lr = 0.1\n", ".gitignore": "data/\n"})
    (repo / "data").mkdir()
    (repo / "data" / "train.csv").write_text("1,2\n")
    (repo / "notes.txt").write_text("notes\n")
    head = worktree.git(repo, "rev-parse", "HEAD").strip()
    recipe = Recipe(
        run_id="r1",
        argv=("train.py",),
        entry_kind="script",
        module=None,
        entry_path="train.py",
        cwd=".",
        commit=head,
        diff=None,
        diff_digest=None,
    )
    with worktree.checkout(recipe, repo, private=True) as tree:
        assert tree != repo
        assert (tree / "data").is_symlink()
        assert (tree / "data" / "train.csv").read_text() == "1,2\n"
        assert (tree / "notes.txt").is_symlink()
        assert not (tree / "train.py").is_symlink()
        assert (tree / "train.py").read_text() == "lr = 0.1\n"
