"""The spool on a real file system: append, read back, acknowledgements, the writer lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow_fingerprint.tracking.spool import Ack, Spool, encode, list_spools


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


def test_list_spools_finds_run_directories_only(tmp_path: Path) -> None:
    made = [Spool.create(tmp_path) for _ in range(3)]
    (tmp_path / "stray-file").write_text("x")
    assert sorted(s.path for s in list_spools(tmp_path)) == sorted(s.path for s in made)
    assert list_spools(tmp_path / "missing") == []


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
