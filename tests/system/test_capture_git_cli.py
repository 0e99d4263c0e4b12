"""``fingerprint capture`` run as a process in a repository whose remote URL holds a token: the
token never reaches its output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.gitrepo import committed_repo, git

TOKEN = "secret-token-4f9a1c"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = committed_repo(tmp_path / "repo", {"train.py": "lr = 0.1\n"})
    git(root, "remote", "add", "origin", f"https://user:{TOKEN}@example.com/r.git")
    return root


def test_cli_output_never_contains_the_token(repo: Path) -> None:
    for fmt in ("json", "text"):
        out = subprocess.run(
            [sys.executable, "-m", "mlflow_fingerprint.cli", "capture", "--format", fmt],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        )
        assert TOKEN not in out.stdout + out.stderr
        assert "example.com/r.git" in out.stdout
