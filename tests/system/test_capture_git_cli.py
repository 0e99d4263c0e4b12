"""``fingerprint capture`` run as a process in a repository whose remote URL holds a token: the
token never reaches its output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.gitrepo import REMOTE_TOKEN, repo_with_token_remote

TOKEN = REMOTE_TOKEN


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return repo_with_token_remote(tmp_path / "repo")


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
