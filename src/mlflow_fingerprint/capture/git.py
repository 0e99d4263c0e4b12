"""The code: commit, branch, dirty state and a digest of the uncommitted diff, via GitPython.

Two git processes at most (``status`` and ``diff HEAD``); the remote URL loses any credentials
before it is recorded. The diff text itself is an artifact, not a field: see ``uncommitted_diff``.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

from ..fingerprint import unavailable
from ..redact import strip_url_credentials
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
    remotes = {r.name: r for r in repo.remotes}
    remote = remotes.get("origin") or next(iter(remotes.values()), None)
    if remote is None:
        return None
    try:
        urls = list(remote.urls)
    except Exception:
        return None
    return strip_url_credentials(urls[0]) if urls else None


def uncommitted_diff(repo: Any) -> str:
    """``git diff HEAD`` of tracked files (staged and unstaged) — what makes a tree dirty."""
    return repo.git.diff("HEAD", "--no-color", "--no-ext-diff", kill_after_timeout=GIT_TIMEOUT_S)


def _status_counts(repo: Any) -> tuple[int, int]:
    """(changed tracked entries, untracked files) from one ``git status --porcelain``."""
    out = repo.git.status("--porcelain=v1", "-z", "--untracked-files=normal",
                          kill_after_timeout=GIT_TIMEOUT_S)
    changed = untracked = 0
    for entry in out.split("\0"):
        if entry.startswith("??"):
            untracked += 1
        elif len(entry) > 3 and entry[2] == " ":
            changed += 1
    return changed, untracked


def probe(ctx: ProbeContext) -> dict[str, Any]:
    try:
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
            head = repo.head.commit
            section["commit"] = head.hexsha
            section["commit_time"] = head.committed_datetime.isoformat()
        except ValueError:
            section["commit"] = unavailable("no commits yet")
        section["branch"] = None if repo.head.is_detached else repo.active_branch.name
        try:
            changed, untracked = _status_counts(repo)
            section["dirty"] = changed > 0
            section["changed_count"] = changed
            section["untracked_count"] = untracked
        except Exception as exc:
            section["dirty"] = unavailable(f"git status failed: {first_line(exc)}")
        if isinstance(section.get("commit"), str):
            try:
                diff = uncommitted_diff(repo)
                section["diff_digest"] = hashlib.sha256(diff.encode()).hexdigest()[:16] \
                    if diff else None
                section["diff_lines"] = diff.count("\n")
            except Exception as exc:
                section["diff_digest"] = unavailable(f"git diff failed: {first_line(exc)}")
        section["remote_url"] = _remote_url(repo)
        return section
