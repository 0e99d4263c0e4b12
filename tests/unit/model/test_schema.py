"""Reading records of any schema version: migration, refusals of newer and malformed records."""

from __future__ import annotations

import pytest

from mlflow_fingerprint.errors import FingerprintError
from mlflow_fingerprint.model.record import SCHEMA_VERSION, SECTIONS
from mlflow_fingerprint.model.schema import check_depth, check_version, migrate
from support.records import cpu_record


def test_migrate_fills_absent_sections_as_unavailable() -> None:
    out = migrate({"schema_version": SCHEMA_VERSION, "torch": {"version": "2.4.0"}})
    assert out["torch"] == {"version": "2.4.0"}
    assert set(SECTIONS) <= set(out)
    assert out["gpu"] == {"unavailable": "not present in this record"}


def test_migrate_keeps_a_real_capture() -> None:
    record = cpu_record()
    assert migrate(record)["torch"] == record["torch"]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ([], "expected a JSON object"),
        ({"schema_version": True}, "no integer schema_version"),
        ({"schema_version": 0, "torch": {}}, "not a valid version"),
        ({"schema_version": SCHEMA_VERSION, "torch": 3}, "section 'torch' is not an object"),
        ({"schema_version": SCHEMA_VERSION, "torch": {}, "hashes": {"a": 1}}, "'hashes'"),
        ({"schema_version": SCHEMA_VERSION, "hashes": {}}, "none of the sections"),
    ],
)
def test_migrate_refuses_a_malformed_record(record: object, message: str) -> None:
    with pytest.raises(FingerprintError, match=message):
        migrate(record)


def test_a_newer_record_is_refused_with_the_upgrade() -> None:
    with pytest.raises(FingerprintError, match=r"newer than this release reads.*pip install"):
        check_version(SCHEMA_VERSION + 1, "run abc")
    check_version(SCHEMA_VERSION)
    check_version("2")  # not an integer: left to migrate's shape checks


def test_check_depth_refuses_deep_nesting_without_recursion() -> None:
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(FingerprintError, match="more than 64 levels"):
        check_depth(deep)
    check_depth({"a": [[{"b": 1}]]})
