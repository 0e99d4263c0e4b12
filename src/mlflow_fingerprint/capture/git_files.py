"""A git repository read from its files: where it is, what HEAD names, and its remotes' URLs.

Why not GitPython: importing it costs about half a second, the largest part of a process's first
capture, and the probe needs only what a few small files say (``.git``, ``HEAD``, a ref or
``packed-refs``, ``config``). What needs git itself (``status``, ``diff``) runs git
(``capture/git.py``). A repository whose refs are not files (git's ``reftable`` format, 2.45 and
later) is said to be unreadable here rather than read wrong: its HEAD names a placeholder ref.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

MAX_REF_DEPTH = 5  # symbolic refs pointing at symbolic refs: git itself stops at 5
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256
SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
ENTRY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


@dataclass(frozen=True)
class Repo:
    """A repository found on disk. ``git_dir`` is this working tree's own (a linked worktree's
    ``.git`` file points to it); ``common_dir`` holds what its worktrees share: refs, config."""

    working_tree_dir: Path
    git_dir: Path
    common_dir: Path

    @property
    def reftable(self) -> bool:
        """Refs kept in a reftable, not in files this module reads."""
        return (self.common_dir / "reftable").is_dir()


def _path_from(base: Path, text: str) -> Path:
    """A path a git file holds (``gitdir:``, ``commondir``): absolute, or relative to ``base``."""
    named = Path(text.strip())
    return named if named.is_absolute() else Path(os.path.normpath(base / named))


def _git_dir_of(dot_git: Path) -> Path | None:
    """The git dir a ``.git`` entry names: itself, or the path in a ``gitdir:`` file."""
    if dot_git.is_dir():
        return dot_git
    if not dot_git.is_file():
        return None
    try:
        text = dot_git.read_text(errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    return _path_from(dot_git.parent, text[len("gitdir:") :])


def find(start: Path) -> Repo | None:
    """The repository ``start`` is in (``start`` or the nearest folder above it with a valid
    ``.git``), or None."""
    start = Path(os.path.normpath(os.path.abspath(start)))  # as given, links kept (as git does)
    for folder in (start, *start.parents):
        git_dir = _git_dir_of(folder / ".git")
        if git_dir is None or not (git_dir / "HEAD").is_file():
            continue
        common = git_dir
        link = git_dir / "commondir"
        if link.is_file():
            common = _path_from(git_dir, link.read_text(errors="replace"))
        return Repo(folder, git_dir, common)
    return None


def _packed(repo: Repo, ref: str) -> str | None:
    packed = repo.common_dir / "packed-refs"
    if not packed.is_file():
        return None
    for line in packed.read_text(errors="replace").splitlines():
        if line.startswith(("#", "^")):
            continue
        oid, _, name = line.partition(" ")
        if name.strip() == ref:
            return oid
    return None


def resolve(repo: Repo, ref: str) -> str | None:
    """The object id ``ref`` (``refs/heads/main``) names: its loose file (this worktree's, then
    the shared one), else ``packed-refs``; None where it names nothing yet (no commit on it).
    A ref outside ``refs/`` (or climbing out with ``..``) is refused, as git refuses it: a
    crafted HEAD must not make this read a file elsewhere."""
    for _ in range(MAX_REF_DEPTH):
        if not ref.startswith("refs/") or ".." in ref.split("/"):
            raise ValueError(f"{ref!r} is not a ref under refs/")
        value = None
        for base in (repo.git_dir, repo.common_dir):
            path = base / ref
            if path.is_file():
                value = path.read_text(errors="replace").strip()
                break
        if value is None:
            value = _packed(repo, ref)
        if value is None:
            return None
        if not value.startswith("ref:"):
            if not OBJECT_ID.fullmatch(value):
                raise ValueError(f"{ref} holds no object id")
            return value
        ref = value[len("ref:") :].strip()
    raise ValueError(f"symbolic refs nested over {MAX_REF_DEPTH} deep")


@dataclass(frozen=True)
class Head:
    """What HEAD names: the commit (None before the first commit) and the branch (None when
    HEAD is detached)."""

    commit: str | None
    branch: str | None


def head(repo: Repo) -> Head:
    """HEAD as its files say (ValueError where they hold something git would refuse, or where
    the refs are kept in a reftable)."""
    if repo.reftable:
        raise ValueError("its refs are kept in a reftable, which is not read here")
    text = (repo.git_dir / "HEAD").read_text(errors="replace").strip()
    if not text.startswith("ref:"):
        if not OBJECT_ID.fullmatch(text):
            raise ValueError("HEAD holds neither a ref nor an object id")
        return Head(text, None)
    ref = text[len("ref:") :].strip()
    return Head(resolve(repo, ref), ref.removeprefix("refs/heads/"))


def _value(raw: str) -> str:
    """A config value: quotes removed, escapes undone, a comment outside quotes dropped."""
    out, quoted, i = [], False, 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        i += 1
    return "".join(out).strip()


def remote_urls(repo: Repo) -> dict[str, str]:
    """Each remote's first ``url`` in the repository's config, in the order they appear."""
    config = repo.common_dir / "config"
    if not config.is_file():
        return {}
    urls: dict[str, str] = {}
    remote: str | None = None
    for line in config.read_text(errors="replace").splitlines():
        section = SECTION.match(line)
        if section:
            name, sub, rest = section.groups()
            remote = sub if name.lower() == "remote" and sub is not None else None
            line = rest  # a key may follow the header on its line
            if not line.strip():
                continue
        entry = ENTRY.match(line)
        if remote is not None and entry and entry.group(1).lower() == "url":
            urls.setdefault(remote, _value(entry.group(2) or ""))
    return urls
