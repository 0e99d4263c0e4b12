"""The local spool: a crash-safe, append-only record of everything a run sends to MLflow.

Every run writes here first and uploads from here, so an unreachable or dying tracking server
costs nothing but a later ``fingerprint sync``. One directory per run:

- ``events.jsonl``: one JSON record per line (run start, tags, params, artifacts, metric values,
  run end), appended in batches, each batch fsync'd before anything is uploaded from it;
- ``acks.jsonl``: what MLflow acknowledged, as the byte offset in ``events.jsonl`` up to which
  every record is stored, plus the run id; appended and fsync'd after each accepted call, so an
  acknowledged record is never sent again;
- ``quarantine.jsonl``: records the store refused as invalid, each with the reason; a spool
  holding any is never deleted (nothing the store has not acknowledged is), and ``sync`` shows
  them until the user removes the spool;
- ``artifacts/``: the files the artifact records point to, written atomically;
- ``lock``: held (``flock``) by the process still writing the run, so ``sync`` leaves it alone;
- ``writer.json``: which process writes the run (pid, host, boot, start time), so that ``sync``
  can tell a writer that died without ending the run from one that may still end it.

A torn last line (a crash mid-write) is ignored by the reader: only newline-terminated lines count.

When the disk refuses a write (full, read-only), the spool keeps taking records in memory, after
those on disk, and readers see one sequence; ``full`` says why. Those records are not crash-safe
(nothing can be on that disk), but training goes on and the uploader still sends them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..settings import spool_root
from ..stored_files import open_regular, read_regular
from . import liveness

EVENTS = "events.jsonl"
ACKS = "acks.jsonl"
QUARANTINE = "quarantine.jsonl"
ARTIFACTS = "artifacts"
LOCK = "lock"
WRITER = "writer.json"
FALLBACKS = "fallback-roots.jsonl"
# The bound on a spool file read (``stored_files``): a long run's events of many gigabytes stay
# readable, a file of what a disk holds does not.
MAX_BYTES = 64 * 1024**3


def encode(record: Mapping[str, Any]) -> bytes:
    """One record as one line; NaN and infinities are kept (MLflow accepts them as metrics)."""
    return json.dumps(record, separators=(",", ":"), default=str).encode() + b"\n"


def _fsync_dir(path: Path) -> None:
    """Make a new directory entry durable, so a crash cannot lose a whole file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Ack:
    """How far MLflow has acknowledged ``events.jsonl``, and into which run."""

    offset: int = 0
    run_id: str | None = None


