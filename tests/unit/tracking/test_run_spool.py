"""The spool on a real file system: append, read back, acknowledgements, the writer lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlflow_fingerprint.tracking.spool import Ack, Spool, encode, list_spools, spool_root


def test_root_is_the_environment_variable_else_the_user_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MLFLOW_FINGERPRINT_SPOOL", str(tmp_path / "s"))
    assert spool_root() == tmp_path / "s"
    monkeypatch.delenv("MLFLOW_FINGERPRINT_SPOOL")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert spool_root() == tmp_path / ".cache" / "mlflow-fingerprint" / "spool"


def test_records_read_back_in_order_from_any_offset(tmp_path: Path) -> None:
    spool = Spool.create(tmp_path)
    end = spool.append([encode({"e": "m", "k": "a", "v": float("nan")}), encode({"e": "end"})])
    assert end == spool.size()
    records = list(spool.read_from(0))
    assert [r["e"] for _, r in records] == ["m", "end"]
    assert records[0][1]["v"] != records[0][1]["v"]  # NaN survives the round trip
    first_end = records[0][0]
    assert [r["e"] for _, r in spool.read_from(first_end)] == ["end"]
    assert list(spool.read_from(end)) == []


def test_a_torn_line_is_skipped_and_a_damaged_one_kept_for_the_quarantine(tmp_path: Path) -> None:
    spool = Spool.create(tmp_path)
    spool.append([encode({"n": 1}), b"not json\n", encode({"n": 2})])
    with open(spool.path / "events.jsonl", "ab") as f:
        f.write(b'{"n": 3')  # a write cut short
    assert [r.get("n", r.get("damaged")) for _, r in spool.read_from(0)] == [1, "not json\n", 2]


def test_acknowledgement_is_the_furthest_offset_and_keeps_the_run_id(tmp_path: Path) -> None:
    spool = Spool.create(tmp_path)
    assert spool.acked().offset == 0
    assert spool.acked().run_id is None
    spool.ack(10, "run-1")
    spool.ack(30, None)
    spool.ack(20, "run-1")  # a late acknowledgement never moves it back
    with open(spool.path / "acks.jsonl", "ab") as f:
        f.write(b'{"offset": 99')
    assert spool.acked().offset == 30
    assert spool.acked().run_id == "run-1"


def test_an_acknowledgement_that_is_no_records_end_is_ignored_and_said(tmp_path: Path) -> None:
    spool = Spool.create(tmp_path)
    end = spool.append([encode({"n": 1}), encode({"n": 2})])
    first = len(encode({"n": 1}))
    acks = [{"offset": first, "run_id": "r"}, {"offset": 10**9}, {"offset": first + 2}]
    (spool.path / "acks.jsonl").write_bytes(b"".join(encode(a) for a in acks))
    fresh = Spool(spool.path)  # as sync reads it: nothing acknowledged in this process's memory
    assert fresh.acked() == Ack(first, "r")
    assert not fresh.settled()
    assert len(fresh.damage) == 2
    assert end > first


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


def test_list_spools_finds_run_directories_only(tmp_path: Path) -> None:
    made = [Spool.create(tmp_path) for _ in range(3)]
    (tmp_path / "stray-file").write_text("x")
    assert sorted(s.path for s in list_spools(tmp_path)) == sorted(s.path for s in made)
    assert list_spools(tmp_path / "missing") == []


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


@pytest.mark.parametrize("tail", [b"", b'{"e":"m","k":"loss","v":0.', b"x" * 200_000])
def test_drop_torn_tail_cuts_only_an_unfinished_line(tmp_path: Path, tail: bytes) -> None:
    spool = Spool.create(tmp_path)
    whole = spool.append([encode({"n": 1}), encode({"n": 2})])
    with open(spool.path / "events.jsonl", "ab") as f:
        f.write(tail)
    spool.drop_torn_tail()
    assert spool.size() == whole
    spool.append([encode({"n": 3})])
    assert [r["n"] for _, r in spool.read_from(0)] == [1, 2, 3]
