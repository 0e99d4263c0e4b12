"""The on-disk cache of records read from a server: bounded, oldest first out, never failing."""

from __future__ import annotations

import os
from pathlib import Path

from mlflow_fingerprint.tracking import record_cache


def test_the_cache_is_bounded_and_a_miss_never_fails(tmp_path: Path) -> None:
    cache = record_cache.RecordCache(tmp_path / "records", max_bytes=25)
    assert cache.get(("a",)) is None
    for age, name in enumerate("abc"):
        cache.put((name,), name.encode() * 10)
        os.utime(cache.root / record_cache._name((name,)), (1000 + age, 1000 + age))
    cache.prune()
    assert cache.get(("a",)) is None  # the oldest went first
    assert cache.get(("c",)) == b"c" * 10
    assert sum(f.stat().st_size for f in cache.root.iterdir()) <= 25
    record_cache.RecordCache(tmp_path / "file-not-folder").put(("x",), b"x")  # parent is made
    (tmp_path / "blocked").write_text("")
    record_cache.RecordCache(tmp_path / "blocked" / "records").put(
        ("x",), b"x"
    )  # cannot: a miss later
