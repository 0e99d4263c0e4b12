"""The code: commit, branch, dirty state and a digest of the uncommitted diff, via GitPython.

Two short git processes run side by side (``status`` and ``diff HEAD``), their output read from
temporary files rather than pipes (``process``); the remote URL loses any credentials before it
is recorded. The diff text itself is an artifact, not a field: see
``uncommitted_diff``.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from ..model.fingerprint import unavailable
from ..redact import strip_url_credentials
from . import process
from .context import ProbeContext
from .reading import first_line

GIT_TIMEOUT_S = 5.0


def open_repo(start: Path) -> Any:
    """The repository holding ``start`` (or the running script), or None."""
    import git

    candidates = [start]
    if sys.argv and sys.argv[0] not in ("", "-c", "-m"):
        candidates.append(Path(sys.argv[0]).resolve().parent)
    for path in candidates:
        try:
            return git.Repo(path, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            continue
    return None


def _remote_url(repo: Any) -> str | None:
    """origin's (else the first remote's) URL from the config files, credentials removed.
    ``Remote.urls`` would start ``git remote get-url``; the config holds the same value."""
    remotes = {r.name: r for r in repo.remotes}
    remote = remotes.get("origin") or next(iter(remotes.values()), None)
    if remote is None:
        return None
    try:
        url = remote.config_reader.get("url")
    except Exception:
        return None
    return strip_url_credentials(str(url))


def uncommitted_diff(repo: Any) -> str:
    """``git diff HEAD`` of tracked files (staged and unstaged): what makes a tree dirty."""
    return _run_git(repo, DIFF_ARGS)


DIFF_ARGS = ("diff", "HEAD", "--no-color", "--no-ext-diff")
# --no-optional-locks: a background reader must not take index.lock from the user's own git.
STATUS_ARGS = ("--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=normal")


def _start_git(repo: Any, args: tuple[str, ...]) -> process.Started:
    """git with its output going to temporary files (see ``process``): a DataLoader worker
    forked meanwhile must not hold the reader up until it exits."""
    executable = getattr(type(repo.git), "GIT_PYTHON_GIT_EXECUTABLE", None) or "git"
    env = {**os.environ, "LC_ALL": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0"}
    where = str(repo.working_tree_dir or repo.git_dir)
    return process.start([executable, "-C", where, *args], env=env)


def _finish_git(started: process.Started) -> str:
    """git's stdout, waiting at most GIT_TIMEOUT_S (then git is killed, not left behind)."""
    code, out, err = process.finish(started, GIT_TIMEOUT_S)
    if code:
        raise RuntimeError(err.strip() or f"exit {code}")
    return out


def _run_git(repo: Any, args: tuple[str, ...]) -> str:
    return _finish_git(_start_git(repo, args))


def status_counts(porcelain: str) -> tuple[int, int]:
    """(changed tracked entries, untracked files) from ``git status --porcelain -z``."""
    changed = untracked = 0
    for entry in porcelain.split("\0"):
        if entry.startswith("??"):
            untracked += 1
        elif len(entry) > 3 and entry[2] == " ":
            changed += 1
    return changed, untracked


MAX_UNTRACKED_LISTED = 200


def untracked_files(porcelain: str) -> list[str]:
    """The untracked paths (a directory ends with ``/``), relative to the repository root, at
    most MAX_UNTRACKED_LISTED: the comparator reads from them whether a script that ran was
    tracked, without another git process during the run."""
    paths = [entry[3:] for entry in porcelain.split("\0") if entry.startswith("?? ")]
    return sorted(paths)[:MAX_UNTRACKED_LISTED]


def _worktree_state(repo: Any, has_commit: bool) -> dict[str, Any]:
    """``git status`` and ``git diff HEAD`` run side by side: a dirty tree costs the wall time
    of one process, a clean one the CPU of an empty diff."""
    status = _start_git(repo, STATUS_ARGS)
    diff = _start_git(repo, DIFF_ARGS) if has_commit else None
    state: dict[str, Any] = {}
    try:
        porcelain = _finish_git(status)
        changed, untracked = status_counts(porcelain)
        state.update(dirty=changed > 0, changed_count=changed, untracked_count=untracked)
        state["untracked_files"] = untracked_files(porcelain)
    except Exception as exc:
        state["dirty"] = unavailable(f"git status failed: {first_line(exc)}")
    if diff is not None:
        try:
            text = _finish_git(diff)
            state["diff_digest"] = hashlib.sha256(text.encode()).hexdigest()[:16] if text else None
            state["diff_lines"] = text.count("\n")
        except Exception as exc:
            state["diff_digest"] = unavailable(f"git diff failed: {first_line(exc)}")
    return state


def probe(ctx: ProbeContext) -> dict[str, Any]:
    try:
        import git

        repo = open_repo(ctx.cwd)
    except ImportError:
        return unavailable("GitPython is not installed")
    except Exception as exc:
        return unavailable(f"git failed: {first_line(exc)}")
    if repo is None:
        return unavailable(f"not a git repository: {ctx.cwd}")
    with repo:
        section: dict[str, Any] = {"root": repo.working_tree_dir}
        try:
            # Read from the ref files: loading the commit object would start `git cat-file`.
            section["commit"] = git.SymbolicReference.dereference_recursive(repo, "HEAD")
        except ValueError:
            section["commit"] = unavailable("no commits yet")
        section["branch"] = None if repo.head.is_detached else repo.active_branch.name
        section.update(_worktree_state(repo, isinstance(section.get("commit"), str)))
        section["remote_url"] = _remote_url(repo)
        return section