class Spool:
    """One run's spool directory. Appends are not locked here: one writer object owns a spool."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.full: OSError | None = None  # why the disk stopped taking records, if it did
        self._disk_end = 0  # where the in-memory records start, once the disk is full
        self._memory: list[bytes] = []
        self._memory_size = 0
        self._memory_ack = Ack()
        self._overflow: Path | None = None  # artifacts the spool's disk refused
        self.damage: list[str] = []  # what was found damaged and ignored, for ``sync`` to say

    def __repr__(self) -> str:
        return f"Spool({str(self.path)!r})"

    @classmethod
    def create(cls, root: Path | None = None) -> Spool:
        root = spool_root() if root is None else root
        root.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = root / f"{stamp}-{uuid.uuid4().hex[:12]}"
        (path / ARTIFACTS).mkdir(parents=True)
        (path / EVENTS).touch()
        with contextlib.suppress(OSError):  # without it, sync cannot end a run this process left
            _write_file(path, WRITER, encode(liveness.identity()))
        _fsync_dir(path)
        _fsync_dir(root)
        return cls(path)

    @property
    def spool_id(self) -> str:
        """Stable name of this run in the spool; also tagged on the MLflow run to find it again."""
        return self.path.name

    def append(self, lines: list[bytes]) -> int:
        """Append encoded records in one write and fsync; returns the new end offset. A write the
        disk refuses is undone (no torn or doubled record) and the records kept in memory."""
        data = b"".join(lines)
        if self.full is None:
            events = self.path / EVENTS
            start = events.stat().st_size
            try:
                with open(events, "ab") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                    return f.tell()
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.truncate(events, start)
                self._disk_end = start
                self.full = exc
        self._memory.append(data)
        self._memory_size += len(data)
        return self.size()

    def size(self) -> int:
        if self.full is not None:
            return self._disk_end + self._memory_size
        return (self.path / EVENTS).stat().st_size

    def write_artifact(self, artifact_path: str, name: str, data: bytes) -> Path:
        """Write (or replace) an artifact file atomically and durably; returns its path. Where
        the spool's disk refuses it, the file goes to a temporary directory instead."""
        try:
            return _write_file(self.path / ARTIFACTS / artifact_path, name, data)
        except OSError:
            if self._overflow is None:
                self._overflow = Path(tempfile.mkdtemp(prefix="mlflow-fingerprint-artifacts-"))
            return _write_file(self._overflow / artifact_path, name, data)

    def read_from(self, offset: int) -> Iterator[tuple[int, dict[str, Any]]]:
        """(end offset, record) for each complete line after ``offset``, from disk then memory;
        a torn tail on disk is skipped."""
        yield from _records(self._disk_lines(offset), offset)
        position = self._disk_end
        for chunk in list(self._memory):
            for line in chunk.splitlines(keepends=True):
                position += len(line)
                if position > offset:
                    yield from _records([line], position - len(line))

    def _disk_lines(self, offset: int) -> list[bytes]:
        if self.full is not None and offset >= self._disk_end:
            return []
        with open_regular(self.path / EVENTS, limit_bytes=MAX_BYTES) as f:
            f.seek(offset)
            if self.full is None:
                return list(f)
            return f.read(self._disk_end - offset).splitlines(keepends=True)

    def acked(self) -> Ack:
        """The furthest acknowledgement; later lines win. A damaged line, or an offset that is
        not the end of a record of ``events.jsonl`` (past its end, or mid-line), is ignored and
        said in ``damage``: trusting it could take unsent records for stored and delete them."""
        path = self.path / ACKS
        best = self._memory_ack
        if not path.exists():
            return best
        size = self.size()
        with contextlib.ExitStack() as stack:
            try:
                events = stack.enter_context(
                    open_regular(self.path / EVENTS, limit_bytes=MAX_BYTES)
                )
                lines = read_regular(path, limit_bytes=MAX_BYTES).splitlines()
            except OSError as exc:
                self._note(f"{ACKS}: not read ({exc.strerror or exc})")
                return best
            for line in lines:
                try:
                    entry = json.loads(line)
                    offset = int(entry.get("offset", 0))
                    run_id = entry.get("run_id")
                except (ValueError, TypeError, AttributeError):
                    self._note(f"{ACKS}: a damaged line was ignored")
                    continue
                if offset < best.offset:
                    continue  # an earlier acknowledgement: already passed
                if not self._record_end(events, offset, size):
                    self._note(f"{ACKS}: offset {offset} is no record's end; ignored")
                    continue
                if offset >= best.offset:
                    best = Ack(offset, run_id if isinstance(run_id, str) else best.run_id)
        return best

    def _record_end(self, events: BinaryIO, offset: int, size: int) -> bool:
        """Whether ``offset`` is 0 or just after a newline of the records (disk or memory)."""
        if offset == 0:
            return True
        if offset < 0 or offset > size:
            return False
        if self.full is not None and offset > self._disk_end:
            return True  # in the in-memory records, which only this process wrote
        events.seek(offset - 1)
        return events.read(1) == b"\n"

    def _note(self, problem: str) -> None:
        if problem not in self.damage:
            self.damage.append(problem)

    def quarantine(self, record: Mapping[str, Any], reason: str) -> None:
        """Keep a record the store refused as invalid, with the reason, for the user to see."""
        entry = {"reason": reason, "record": dict(record), "time": time.time()}
        with open(self.path / QUARANTINE, "ab") as f:
            f.write(encode(entry))
            f.flush()
            os.fsync(f.fileno())

    def quarantined(self) -> list[dict[str, Any]]:
        """The refused records with their reasons (damaged lines shown as such)."""
        try:
            lines = read_regular(self.path / QUARANTINE, limit_bytes=MAX_BYTES).splitlines()
        except OSError:
            return []
        found = []
        for line in lines:
            try:
                found.append(json.loads(line))
            except ValueError:
                found.append({"reason": "a damaged quarantine line", "record": {}})
        return found

    def settled(self) -> bool:
        """Whether the store acknowledged every record and refused none: only then may the spool
        be deleted."""
        return self.acked().offset >= self.size() and not (self.path / QUARANTINE).exists()

    def ack(self, offset: int, run_id: str | None, note: str | None = None) -> None:
        """Record an acknowledgement durably, or in memory where the disk refuses it."""
        if offset >= self._memory_ack.offset:
            self._memory_ack = Ack(offset, run_id or self._memory_ack.run_id)
        entry: dict[str, Any] = {"offset": offset, "run_id": run_id, "time": time.time()}
        if note:
            entry["note"] = note
        with contextlib.suppress(OSError), open(self.path / ACKS, "ab") as f:
            f.write(encode(entry))
            f.flush()
            os.fsync(f.fileno())

    def remove(self) -> None:
        """Delete the spool once MLflow has stored all of it: nothing in it is needed any more."""
        for folder in (self.path, self._overflow):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    def writer(self) -> dict[str, Any] | None:
        """What ``liveness.identity()`` said of the process that created this spool, if known."""
        try:
            found = json.loads(read_regular(self.path / WRITER))
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    def drop_torn_tail(self) -> None:
        """Cut a line the writer died in the middle of, so that a record appended after a crash
        starts on a line of its own instead of being read as part of the damaged one."""
        with open_regular(self.path / EVENTS, limit_bytes=MAX_BYTES, writable=True) as f:
            size = end = f.seek(0, os.SEEK_END)
            while end > 0:  # back from the end, a block at a time, to the last newline
                start = max(0, end - 65536)
                f.seek(start)
                newline = f.read(end - start).rfind(b"\n")
                if newline >= 0:
                    end = start + newline + 1
                    break
                end = start
            if end < size:
                f.truncate(end)
                os.fsync(f.fileno())

    @contextlib.contextmanager
    def locked(self) -> Iterator[bool]:
        """Try to take the writer lock without waiting; yields whether we hold it."""
        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)  # closing the descriptor releases the lock


