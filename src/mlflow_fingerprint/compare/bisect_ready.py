"""Whether ``fingerprint bisect A B`` can run here, now: a hint is printed only where it works.

A bisect checks the runs' recorded commit out of the repository it is run in. A report that
offers the command where the runs recorded no commit sends the user to an error ("recorded no
git commit"): the report says instead, in one line, what is missing. Outside a clone holding the
commit, the command is offered with where it runs.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ..model.fields import GIT_COMMIT
from ..model.fingerprint import get_path
from .resolve import Resolved

GIT_TIMEOUT_S = 5.0
NO_COMMIT = "bisect needs a git commit: commit the project first"
NO_GIT = "bisect needs git on PATH: it checks the runs' commit out with git"


def placed(reason: str | None) -> bool:
    """Whether the command runs once run elsewhere (another folder), rather than not at all."""
    return reason is not None and reason not in (NO_COMMIT, NO_GIT)


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
    """What keeps a bisect of ``runs`` from running in ``cwd`` (one line), None where it can.
    Where only the place is wrong (no clone here, or one without the runs' commit) the line says
    where to run it, so the command is still worth printing: see :func:`placed`."""
    from ..capture.git_files import find

    recorded = [get_path(r.record, GIT_COMMIT) for r in runs]
    commits = [c for c in recorded if isinstance(c, str) and c]
    if len(commits) != len(recorded):
        return NO_COMMIT
    if shutil.which("git") is None:
        return NO_GIT
    repo = find(cwd or Path.cwd())
    if repo is None:
        return "run it inside a clone of the runs' repository: this folder is in none"
    absent = [c[:12] for c in dict.fromkeys(commits) if not _holds(repo.working_tree_dir, c)]
    if absent:
        return (
            f"run it inside the runs' repository, or fetch commit {', '.join(absent)} into this one"
        )
    return None
