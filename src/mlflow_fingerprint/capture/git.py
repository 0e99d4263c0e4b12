"""The code: commit, branch, dirty state and a digest of the uncommitted diff.

The repository, HEAD and the remotes are read from git's files (``git_files``: no GitPython,
whose import was half of a process's first capture); ``status`` and ``diff HEAD`` are short git
processes whose output is read from temporary files rather than pipes (``process``). The remote
URL loses any credentials before it is recorded. The diff text itself is an artifact, not a
field: see ``read_diff``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..environment import environ_copy
from ..model.fingerprint import unavailable
from ..redact import strip_url_credentials
from . import git_files, process
from .context import ProbeContext
from .git_files import Repo
from .reading import first_line
from .store_files import is_store_path, store_paths

GIT_TIMEOUT_S = 5.0
READ_CHUNK = 1 << 20
# A diff larger than this (or of changed files larger than this) is not hashed into the
# fingerprint: git would take seconds to write it, and the caller waits for the capture. Its
# digest is then unavailable, never a partial one.
DIGEST_MAX_BYTES = 16 * 1024 * 1024


def open_repo(start: Path) -> Repo | None:
    """The repository holding ``start`` (or the running script), or None."""
    candidates = [start]
    if sys.argv and sys.argv[0] not in ("", "-c", "-m"):
        candidates.append(Path(sys.argv[0]).resolve().parent)
    for path in candidates:
        repo = git_files.find(path)
        if repo is not None:
            return repo
    return None


def _remote_url(repo: Repo) -> str | None:
    """origin's (else the first remote's) URL from the config file, credentials removed."""
    urls = git_files.remote_urls(repo)
    url = urls.get("origin") or next(iter(urls.values()), None)
    return None if url is None else strip_url_credentials(url)


@dataclass(frozen=True)
class DiffRead:
    """``git diff HEAD`` read as a stream: its size, line count and digest (of all of it, or of
    nothing when it was cut at a limit), and its first bytes."""

    size: int
    lines: int
    sha256: str | None  # None when the read stopped at ``max_bytes``
    head: bytes


def read_diff(
    repo: Repo, keep_bytes: int, max_bytes: int | None = None, timeout_s: float = GIT_TIMEOUT_S
) -> DiffRead:
    """``git diff HEAD`` of tracked files (staged and unstaged: what makes a tree dirty). git writes
    it to a temporary file (``process``: a DataLoader worker forked meanwhile cannot hold the read
    up), which is then read in chunks: hashing (which lets go of the GIL) as it goes, keeping the
    first ``keep_bytes``, and stopping at ``max_bytes``. Never decoded or held whole: a 100 MB
    diff costs the other threads no long hold of the GIL. Git is killed at ``timeout_s``."""
    started = _start_git(repo, DIFF_ARGS)
    digest, head, size, lines = hashlib.sha256(), bytearray(), 0, 0
    try:
        try:
            process.wait(started.proc, timeout_s)
        except subprocess.TimeoutExpired:
            started.proc.kill()
            started.proc.wait()
            raise TimeoutError(f"git took longer than {timeout_s:g}s") from None
        if started.proc.returncode:
            started.err.seek(0)
            err = started.err.read().decode(errors="replace").strip()
            raise RuntimeError(err or f"exit {started.proc.returncode}")
        started.out.seek(0)
        while chunk := started.out.read(READ_CHUNK):
            size += len(chunk)
            lines += chunk.count(b"\n")
            digest.update(chunk)
            if len(head) < keep_bytes:
                head += chunk[: keep_bytes - len(head)]
            if max_bytes is not None and size > max_bytes:
                break
    finally:
        started.out.close()
        started.err.close()
    cut = max_bytes is not None and size > max_bytes
    return DiffRead(size, lines, None if cut else digest.hexdigest(), bytes(head))


# --no-optional-locks: a background reader must not take index.lock from the user's own git
# (a ``git commit`` of theirs meanwhile would fail: "index.lock: File exists"). ``git diff`` takes
# it regardless (git 2.39: it rewrites the index where files were touched but not changed), unless
# ``diff.autoRefreshIndex`` is off, which leaves what it prints as it was.
#
# The rest pins what git's defaults print, whatever the user's config says: the digest of one
# change must not differ between two machines because one user set ``diff.noprefix``,
# ``diff.mnemonicPrefix``, ``diff.algorithm``, ``diff.context``, ``diff.orderFile`` or
# ``core.quotePath``, and the diff stored with a run must stay one ``git apply`` takes (no
# textconv output, the ``a/`` and ``b/`` prefixes). Under the defaults it prints the same bytes
# as a plain ``git diff HEAD``, so runs recorded before this still compare.
DIFF_ARGS = (
    "--no-optional-locks",
    "-c",
    "diff.autoRefreshIndex=false",
    "-c",
    "diff.suppressBlankEmpty=false",
    "-c",
    "core.quotePath=true",
    "diff",
    "HEAD",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--diff-algorithm=myers",
    "--indent-heuristic",
    "--unified=3",
    "--inter-hunk-context=0",
    "--find-renames",
    "--no-relative",
    "-O/dev/null",
)
# git's default rename detection, whatever ``status.renames`` says: with it off, one staged rename
# is two changed files, and ``git.changed_count`` is in the recipe hash.
STATUS_ARGS = (
    "--no-optional-locks",
    "status",
    "--porcelain=v1",
    "-z",
    "--untracked-files=normal",
    "--find-renames",
)


def _start_git(repo: Repo, args: tuple[str, ...]) -> process.Started:
    """git with its output going to temporary files (see ``process``): a DataLoader worker
    forked meanwhile must not hold the reader up until it exits. The git GitPython would run
    (``GIT_PYTHON_GIT_EXECUTABLE``) where one is named. ``GIT_DIFF_OPTS`` is left out: it sets
    the diff's context lines over any ``--unified`` given (see ``DIFF_ARGS``)."""
    executable = os.environ.get("GIT_PYTHON_GIT_EXECUTABLE") or "git"
    inherited = {k: v for k, v in environ_copy().items() if k != "GIT_DIFF_OPTS"}
    env = {**inherited, "LC_ALL": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0"}
    return process.start([executable, "-C", str(repo.working_tree_dir), *args], env=env)


def _finish_git(started: process.Started) -> str:
    """git's stdout, waiting at most GIT_TIMEOUT_S (then git is killed, not left behind)."""
    code, out, err = process.finish(started, GIT_TIMEOUT_S)
    if code:
        raise RuntimeError(err.strip() or f"exit {code}")
    return out


StatusEntry = tuple[str, str]  # (``XY`` code, path)


def status_entries(porcelain: str) -> list[StatusEntry]:
    """(``XY`` code, path) of each entry of ``git status --porcelain=v1 -z``. A rename or a copy
    is followed by a field holding the path it came from, which is not an entry of its own (read
    as one, ``ab c.py`` renamed counted as two changed files)."""
    fields = iter(porcelain.split("\0"))
    entries = []
    for field in fields:
        if len(field) > 3 and field[2] == " ":
            entries.append((field[:2], field[3:]))
            if "R" in field[:2] or "C" in field[:2]:
                next(fields, None)
    return entries


def changed_bytes(repo: Repo, entries: list[StatusEntry]) -> int:
    """The working-tree size of the tracked files that differ from HEAD, from the ``git status``
    already read (the diff itself takes git about a second per 100 MB before its first byte)."""
    root = repo.working_tree_dir
    total = 0
    for code, path in entries:
        if code != "??":
            try:
                total += (root / path).stat().st_size
            except OSError:  # deleted in the working tree
                continue
    return total


def status_counts(entries: list[StatusEntry]) -> tuple[int, int]:
    """(changed tracked entries, untracked files) from ``git status --porcelain -z``."""
    codes = [code for code, _ in entries]
    untracked = codes.count("??")
    return len(codes) - untracked, untracked


MAX_UNTRACKED_LISTED = 200


def untracked_files(entries: list[StatusEntry]) -> list[str]:
    """The untracked paths (a directory ends with ``/``), relative to the repository root, at
    most MAX_UNTRACKED_LISTED: the comparator reads from them whether a script that ran was
    tracked, without another git process during the run."""
    paths = [path for code, path in entries if code == "??"]
    return sorted(paths)[:MAX_UNTRACKED_LISTED]


def project_entries(repo: Repo, entries: list[StatusEntry], cwd: Path) -> list[StatusEntry]:
    """``entries`` without the untracked files of the tracking store (``store_files``): a
    default ``mlflow.db`` and ``mlruns/`` beside the code change with every run, and are not
    the project's."""
    store = store_paths(cwd)
    root = repo.working_tree_dir
    return [
        (code, path)
        for code, path in entries
        if code != "??" or not is_store_path(root / path.rstrip("/"), store)
    ]


def _worktree_state(repo: Repo, has_commit: bool, cwd: Path) -> dict[str, Any]:
    """``git status`` first; the diff is read only where tracked files changed (a clean tree has
    none to hash, so it costs one short process) and their size is under DIGEST_MAX_BYTES."""
    try:
        entries = status_entries(_finish_git(_start_git(repo, STATUS_ARGS)))
        entries = project_entries(repo, entries, cwd)
    except Exception as exc:
        return {"dirty": unavailable(f"git status failed: {first_line(exc)}")}
    changed, untracked = status_counts(entries)
    state: dict[str, Any] = {
        "dirty": changed > 0,
        "changed_count": changed,
        "untracked_count": untracked,
        "untracked_files": untracked_files(entries),
    }
    if not has_commit:
        return state
    if changed == 0:
        return {**state, "diff_digest": None, "diff_lines": 0}
    reason = f"the diff (or its files) is over {DIGEST_MAX_BYTES // 2**20} MiB: not hashed"
    try:
        diff = None
        if changed_bytes(repo, entries) <= DIGEST_MAX_BYTES:
            diff = read_diff(repo, keep_bytes=0, max_bytes=DIGEST_MAX_BYTES)
        if diff is None or diff.sha256 is None:
            return {**state, "diff_digest": unavailable(reason), "diff_lines": unavailable(reason)}
        digest = diff.sha256[:16] if diff.size else None
        return {**state, "diff_digest": digest, "diff_lines": diff.lines}
    except Exception as exc:
        return {**state, "diff_digest": unavailable(f"git diff failed: {first_line(exc)}")}


def probe(ctx: ProbeContext) -> dict[str, Any]:
    try:
        repo = open_repo(ctx.cwd)
    except Exception as exc:
        return unavailable(f"git failed: {first_line(exc)}")
    if repo is None:
        return unavailable(f"not a git repository: {ctx.cwd}")
    section: dict[str, Any] = {"root": str(repo.working_tree_dir)}
    try:
        head = git_files.head(repo)
        section["commit"] = head.commit or unavailable("no commits yet")
        section["branch"] = head.branch
    except Exception as exc:
        section["commit"] = unavailable(f"HEAD could not be read: {first_line(exc)}")
        section["branch"] = unavailable(f"HEAD could not be read: {first_line(exc)}")
    section.update(_worktree_state(repo, isinstance(section.get("commit"), str), ctx.cwd))
    try:
        section["remote_url"] = _remote_url(repo)
    except Exception as exc:
        section["remote_url"] = unavailable(f"git config could not be read: {first_line(exc)}")
    return section
