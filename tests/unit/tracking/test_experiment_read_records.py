"""``read_records``: one read per distinct record (runs whose section hash tags and schema are
equal share it), each run's own read where its tags cannot say (a hash ``unavailable`` or absent)
or where the run read for its key has no artifact. Real files in local artifact roots."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from mlflow_fingerprint import layout
from mlflow_fingerprint.tracking import experiment as reads


def run(tmp: Path, run_id: str, tags: dict[str, str], record: bytes | None) -> reads.StoredRun:
    root = tmp / run_id / "artifacts"
    if record is not None:
        (root / "fingerprint").mkdir(parents=True)
        (root / layout.FINGERPRINT_ARTIFACT).write_bytes(record)
    return reads.StoredRun(
        run_id, None, "FINISHED", "1", str(root), MappingProxyType({}),
        MappingProxyType(tags), MappingProxyType({}), MappingProxyType({}),
    )  # fmt: skip


def hashes(value: str) -> dict[str, str]:
    return {**dict.fromkeys(layout.HASH_TAGS.values(), value), layout.TAG_SCHEMA: "1"}


def test_runs_with_equal_hash_tags_share_one_read(tmp_path: Path, monkeypatch) -> None:
    read: list[str] = []
    real = reads._read_local
    monkeypatch.setattr(
        reads, "_read_local", lambda root, path: read.append(root.parent.name) or real(root, path)
    )
    runs = [
        run(tmp_path, "a1", hashes("h1"), b"A1"),
        run(tmp_path, "a2", hashes("h1"), b"A2"),  # claims a1's record: shares a1's read
        run(tmp_path, "b1", hashes("h2"), None),  # the first of its key has no artifact...
        run(tmp_path, "b2", hashes("h2"), b"B2"),  # ...so each of that key is read
        run(tmp_path, "u1", {**hashes("h1"), layout.TAG_HASH_ENV: "unavailable"}, b"U1"),
        run(tmp_path, "n1", {}, b"N1"),
    ]  # fmt: skip
    found = reads.read_records(runs, "sqlite:///unused.db")
    assert found == {"a1": b"A1", "a2": b"A1", "b1": None, "b2": b"B2", "u1": b"U1", "n1": b"N1"}
    assert found["a1"] is found["a2"]
    assert sorted(read) == ["a1", "b1", "b2", "n1", "u1"]


@pytest.mark.parametrize("schema", ["1", "2"])
def test_another_schema_is_another_record(tmp_path: Path, schema: str) -> None:
    a = run(tmp_path, "a", hashes("h"), b"A")
    b = run(tmp_path, "b", {**hashes("h"), layout.TAG_SCHEMA: schema}, b"B")
    found = reads.read_records([a, b], "sqlite:///unused.db")
    assert found["b"] == (b"A" if schema == "1" else b"B")
