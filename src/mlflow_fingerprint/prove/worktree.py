"""Where a rerun runs: the run's code in a temporary git worktree, or this working tree where it
already is that code.

The code a run trained with is its commit plus its uncommitted diff (``fingerprint/git.diff``);
untracked project files and data git does not track are linked from this working tree, untracked
sources only where their content is the run's. A worktree is removed on the way out of
:func:`checkout`, whatever happened (an error, Ctrl-C, SIGTERM turned into an exception). A bisect
swaps single files of B's code into A's worktree (:class:`CodeSwap`), never into the user's tree.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..capture.program import file_sha256
from ..environment import environ_copy
from ..errors import UsageError
from .recipe import Recipe

WORKTREE_PREFIX = "mfp-rerun-"


def _git(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``git args`` in ``root``, given a copy of the environment: with ``cwd=`` and no ``env=``,
    ``subprocess`` starts git through ``vfork`` and ``execv`` of the C ``environ``, which fails
    with ``EFAULT`` when another thread of the caller's sets a variable at that moment (a
    bisect run from a notebook's thread)."""
    return subprocess.run(
        ["git", *args],
        cwd=root,
        env=environ_copy(),
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def git(root: Path, *args: str, stdin: str | None = None) -> str:
    done = _git(root, *args, stdin=stdin)
    if done.returncode:
        raise UsageError((done.stderr.strip().splitlines() or [f"git {args[0]} failed"])[-1])
    return done.stdout


def require_git() -> None:
    if shutil.which("git") is None:
        raise UsageError("git is not on PATH: a rerun checks the run's code out with git")


def repository_root(start: Path) -> Path:
    """The working tree ``start`` is in: a rerun checks the run's commit out of it."""
    try:
        return Path(git(start, "rev-parse", "--show-toplevel").strip())
    except (UsageError, OSError):
        raise UsageError(
            f"{start} is not in a git repository: run this inside a clone of the run's repository"
        ) from None


def _current_diff_digest(root: Path) -> str | None:
    from ..capture.git import open_repo, read_diff

    repo = open_repo(root)
    if repo is None:  # ``root`` is a working tree git itself found: only a race removes it
        raise UsageError(f"{root} is no longer a git repository")
    diff = read_diff(repo, keep_bytes=0)
    return diff.sha256[:16] if diff.size and diff.sha256 else None


def matches_here(recipe: Recipe, root: Path) -> bool:
    """Whether ``root`` already holds the run's code: its commit checked out, the same
    uncommitted diff, and every recorded source with the recorded content."""
    if git(root, "rev-parse", "HEAD").strip() != recipe.commit:
        return False
    if _current_diff_digest(root) != recipe.diff_digest:
        return False
    return all(
        sha is None or file_sha256(root / path) == sha for path, sha in recipe.sources.items()
    )


def _link_untracked(origin: Path, tree: Path, recipe: Recipe) -> None:
    """Data and files git does not track (a dataset folder, an ignored cache) are linked from
    this working tree; an untracked *source* only where its content is the one the run used."""
    from ..capture.git import status_entries

    listed = git(origin, "status", "--porcelain=v1", "-z", "--ignored", "--untracked-files=normal")
    for code, path in status_entries(listed):
        if code not in ("??", "!!"):
            continue
        rel = path.rstrip("/")
        target = tree / rel
        if rel == ".git" or target.exists() or target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(origin / rel, target_is_directory=(origin / rel).is_dir())
    for path in recipe.untracked:
        want = recipe.sources.get(path)
        if want is not None and file_sha256(tree / path) != want:
            raise UsageError(
                f"untracked file {path} is not what run {recipe.run_id} ran with, and git has "
                "no copy of it: its code cannot be rebuilt"
            )


@contextlib.contextmanager
def checkout(recipe: Recipe, origin: Path, private: bool = False) -> Iterator[Path]:
    """The run's code: ``origin`` itself where it already matches, else a temporary worktree at
    the run's commit with its diff applied; removed on the way out, whatever happened.
    ``private``: always a worktree (a bisect swaps files in it, never in the user's tree)."""
    if not private and matches_here(recipe, origin):
        yield origin
        return
    if git(origin, "cat-file", "-t", recipe.commit).strip() != "commit":
        raise UsageError(f"commit {recipe.commit[:12]} is not in the repository at {origin}")
    parent = Path(tempfile.mkdtemp(prefix=WORKTREE_PREFIX))
    tree = parent / "tree"
    try:
        git(origin, "worktree", "add", "--detach", "--quiet", str(tree), recipe.commit)
        if recipe.diff:
            try:
                git(tree, "apply", "--whitespace=nowarn", "-", stdin=recipe.diff)
            except UsageError as exc:
                raise UsageError(
                    f"run {recipe.run_id}'s uncommitted diff no longer applies to "
                    f"{recipe.commit[:12]}: {exc}"
                ) from None
        _link_untracked(origin, tree, recipe)
        yield tree
    finally:
        remove(origin, parent, tree)


def remove(origin: Path, parent: Path, tree: Path) -> None:
    """Remove a worktree and git's record of it. Runs on the way out of a signal too, so each
    step is shielded from a second Ctrl-C only by being short."""
    _git(origin, "worktree", "remove", "--force", str(tree))
    shutil.rmtree(parent, ignore_errors=True)
    _git(origin, "worktree", "prune")


def tree_files(tree: Path) -> dict[str, str]:
    """The files git tracks in a worktree (with their uncommitted content): path -> digest.
    Untracked files are data or output (an ``mlruns`` folder), linked alike into every tree."""
    listed = git(tree, "ls-files", "-z", "--cached")
    out: dict[str, str] = {}
    for rel in filter(None, listed.split("\0")):
        path = tree / rel
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return out


def changed_files(a: Path, b: Path) -> dict[str, tuple[str | None, str | None]]:
    """The files whose content differs between two trees: {path: (digest in a, digest in b)}."""
    fa, fb = tree_files(a), tree_files(b)
    return {
        p: (fa.get(p), fb.get(p)) for p in sorted(fa.keys() | fb.keys()) if fa.get(p) != fb.get(p)
    }


@dataclass
class CodeSwap:
    """Files of B's code put into A's tree for a rerun, and A's own put back after it."""

    tree: Path
    other: Path
    saved: dict[str, bytes | None] = field(default_factory=dict)

    def set(self, paths: Sequence[str]) -> None:
        for path in set(self.saved) - set(paths):
            self._write(path, self.saved.pop(path))
        for path in paths:
            if path not in self.saved:
                self.saved[path] = _read(self.tree / path)
                self._write(path, _read(self.other / path))

    def _write(self, path: str, content: bytes | None) -> None:
        target = self.tree / path
        if content is None:
            target.unlink(missing_ok=True)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() and not path.is_symlink() else None
