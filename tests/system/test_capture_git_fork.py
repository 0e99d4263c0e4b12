"""The git record survives DataLoader workers forked while git runs (issue: lost ~1 run in 4).

Real trainings (the digits example copied into a temporary git repository, left dirty), three at
once with two workers each: every run's fingerprint must hold ``git.dirty`` and a
``git.diff_digest``. Before git's output was read through files, a worker forked while the
first-batch capture started git inherited the pipe, and the capture waited for the worker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from mlflow_fingerprint import layout
from support.gitrepo import git
from support.paths import ROOT

DIGITS = ROOT / "examples" / "digits.py"


def dirty_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shutil.copy(DIGITS, repo / "train.py")
    shutil.copy(DIGITS.with_name("digits_data.py"), repo / "digits_data.py")
    git(repo, "add", "train.py", "digits_data.py")
    git(repo, "commit", "-q", "-m", "digits")
    with (repo / "train.py").open("a") as f:
        f.write("\n# an uncommitted edit\n")
    return repo


def start(repo: Path, store: Path, name: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        # A git read held by a worker would outlast this; a sound one takes milliseconds.
        "MLFLOW_FINGERPRINT_PROBE_TIMEOUT": "4",
    }
    cmd = [
        sys.executable,
        "train.py",
        "--seed",
        "0",
        "--num-workers",
        "2",
        "--epochs",
        "1",
        "--max-steps",
        "8",
        "--experiment",
        "forks",
        "--run-name",
        name,
        "--tracking-uri",
        f"sqlite:///{store}",
    ]
    return subprocess.Popen(
        cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def recorded_git(store: Path, run_id: str) -> dict:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{store}")
    path = client.download_artifacts(run_id, layout.FINGERPRINT_ARTIFACT, str(store.parent))
    return json.loads(Path(path).read_text())["git"]


def test_three_concurrent_trainings_with_workers_all_record_git(
    tmp_path: Path, mlflow_db_template: Path
) -> None:
    """Once: the deterministic form below forces the race every time; this is the real
    trainings' end-to-end check (it ran twice before that form existed)."""
    repo = dirty_repo(tmp_path)
    stores = [tmp_path / f"run{i}" / "mlflow.db" for i in range(3)]
    for store in stores:  # copies of the migrated template: no run creates its database
        store.parent.mkdir()
        shutil.copyfile(mlflow_db_template, store)
    procs = [start(repo, store, f"r{i}") for i, store in enumerate(stores)]
    for proc, store in zip(procs, stores, strict=True):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        run_id = json.loads(out.strip().splitlines()[-1])["run_id"]
        section = recorded_git(store, run_id)
        assert section.get("dirty") is True, section
        digest = section.get("diff_digest")
        assert isinstance(digest, str), section
        assert len(digest) == 16, section


def test_git_read_is_not_held_by_a_fork_taken_while_git_starts(tmp_path: Path) -> None:
    """Deterministic form of the race: while git is started again and again, another thread
    forks children that live 2 s (as DataLoader workers do). A read through a pipe that a child
    inherited would wait for that child; a read through files waits for git alone."""
    import threading
    import time

    from mlflow_fingerprint.capture import git as git_probe

    repo = dirty_repo(tmp_path)
    handle = git_probe.open_repo(repo)
    assert handle is not None
    stop = threading.Event()
    children: list[int] = []

    def forker() -> None:
        while not stop.is_set():
            pid = os.fork()
            if pid == 0:  # the child only sleeps, like a worker waiting for work
                time.sleep(2.0)
                os._exit(0)
            children.append(pid)
            time.sleep(0.01)

    thread = threading.Thread(target=forker, daemon=True)
    thread.start()
    slowest = 0.0
    try:
        for _ in range(40):
            began = time.monotonic()
            text = git_probe._finish_git(git_probe._start_git(handle, git_probe.STATUS_ARGS))
            git_probe.read_diff(handle, keep_bytes=0)  # the diff too, through its temp file
            slowest = max(slowest, time.monotonic() - began)
            assert "train.py" in text
    finally:
        stop.set()
        thread.join()
        for pid in children:
            os.waitpid(pid, 0)
    assert slowest < 1.5, f"a git read waited {slowest:.2f}s for a forked child"
