"""Whether ``fingerprint bisect A B`` can run here, now: a hint is printed only where it works.

A bisect checks the runs' recorded commit out of the repository it is run in. A report that
offers the command where the runs recorded no commit, or outside any clone holding it, sends the
user to an error ("recorded no git commit"); the report says instead, in one line, what is
missing.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..model.fingerprint import get_path
from .resolve import Resolved

GIT_TIMEOUT_S = 5.0
NO_COMMIT = "bisect needs a git commit: commit the project first"


def _holds(root: Path, commit: str) -> bool:
    """Whether the repository at ``root`` holds ``commit`` (git says so within its time)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "cat-file", "-e", f"{commit}^{{commit}}"],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def missing(runs: Sequence[Resolved], cwd: Path | None = None) -> str | None:
    """What keeps a bisect of ``runs`` from running in ``cwd`` (one line), None where it can."""
    from ..capture.git_files import find

    commits = [get_path(r.record, "git.commit") for r in runs]
    if not all(isinstance(c, str) and c for c in commits):
        return NO_COMMIT
    if shutil.which("git") is None:
        return "bisect needs git on PATH: it checks the runs' commit out with git"
    repo = find(cwd or Path.cwd())
    if repo is None:
        return "bisect runs in the runs' repository: run it inside a clone of it"
    absent = [str(c)[:12] for c in dict.fromkeys(commits) if not _holds(repo.working_tree_dir, c)]
    if absent:
        return (
            f"bisect needs commit {', '.join(absent)} in this repository: fetch it, or run it "
            "inside the runs' repository"
        )
    return None
