"""Every reader of a stored file (``stored_files``): a FIFO, a device, a link where links are not
followed and a file past its bound are refused at once, as OSErrors saying why; a spool whose
files are FIFOs is read without waiting on them."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mlflow_fingerprint.errors import UnreadableFile
from mlflow_fingerprint.stored_files import bounded_chunks, open_regular, read_regular
from mlflow_fingerprint.tracking import spool as spool_module

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")


def test_a_fifo_a_device_and_a_link_are_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "record.json"
    os.mkfifo(fifo)
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    started = time.monotonic()
    for path, kwargs, reason in (
        (fifo, {}, "not a regular file"),
        ("/dev/zero", {}, "not a regular file"),
        (link, {"follow_links": False}, "a link"),
        (tmp_path, {}, "not a regular file"),
    ):
        with pytest.raises(UnreadableFile) as caught:
            read_regular(path, **kwargs)
        assert reason in str(caught.value.strerror)
    with pytest.raises(UnreadableFile), open_regular(fifo, writable=True):
        pass
    assert time.monotonic() - started < 2
    assert read_regular(link) == b"{}"  # followed where the caller says so


def test_a_file_past_its_bound_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 101)
    with pytest.raises(UnreadableFile, match="larger than"):
        read_regular(big, limit_bytes=100)
    assert read_regular(big, limit_bytes=101, timeout_s=None) == b"x" * 101
    with pytest.raises(UnreadableFile, match="larger than"):
        b"".join(bounded_chunks([b"x" * 60, b"x" * 60], "served.json", limit_bytes=100))


def test_a_spool_whose_files_are_fifos_is_read_without_waiting(tmp_path: Path) -> None:
    spool = spool_module.Spool.create(tmp_path)
    for name in (spool_module.ACKS, spool_module.QUARANTINE, spool_module.WRITER):
        (spool.path / name).unlink(missing_ok=True)
        os.mkfifo(spool.path / name)
    started = time.monotonic()
    assert spool.acked().offset == 0
    assert spool.quarantined() == []
    assert spool.writer() is None
    assert time.monotonic() - started < 2
