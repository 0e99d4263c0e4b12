"""What a rerun needs of a recorded run: where its code is and how it was started, read from its
record and checked before anything runs.

A record is input: the entry point, the command line's first word and the working directory
it names must stay inside the repository (relative, without ``..`` leading out; a module by its
dotted name, never one of the standard library's). The paths are checked here as written, and
again once a worktree exists, where links are resolved (``launch.located``). Every refusal is one
line (``UsageError``) naming the run and the field (docs/design.md, "What a rerun may touch").
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..model.sections import Git, Program

_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
DIFF_NOT_STORED = "# mlflow-fingerprint: diff not stored"


@dataclass(frozen=True)
class Recipe:
    """What a rerun needs of a recorded run: where its code is, and how it was started. Every
    path is relative to the repository root and stays inside it."""

    run_id: str
    argv: tuple[str, ...]
    entry_kind: str  # script | module
    module: str | None
    entry_path: str | None
    cwd: str
    commit: str
    diff: str | None  # the recorded uncommitted diff; None for a clean tree
    diff_digest: str | None
    # path -> sha256[:16] as recorded (a record is input: compared as it is)
    sources: Mapping[str, object] = field(default_factory=dict)
    untracked: tuple[str, ...] = ()

    @property
    def script(self) -> str:
        """The file a script run starts (relative to the repository root)."""
        return self.entry_path or self.argv[0]


def contained(path: str) -> bool:
    """Whether ``path``, as written, stays inside the directory it is relative to."""
    if not path or "\0" in path or path.startswith(("/", "\\")) or os.path.isabs(path):
        return False
    normal = posixpath.normpath(path.replace("\\", "/"))
    return normal != ".." and not normal.startswith("../")


def _inside(run_id: str, what: str, path: str) -> str:
    if not contained(path):
        raise UsageError(
            f"run {run_id}'s record names {what} {path!r}, outside its repository: a rerun runs "
            "only what is inside the repository"
        )
    return path


def _module(run_id: str, name: object) -> str:
    """A module a rerun may start with ``-m``: a dotted name that is not the standard library's
    (``python -m`` finds those before the repository's own files)."""
    if not isinstance(name, str) or not _MODULE.fullmatch(name):
        raise UsageError(f"run {run_id}'s record names no valid module to run: {name!r}")
    top = name.split(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        raise UsageError(
            f"run {run_id}'s record names module {name!r}, which is not the repository's own: "
            "a rerun runs only what is inside the repository"
        )
    return name


def diff_digest(diff: str) -> str:
    """``git.diff_digest`` as capture computes it, of a stored diff: capture hashes the diff it
    read, before redaction, so a diff whose secrets were masked for storage no longer matches."""
    return hashlib.sha256(diff.encode()).hexdigest()[:16]


def recipe_of(run_id: str, record: Mapping[str, Any], diff: str | None) -> Recipe:
    """The recipe of ``record``; a UsageError saying what is missing or refused where the run
    cannot be rerun (no program recorded, started interactively, no commit, a dirty tree whose
    diff was not stored or not stored as it was, a path leading outside the repository)."""
    program, git = Program.from_record(record), Git.from_record(record)
    argv, entry = program.argv, program.entry or {}
    if not argv:
        raise UsageError(f"run {run_id} recorded no program (command line and entry point)")
    kind = entry.get("kind")
    if kind not in ("script", "module"):
        raise UsageError(f"run {run_id} was started interactively (-c, a notebook): no command")
    commit = git.commit
    if commit is None or not re.fullmatch(r"[0-9a-f]{7,64}", commit):
        raise UsageError(f"run {run_id} recorded no git commit: its code cannot be checked out")
    digest = git.diff_digest
    dirty = git.dirty is True
    if dirty and (diff is None or diff.startswith(DIFF_NOT_STORED)):
        raise UsageError(f"run {run_id} ran with uncommitted changes whose diff was not stored")
    if dirty and digest is not None and diff_digest(str(diff)) != digest:
        raise UsageError(
            f"run {run_id}'s stored diff is not the one it ran with (a value in it was masked as "
            "a secret, or the artifact was changed): a rerun would run other code; commit the "
            "change (or name the value in MLFLOW_FINGERPRINT_NOT_SECRET) and record the run again"
        )
    cwd = _inside(run_id, "the working directory", program.cwd) if program.cwd is not None else "."
    path = entry.get("path")
    path = _inside(run_id, "the entry point", path) if isinstance(path, str) else None
    first = _inside(run_id, "argv[0]", str(argv[0]))
    module = _module(run_id, entry.get("module")) if kind == "module" else None
    return Recipe(
        run_id=run_id,
        argv=(first, *(str(a) for a in argv[1:])),
        entry_kind=str(kind),
        module=module,
        entry_path=path,
        cwd=cwd,
        commit=commit,
        diff=diff if dirty else None,
        diff_digest=digest,
        sources=dict(program.sources or {}),
        untracked=git.untracked_files,
    )
