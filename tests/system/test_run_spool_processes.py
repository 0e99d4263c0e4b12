"""The spool across processes: its lock excludes another writer, a disk that refuses writes, and
the process recorded in a new spool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mlflow_fingerprint.tracking.spool import Spool


def test_the_writer_lock_excludes_another_process(tmp_path: Path) -> None:
    spool = Spool.create(tmp_path)
    probe = (
        "import sys\nfrom pathlib import Path\n"
        "from mlflow_fingerprint.tracking.spool import Spool\n"
        f"with Spool(Path({str(spool.path)!r})).locked() as held:\n    sys.exit(0 if held else 3)"
    )
    with spool.locked() as held:
        assert held
        busy = subprocess.run([sys.executable, "-c", probe], check=False, timeout=60)
        assert busy.returncode == 3
    free = subprocess.run([sys.executable, "-c", probe], check=False, timeout=60)
    assert free.returncode == 0


def test_records_the_disk_refuses_continue_in_memory_in_order(tmp_path: Path) -> None:
    """A file-size limit makes the kernel refuse the write (EFBIG), as a full disk would."""
    code = f"""
import json, resource, signal
from pathlib import Path
from mlflow_fingerprint.tracking.spool import Spool, encode
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
spool = Spool.create(Path({str(tmp_path)!r}))
first = spool.append([encode({{"n": 0}}), encode({{"n": 1}})])
resource.setrlimit(resource.RLIMIT_FSIZE, (first + 20, resource.RLIM_INFINITY))
spool.append([encode({{"n": 2, "pad": "x" * 40}})])  # refused: kept in memory
spool.append([encode({{"n": 3}})])
spool.ack(first, "run-1")
print(json.dumps({{
    "full": str(spool.full),
    "on_disk": (spool.path / "events.jsonl").stat().st_size,
    "first": first,
    "size": spool.size(),
    "all": [r["n"] for _, r in spool.read_from(0)],
    "after_ack": [r["n"] for _, r in spool.read_from(spool.acked().offset)],
    "ends": [end for end, _ in spool.read_from(0)],
}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "File too large" in out["full"]
    assert out["on_disk"] == out["first"]  # the refused write left no torn record behind
    assert out["all"] == [0, 1, 2, 3]
    assert out["after_ack"] == [2, 3]
    assert out["ends"][-1] == out["size"]
    assert out["ends"] == sorted(out["ends"])


def test_a_new_spool_records_the_process_that_writes_it(tmp_path: Path) -> None:
    """What ``fingerprint sync`` needs to tell a dead writer from a live one later."""
    code = (
        "import os, sys; from pathlib import Path\n"
        "from mlflow_fingerprint.tracking.spool import Spool\n"
        f"print(os.getpid(), Spool.create(Path({str(tmp_path)!r})).path)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    pid, path = out.stdout.split()
    recorded = Spool(Path(path)).writer()
    assert recorded is not None
    assert recorded["pid"] == int(pid)
    assert recorded["hostname"] == os.uname().nodename
    assert isinstance(recorded["start_ticks"], int)
    assert Spool(tmp_path / "no-such-spool").writer() is None
