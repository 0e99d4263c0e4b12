"""Scripts and modules run as a user runs them: the command line, the entry point and the sources
they import are recorded, secrets redacted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.gitrepo import git
from support.paths import ROOT

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"


SCRIPT = """
import json, sys
import helper
import mlflow_fingerprint as mfp
print(json.dumps(mfp.capture().to_dict()))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "project"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text(SCRIPT)
    (repo / "helper.py").write_text("LR = 0.1\n")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "train")
    return repo


def run(repo: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MY_SERVICE_TOKEN": "s3cr3t-value-77"}
    out = subprocess.run(
        [sys.executable, "train.py", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_command_line_entry_point_and_sources_of_a_script(project: Path) -> None:
    record = run(project, "--lr", "0.05", "--api-key", TOKEN, "--user=s3cr3t-value-77", "-v")
    program = record["program"]
    assert program["argv"] == ["train.py", "--lr", "0.05", "--api-key", "***", "--user=***", "-v"]
    assert program["options"] == {"lr": "0.05", "api-key": "***", "user": "***", "v": True}
    entry = program["entry"]
    assert entry["kind"] == "script"
    assert entry["path"] == "train.py"
    assert len(entry["sha256"]) == 16
    files = program["sources"]["files"]
    assert set(files) == {"train.py", "helper.py"}  # no installed package, not this tool
    assert files["train.py"] == entry["sha256"]
    assert "helper.py" in record["git"]["untracked_files"]
    assert TOKEN not in json.dumps(record)
    assert "s3cr3t-value-77" not in json.dumps(record)


def test_editing_an_imported_untracked_file_changes_the_recipe_hash(project: Path) -> None:
    before = run(project, "--lr", "0.05")
    (project / "helper.py").write_text("LR = 0.2\n")
    after = run(project, "--lr", "0.05")
    assert before["git"]["dirty"] is after["git"]["dirty"] is False
    assert (
        before["program"]["sources"]["files"]["helper.py"]
        != (after["program"]["sources"]["files"]["helper.py"])
    )
    assert before["hashes"]["recipe"] != after["hashes"]["recipe"]
    assert before["hashes"]["env"] == after["hashes"]["env"]


def test_a_module_run_is_recorded_as_a_module(project: Path) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "main.py").write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(project)])}
    out = subprocess.run(
        [sys.executable, "-m", "pkg.main", "--epochs", "2"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    entry = json.loads(out.stdout)["program"]["entry"]
    assert (entry["kind"], entry["module"], entry["path"]) == ("module", "pkg.main", "pkg/main.py")
