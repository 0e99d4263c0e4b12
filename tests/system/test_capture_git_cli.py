"""``fingerprint capture`` run as a process in a repository whose remote URL holds a token (as
its user info and as ``?access_token=``): the token never reaches its output, nor what ``show``
and ``diff`` print of the record it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.gitrepo import REMOTE_TOKEN, repo_with_token_remote
from support.stored import cli

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


def test_show_and_diff_of_the_record_never_contain_the_token(repo: Path) -> None:
    def fingerprint(*args: str) -> subprocess.CompletedProcess[str]:
        """``fingerprint ARGS`` in the repository (``support.stored.cli``), its output as text."""
        out = cli(*args, cwd=repo)
        return subprocess.CompletedProcess(
            out.args, out.returncode, out.stdout.decode(), out.stderr.decode()
        )

    record = repo.parent / "record.json"
    assert fingerprint("capture", "--format", "json", "-o", str(record)).returncode == 0
    assert TOKEN not in record.read_text()
    assert "access_token=***" in record.read_text()
    other = json.loads(record.read_text())
    other["git"]["remote_url"] = "https://example.com/other.git"
    (repo.parent / "other.json").write_text(json.dumps(other))
    for args in (
        ("show", str(record)),
        ("diff", str(repo.parent / "other.json"), str(record), "--all"),
        ("diff", str(repo.parent / "other.json"), str(record), "--all", "--format", "json"),
    ):
        out = fingerprint(*args)
        assert out.returncode in (0, 1), out.stderr
        assert TOKEN not in out.stdout + out.stderr
        assert "https://example.com/r.git?access_token=***" in out.stdout or (
            args[-1] == "--all" and "https://example.com/" in out.stdout  # a narrow column
        ), out.stdout
