"""Run a recorded training again: its code in a temporary git worktree, its command line, and the
settings a rerun forces through ``MLFLOW_FINGERPRINT_APPLY`` (DESIGN.md, "Controlled reruns").

The code a run trained with is its commit plus its uncommitted diff (``fingerprint/git.diff``);
untracked project files and data git does not track are taken from this working tree, untracked
sources only where their content is the run's. When this working tree already is that code, the
rerun starts here and no worktree is made. Every failure is one line (``UsageError``) and leaves
no worktree behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import layout, settings
from ..capture.program import file_sha256
from ..errors import UsageError
from ..model.fingerprint import get_path
from ..redact import MASK

# How much of a failed training's output the one-line error quotes.
ERROR_TAIL_CHARS = 300


@dataclass(frozen=True)
class Recipe:
    """What a rerun needs of a recorded run: where its code is, and how it was started."""

    run_id: str
    argv: tuple[str, ...]
    entry_kind: str
    module: str | None
    entry_path: str | None
    cwd: str
    commit: str
    diff: str | None  # the recorded uncommitted diff; None for a clean tree
    diff_digest: str | None
    sources: Mapping[str, str | None] = field(default_factory=dict)  # path -> sha256[:16]
    untracked: tuple[str, ...] = ()


def recipe_of(run_id: str, record: Mapping[str, Any], diff: str | None) -> Recipe:
    """The recipe of ``record``; a UsageError saying what is missing where the run cannot be rerun
    (no program recorded, started interactively, a secret in its command line, no commit, a
    dirty tree whose diff was not stored)."""
    argv = get_path(record, "program.argv")
    entry = get_path(record, "program.entry") or {}
    if not isinstance(argv, list) or not argv or not isinstance(entry, Mapping):
        raise UsageError(f"run {run_id} recorded no program (command line and entry point)")
    kind = entry.get("kind")
    if kind not in ("script", "module"):
        raise UsageError(f"run {run_id} was started interactively (-c, a notebook): no command")
    if any(MASK in str(arg) for arg in argv):
        raise UsageError(f"run {run_id}'s command line held a secret (masked): it cannot be rerun")
    commit = get_path(record, "git.commit")
    if not isinstance(commit, str):
        raise UsageError(f"run {run_id} recorded no git commit: its code cannot be checked out")
    digest = get_path(record, "git.diff_digest")
    dirty = get_path(record, "git.dirty") is True
    if dirty and (diff is None or diff.startswith("# mlflow-fingerprint: diff not stored")):
        raise UsageError(f"run {run_id} ran with uncommitted changes whose diff was not stored")
    files = get_path(record, "program.sources.files") or {}
    untracked = get_path(record, "git.untracked_files") or []
    cwd = get_path(record, "program.cwd")
    return Recipe(
        run_id=run_id,
        argv=tuple(str(a) for a in argv),
        entry_kind=str(kind),
        module=entry.get("module"),
        entry_path=entry.get("path"),
        cwd=cwd if isinstance(cwd, str) and not os.path.isabs(cwd) else ".",
        commit=commit,
        diff=diff if dirty else None,
        diff_digest=digest if isinstance(digest, str) else None,
        sources=dict(files) if isinstance(files, Mapping) else {},
        untracked=tuple(str(u) for u in untracked) if isinstance(untracked, list) else (),
    )


def _git(root: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, input=stdin, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise UsageError((done.stderr.strip().splitlines() or [f"git {args[0]} failed"])[-1])
    return done.stdout


def repository_root(start: Path) -> Path:
    """The working tree ``start`` is in: a rerun checks the run's commit out of it."""
    try:
        return Path(_git(start, "rev-parse", "--show-toplevel").strip())
    except (UsageError, OSError):
        raise UsageError(
            f"{start} is not in a git repository: run this inside a clone of the run's repository"
        ) from None


def _current_diff_digest(root: Path) -> str | None:
    from ..capture.git import open_repo, read_diff

    repo = open_repo(root)
    with repo:
        diff = read_diff(repo, keep_bytes=0)
    return diff.sha256[:16] if diff.size and diff.sha256 else None


def matches_here(recipe: Recipe, root: Path) -> bool:
    """Whether ``root`` already holds the run's code: its commit checked out, the same
    uncommitted diff, and every recorded source with the recorded content."""
    if _git(root, "rev-parse", "HEAD").strip() != recipe.commit:
        return False
    if _current_diff_digest(root) != recipe.diff_digest:
        return False
    return all(
        sha is None or file_sha256(root / path) == sha for path, sha in recipe.sources.items()
    )


