"""Fingerprint records read from a server before, kept on disk for the next ``explain``.

Why: a team explains the same experiment again and again as runs are added; reading 100,000
records over HTTP each time costs minutes, where the records themselves never change. A record
is filed under its digest, the section hashes and schema its run's tags carry
(``experiment.share_key``): runs with equal keys hold equal records, so any of them may stand
for another, and a run added since is read only if its key is new. Runs whose tags give no key
are read each time.

The files live beside the spool (``$MLFLOW_FINGERPRINT_SPOOL``'s parent, by default
``~/.cache/mlflow-fingerprint/records``), readable by their owner only, and are pruned, oldest
first, to :data:`MAX_BYTES`. A file that cannot be written or read is a miss, never a failure.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..stored_files import read_regular

MAX_BYTES = 512 << 20  # about 50,000 distinct records of 10 KB
FOLDER = "records"


def _name(key: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(key).encode()).hexdigest()[:40] + ".json"


@dataclass(frozen=True)
class RecordCache:
    root: Path
    max_bytes: int = MAX_BYTES

    @classmethod
    def beside_spool(cls) -> RecordCache:
        from ..settings import spool_root

        return cls(spool_root().parent / FOLDER)

    def get(self, key: Sequence[str]) -> bytes | None:
        """The filed record; a name that is no regular file (a FIFO, a link) is a miss: the
        folder is input like any stored file (``stored_files``)."""
        try:
            return read_regular(self.root / _name(key), follow_links=False)
        except OSError:  # UnreadableFile included
            return None

    def put(self, key: Sequence[str], data: bytes) -> None:
        """Written whole or not at all (a temporary file renamed over the name)."""
        with contextlib.suppress(OSError):
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".part-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.replace(tmp, self.root / _name(key))
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)

    def prune(self) -> None:
        """Delete the oldest files until the folder holds at most ``max_bytes``."""
        try:
            entries = [(e.stat().st_mtime, e.stat().st_size, e.path) for e in os.scandir(self.root)]
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                return
            with contextlib.suppress(OSError):
                os.unlink(path)
                total -= size
