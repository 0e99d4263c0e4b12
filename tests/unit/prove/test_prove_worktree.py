"""The git commands a rerun's worktree is made with, on a real repository."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from mlflow_fingerprint.prove import worktree
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
