"""Real git repositories in temporary folders, for the tests that record or compare code."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` with a throwaway identity; its stdout (raises on failure)."""
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def printed_diff(cwd: Path) -> bytes:
    """What ``git diff HEAD`` prints in ``cwd``, as bytes: what a diff digest is taken of."""
    return subprocess.run(
        ["git", "diff", "HEAD", "--no-color", "--no-ext-diff"],
        cwd=cwd,
        capture_output=True,
        check=True,
    ).stdout


def committed_repo(root: Path, files: dict[str, str]) -> Path:
    """A new repository at ``root`` whose first commit holds ``files`` (name -> text)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for name, text in files.items():
        (root / name).write_text(text)
    git(root, "add", *files)
    git(root, "commit", "-q", "-m", "first")
    return root


def committed_copy(source: Path, root: Path) -> Path:
    """A new repository at ``root`` whose first commit is a copy of the folder ``source``."""
    shutil.copytree(source, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


REMOTE_TOKEN = "secret-token-4f9a1c"


def repo_with_token_remote(root: Path) -> Path:
    """A committed repository whose ``origin`` URL holds a credential (``REMOTE_TOKEN``) twice,
    as its user info and as a query parameter (issue 45: the query was kept), which no record
    or output may show."""
    repo = committed_repo(root, {"train.py": "lr = 0.1\n"})
    url = f"https://user:{REMOTE_TOKEN}@example.com/r.git?access_token={REMOTE_TOKEN}"
    git(repo, "remote", "add", "origin", url)
    return repo
