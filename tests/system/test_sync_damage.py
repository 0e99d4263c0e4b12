"""A spool that is partly damaged or partly refused never loses the rest: a record the store
refuses as invalid is quarantined with the reason and shown; a missing artifact file, a damaged
start line or a bogus acknowledged offset is reported for that spool alone, the spool is kept,
the other spools are still uploaded, and a healthy store is never called unreachable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_sync import runs_in, spooled_run

from mlflow_fingerprint.cli.main import main as cli
from mlflow_fingerprint.tracking.spool import Spool, encode, list_spools


def sync(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli(["sync"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def without_end(spool: Spool) -> None:
    events = spool.path / "events.jsonl"
    lines = [line for line in events.read_bytes().splitlines(keepends=True) if b'"end"' not in line]
    events.write_bytes(b"".join(lines))


def test_a_record_the_store_refuses_is_quarantined_shown_and_kept(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = spooled_run(spool_dir, sqlite_tracking_uri, steps=2, name="refused")
    without_end(spool)
    spool.append(
        [
            encode({"e": "params", "params": {"seed": "1", "lr": "0.1"}}),  # seed=0 already
            encode({"e": "end", "status": "FINISHED", "end_time": 1_700_000_100_000}),
        ]
    )
    code, out, err = sync(capsys)
    assert code == 2
    assert "1 records refused by the store" in out
    assert "quarantine.jsonl" in err
    assert "unreachable" not in out + err
    [entry] = spool.quarantined()
    assert entry["record"] == {"e": "params", "params": {"seed": "1"}}
    assert "seed" in entry["reason"]
    assert spool.path.is_dir()  # never deleted while it holds a refused record
    [run] = runs_in("spooled")
    assert run.data.params == {"seed": "0", "lr": "0.1"}
    assert run.info.status == "FINISHED"


def test_a_missing_artifact_file_is_reported_for_its_spool_and_the_others_are_synced(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = spooled_run(spool_dir, sqlite_tracking_uri, steps=3, name="broken")
    for file in (broken.path / "artifacts").rglob("*.json"):
        file.unlink()  # e.g. the /tmp overflow folder cleaned
    spooled_run(spool_dir, sqlite_tracking_uri, steps=3, name="healthy")
    code, out, err = sync(capsys)
    assert code == 2
    assert "unreachable" not in out + err
    assert "is missing" in out
    runs = {r.info.run_name: r for r in runs_in("spooled")}
    assert set(runs) == {"broken", "healthy"}
    assert len(runs["broken"].data.metrics) == 1  # the rest of the broken spool got through
    assert runs["broken"].info.status == "FINISHED"
    assert [s.path for s in list_spools(spool_dir)] == [broken.path]


def test_a_damaged_start_line_keeps_its_spool_and_says_why(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damaged = spooled_run(spool_dir, sqlite_tracking_uri, steps=3, name="damaged")
    events = damaged.path / "events.jsonl"
    data = events.read_bytes()
    events.write_bytes(b'{"e":"start","spool_id' + b"\x00" * 10 + data[data.index(b"\n") :])
    size = events.stat().st_size
    spooled_run(spool_dir, sqlite_tracking_uri, steps=3, name="fine")
    code, out, err = sync(capsys)
    assert code == 2
    assert "no readable start record" in out + err
    assert "unreachable" not in out + err
    assert "run None" not in out  # no run was made for it, and the line says so
    assert "0 other records (no run made); stopped" in out
    assert [r.info.run_name for r in runs_in("spooled")] == ["fine"]
    assert events.stat().st_size == size  # nothing of it deleted or acknowledged
    assert damaged.acked().offset == 0


def test_a_bogus_acknowledged_offset_is_ignored_and_reported(
    sqlite_tracking_uri: str, spool_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = spooled_run(spool_dir, sqlite_tracking_uri, steps=4, name="bogus")
    (spool.path / "acks.jsonl").write_bytes(json.dumps({"offset": 10**9}).encode() + b"\n")
    code, out, _ = sync(capsys)
    assert code == 0
    assert "offset 1000000000 is no record's end" in out
    [run] = runs_in("spooled")
    assert len(run.data.metrics) == 1
    assert run.info.status == "FINISHED"
