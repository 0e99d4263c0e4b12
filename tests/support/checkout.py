"""A copy of the repository's files, as a fresh clone has them: what git tracks, and the files not
yet committed that git does not ignore. Nothing a build or a run left in this checkout (a venv,
``build/``, ``*.egg-info``, ``mlflow.db``) comes along."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from support.paths import ROOT


def copy_checkout(folder: Path) -> Path:
    """The repository's files in ``folder`` (created); ``folder``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return folder