def _write_file(folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    tmp = folder / f".{name}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    _fsync_dir(folder)
    return target


def _records(lines: Iterable[bytes], offset: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """Complete lines as (end offset, record); stops at a torn line. A damaged line comes out as
    a record of no kind holding its text, so the replay quarantines it rather than lose it."""
    for line in lines:
        if not line.endswith(b"\n"):
            return
        offset += len(line)
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            record = {"damaged": line.decode("utf-8", "replace")[:2000]}
        yield offset, record


def open_spool(root: Path | None = None) -> tuple[Spool, str | None]:
    """A new spool under ``root``; where that cannot be created (full, read-only), one under a
    temporary directory, remembered (:func:`fallback_roots`) so that ``fingerprint sync`` finds
    it, with the reason to tell the user."""
    try:
        return Spool.create(root), None
    except OSError as exc:
        fallback = Path(tempfile.mkdtemp(prefix="mlflow-fingerprint-spool-"))
        remembered = _remember_fallback(spool_root() if root is None else root, fallback)
        how = "`fingerprint sync` finds it" if remembered else "run `fingerprint sync --spool-dir"
        how += "" if remembered else f" {fallback}` to upload it"
        return Spool.create(fallback), f"cannot create the spool ({exc}); using {fallback} ({how})"


def _fallback_index() -> Path:
    """Where the fallback roots are remembered: the user's cache, not the spool root (which is
    the directory that could not be written)."""
    return Path.home() / ".cache" / "mlflow-fingerprint" / FALLBACKS


def _remember_fallback(root: Path, fallback: Path) -> bool:
    """Note that spools meant for ``root`` went to ``fallback``; False if that cannot be noted."""
    try:
        index = _fallback_index()
        index.parent.mkdir(parents=True, exist_ok=True)
        with open(index, "ab") as f:
            f.write(encode({"root": str(root), "fallback": str(fallback)}))
            f.flush()
            os.fsync(f.fileno())
        return True
    except OSError:
        return False


def fallback_roots(root: Path | None = None) -> list[Path]:
    """The temporary roots that took spools meant for ``root`` (default: the configured root)
    and still exist."""
    root = spool_root() if root is None else root
    try:
        lines = read_regular(_fallback_index()).splitlines()
    except OSError:
        return []
    found: list[Path] = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("root") == str(root):
            path = Path(str(entry.get("fallback")))
            if path.is_dir() and path not in found:
                found.append(path)
    return found


def list_spools(root: Path | None = None) -> list[Spool]:
    """Every run directory under ``root``, oldest first (names start with a UTC time stamp)."""
    root = spool_root() if root is None else root
    if not root.is_dir():
        return []
    return [Spool(p) for p in sorted(root.iterdir()) if (p / EVENTS).is_file()]
