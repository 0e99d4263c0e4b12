"""Reading a file someone else wrote: a record on the command line, a run's artifact on a local
store or downloaded from a remote one, a spool's entries. Every such reader goes through here.

Such a file is input. A FIFO in its place makes ``open`` wait for a writer that never comes (a
FIFO ``fingerprint/fingerprint.json`` artifact held ``show``, ``audit``, ``diff`` and
``explain`` until killed), a device never ends (``/dev/zero``), and a file of gigabytes fills
memory before its first byte is parsed. So a file is opened without waiting (``O_NONBLOCK``:
a FIFO's open returns at once), read only where ``fstat`` of what was opened says it is a
regular file within a size bound, and read on a helper thread given a time limit, since a read
of a network file system can still block. A link is followed only where the caller says so: an
artifact is read as the store holds it, never through a link to elsewhere.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import UnreadableFile

# A record, a report, an artifact we read whole: far above the largest real one (a fingerprint
# with thousands of packages is a few megabytes), far below what fills a machine's memory.
MAX_BYTES = 256 * 1024 * 1024
# How long a read may take before it is given up (a hung network mount, a file system in user
# space that never answers): a local file of MAX_BYTES is read in well under a second.
READ_TIMEOUT_S = 5.0
CHUNK_BYTES = 1024 * 1024
_FLAGS = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


@contextlib.contextmanager
def open_regular(
    path: str | Path,
    *,
    limit_bytes: int = MAX_BYTES,
    follow_links: bool = True,
    writable: bool = False,
) -> Iterator[BinaryIO]:
    """``path`` opened in binary, for reading (and writing where ``writable``: a spool's torn
    tail cut), where it is a regular file of at most ``limit_bytes``; else
    :class:`UnreadableFile` (an OSError, with ``strerror`` the reason in words). For a file read
    as a stream (a spool's events); :func:`read_regular` reads one whole with a time limit."""
    flags = _FLAGS | (os.O_RDWR if writable else os.O_RDONLY)
    flags |= 0 if follow_links else getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise UnreadableFile(errno.ELOOP, "a link, not a regular file", str(path)) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > limit_bytes:
            raise UnreadableFile(errno.EFBIG, f"larger than {_size(limit_bytes)}", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb+" if writable else "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def read_regular(
    path: str | Path,
    *,
    limit_bytes: int = MAX_BYTES,
    follow_links: bool = True,
    timeout_s: float | None = READ_TIMEOUT_S,
) -> bytes:
    """The content of ``path``, a regular file of at most ``limit_bytes`` read within
    ``timeout_s``; else :class:`UnreadableFile`, or the OSError opening it raised. ``None``:
    read on the calling thread, for a caller already bounded in time (a capture probe)."""
    if timeout_s is None:
        return _read(path, limit_bytes, follow_links)
    done: list[bytes | BaseException] = []

    def read() -> None:
        try:
            done.append(_read(path, limit_bytes, follow_links))
        except BaseException as exc:  # handed to the caller's thread
            done.append(exc)

    reader = threading.Thread(target=read, name="mfp-read-file", daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not done:
        raise UnreadableFile(errno.ETIMEDOUT, f"no answer within {timeout_s:g} s", str(path))
    found = done[0]
    if isinstance(found, BaseException):
        raise found
    return found


def _read(path: str | Path, limit_bytes: int, follow_links: bool) -> bytes:
    with open_regular(path, limit_bytes=limit_bytes, follow_links=follow_links) as f:
        # in chunks: a read of ``limit_bytes`` would take that much memory before the first byte,
        # and the bound holds for a file that grows while it is read
        return b"".join(
            bounded_chunks(iter(lambda: f.read(CHUNK_BYTES), b""), str(path), limit_bytes)
        )


def bounded_chunks(
    chunks: Iterable[bytes], where: str, limit_bytes: int = MAX_BYTES
) -> Iterator[bytes]:
    """``chunks`` of a file a server sends (an artifact), refused past ``limit_bytes`` as a file
    on disk is."""
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit_bytes:
            raise UnreadableFile(errno.EFBIG, f"larger than {_size(limit_bytes)}", where)
        yield chunk


def _size(limit_bytes: int) -> str:
    return f"{limit_bytes / (1024 * 1024):g} MB"