def _link_untracked(origin: Path, tree: Path, recipe: Recipe) -> None:
    """Data and files git does not track (a dataset folder, an ignored cache) are linked from
    this working tree; an untracked *source* only where its content is the one the run used."""
    listed = _git(origin, "status", "--porcelain=v1", "-z", "--ignored", "--untracked-files=normal")
    for entry in filter(None, listed.split("\0")):
        if entry[:2] not in ("??", "!!"):
            continue
        rel = entry[3:].rstrip("/")
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
    if _git(origin, "cat-file", "-t", recipe.commit).strip() != "commit":
        raise UsageError(f"commit {recipe.commit[:12]} is not in the repository at {origin}")
    parent = Path(tempfile.mkdtemp(prefix="mfp-rerun-"))
    tree = parent / "tree"
    try:
        _git(origin, "worktree", "add", "--detach", "--quiet", str(tree), recipe.commit)
        if recipe.diff:
            try:
                _git(tree, "apply", "--whitespace=nowarn", "-", stdin=recipe.diff)
            except UsageError as exc:
                raise UsageError(
                    f"run {recipe.run_id}'s uncommitted diff no longer applies to "
                    f"{recipe.commit[:12]}: {exc}"
                ) from None
        _link_untracked(origin, tree, recipe)
        yield tree
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(tree)],
            cwd=origin,
            capture_output=True,
            check=False,
        )
        shutil.rmtree(parent, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=origin, capture_output=True, check=False)


@dataclass(frozen=True)
class Launch:
    """One rerun to start: the tree and command, the settings to force, where to stop."""

    tree: Path
    argv: tuple[str, ...]
    apply: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str | None] = field(default_factory=dict)
    stop_after: int | None = None
    watch_steps: tuple[int, ...] = ()
    timeout_s: float | None = None


def command(recipe: Recipe, argv: Sequence[str], tree: Path) -> list[str]:
    """The interpreter running this command, on the run's script (or module) and arguments."""
    if recipe.entry_kind == "module" and recipe.module:
        return [sys.executable, "-m", recipe.module, *argv[1:]]
    script = tree / (recipe.entry_path or argv[0])
    return [sys.executable, str(script), *argv[1:]]


def environment(
    launch: Launch, uri: str, rerun_of: str, token: str, base: Mapping[str, str]
) -> dict[str, str]:
    """The training's environment: this one, plus the store, what to force and where to stop."""
    env = {k: v for k, v in base.items() if k != "MLFLOW_RUN_ID"}
    for name, value in launch.env.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    env["MLFLOW_TRACKING_URI"] = uri
    env[settings.QUIET] = "1"
    env[settings.RERUN_OF] = rerun_of
    env[settings.RERUN_TOKEN] = token
    if launch.apply:
        env[settings.APPLY] = json.dumps(dict(launch.apply), sort_keys=True)
    if launch.stop_after is not None:
        env[settings.STOP_AFTER] = str(launch.stop_after)
    if launch.watch_steps:
        env[settings.WATCH_STEPS] = ",".join(str(s) for s in launch.watch_steps)
    return env


def start(recipe: Recipe, launch: Launch, uri: str) -> str:
    """Run the training to its end (or its stop) and return the token its run is tagged with; a
    UsageError quoting its last line where it fails or outlives ``timeout_s``."""
    token = uuid.uuid4().hex
    cwd = launch.tree / recipe.cwd
    env = environment(launch, uri, recipe.run_id, token, os.environ)
    with tempfile.TemporaryFile() as out:
        try:
            done = subprocess.run(
                command(recipe, launch.argv, launch.tree),
                cwd=cwd if cwd.is_dir() else launch.tree,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=launch.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise UsageError(f"the rerun's training ran past {launch.timeout_s:g} s") from None
        if done.returncode:
            out.seek(0)
            lines = out.read().decode(errors="replace").strip().splitlines()
            last = lines[-1][-ERROR_TAIL_CHARS:] if lines else f"exit {done.returncode}"
            raise UsageError(f"the training failed in the rerun (exit {done.returncode}): {last}")
    return token


def find_rerun(mlflow_client: Any, experiment_ids: Sequence[str], token: str) -> str:
    """The run a rerun created, found by the token it was tagged with."""
    from ..tracking.store import quote, search_all_runs

    wanted = f"tags.`{layout.INTERNAL_RERUN_TOKEN}` = {quote(token)}"
    for ids in (list(experiment_ids), None):
        if ids is None:
            ids = [e.experiment_id for e in mlflow_client.search_experiments()]
        runs = search_all_runs(mlflow_client, ids, wanted, 1)
        if runs:
            return str(runs[0].info.run_id)
    raise UsageError("the rerun's training ended without recording a fingerprinted run")


def tree_files(tree: Path) -> dict[str, str]:
    """The files git tracks in a worktree (with their uncommitted content): path -> digest.
    Untracked files are data or output (an ``mlruns`` folder), linked alike into every tree."""
    listed = _git(tree, "ls-files", "-z", "--cached")
    out: dict[str, str] = {}
    for rel in filter(None, listed.split("\0")):
        path = tree / rel
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return out


def changed_files(a: Path, b: Path) -> dict[str, tuple[str | None, str | None]]:
    fa, fb = tree_files(a), tree_files(b)
    return {
        p: (fa.get(p), fb.get(p)) for p in sorted(fa.keys() | fb.keys()) if fa.get(p) != fb.get(p)
    }
