"""The Fingerprint record: frozen, round-trips through JSON, refuses what it cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mlflow_fingerprint as mfp
from mlflow_fingerprint.model.fingerprint import (
    SCHEMA_VERSION,
    SECTIONS,
    Fingerprint,
    FingerprintError,
    get_path,
)
from mlflow_fingerprint.model.hashing import compute_hashes, strip_volatile


@pytest.fixture(scope="module")
def fp() -> Fingerprint:
    return mfp.capture()


def test_every_section_is_present(fp: Fingerprint) -> None:
    record = fp.to_dict()
    assert record["schema_version"] == SCHEMA_VERSION
    for name in (*SECTIONS, "hashes"):
        assert name in record, name


def test_sections_are_deeply_frozen(fp: Fingerprint) -> None:
    with pytest.raises(TypeError):
        fp.sections["torch"]["version"] = "0.0"  # type: ignore[index]
    with pytest.raises(AttributeError):
        fp.schema_version = 2  # type: ignore[misc]
    assert isinstance(fp.sections["packages"]["distributions"], type(fp.sections))


def test_to_dict_returns_a_mutable_copy(fp: Fingerprint) -> None:
    record = fp.to_dict()
    record["torch"]["version"] = "edited"
    assert fp.get("torch.version") != "edited"


def test_json_round_trip_keeps_record_and_hashes(fp: Fingerprint, tmp_path: Path) -> None:
    path = tmp_path / "fp.json"
    path.write_text(fp.to_json())
    loaded = Fingerprint.load(path)
    assert loaded.to_dict() == fp.to_dict()
    assert compute_hashes(loaded.to_dict()) == dict(fp.hashes)


def test_dotted_get_reads_lists(fp: Fingerprint) -> None:
    assert fp.get("hashes.env") == fp.hashes["env"]
    assert fp.get("no.such.field", "dflt") == "dflt"


def test_dotted_get_gives_what_to_dict_holds_as_plain_values() -> None:
    """``get`` reads the frozen record without thawing all of it: what it returns is still the
    plain value ``to_dict()`` holds (lists and dicts, not tuples and read-only mappings)."""
    fp = Fingerprint(
        schema_version=SCHEMA_VERSION,
        tool_version="0",
        captured_at="2026-01-01T00:00:00Z",
        sections={"gpu": {"devices": [{"name": "A", "caps": [8, 0]}]}, "extra": {"k": 1}},
        hashes={"env": "abc"},
    )
    record = fp.to_dict()
    for dotted in ("gpu", "gpu.devices", "gpu.devices.0", "gpu.devices.0.caps", "cuda", "extra"):
        value = fp.get(dotted)
        assert value == get_path(record, dotted), dotted
        assert type(value) in (dict, list), dotted
    assert fp.get("gpu.devices.0.caps.1") == 0
    assert fp.get("cuda") == {"unavailable": "not captured"}
    assert fp.get("schema_version") == SCHEMA_VERSION
    assert fp.get("hashes") == {"env": "abc"}
    assert fp.get("gpu.devices.1", ("kept",)) == ("kept",)  # a default comes back as given


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not valid JSON"),
        ("{", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"schema_version": "1"}', "no integer schema_version"),
        ('{"schema_version": 99}', "newer than this release"),
        ('{"schema_version": 0}', "not a valid version"),
        ('{"schema_version": 1, "gpu": [1]}', "section 'gpu' is not an object"),
        ('{"schema_version": 1, "hashes": {"env": 3}}', "'hashes' is not an object of strings"),
        ("[" * 100_000, "not valid JSON"),
    ],
)
def test_bad_records_raise_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(FingerprintError, match=message) as info:
        Fingerprint.from_json(text)
    assert "\n" not in str(info.value)


def test_missing_sections_are_filled_as_unavailable() -> None:
    fp = Fingerprint.from_json(json.dumps({"schema_version": 1, "torch": {"version": "2.13.0"}}))
    assert fp.get("gpu") == {"unavailable": "not present in this record"}
    assert fp.get("torch.version") == "2.13.0"


def test_unreadable_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(FingerprintError, match="cannot read"):
        Fingerprint.load(tmp_path / "missing.json")
    (tmp_path / "bin.json").write_bytes(b"\x00\xff\xfe binary")
    with pytest.raises(FingerprintError, match="is not a fingerprint"):
        Fingerprint.load(tmp_path / "bin.json")


def test_volatile_fields_do_not_enter_hashes(fp: Fingerprint) -> None:
    record = fp.to_dict()
    record["platform"]["hostname"] = "elsewhere"
    record["platform"]["pid"] = 1
    record["captured_at"] = "1999-01-01T00:00:00Z"
    record["seeds"]["state_digests"] = {"python": "x"}
    record["python"]["executable"] = "/other/venv/bin/python"
    record["program"]["env_volatile"] = ["PWD", "SHLVL", "GITHUB_RUN_ID"]
    assert compute_hashes(record) == dict(fp.hashes)


def test_strip_volatile_matches_list_indices() -> None:
    record = {"gpu": {"devices": [{"name": "A", "uuid_digest": "1"}, {"name": "B"}]}}
    assert strip_volatile(record) == {"gpu": {"devices": [{"name": "A"}, {"name": "B"}]}}


def test_a_real_field_change_enters_its_hash(fp: Fingerprint) -> None:
    record = fp.to_dict()
    record["torch"]["version"] = "9.9.9"
    changed = compute_hashes(record)
    assert changed["env"] != fp.hashes["env"]
    assert changed["numerics"] == fp.hashes["numerics"]
    record = fp.to_dict()
    record["program"]["env"]["MOMENTUM"] = "0.5"  # a knob the program reads from a variable
    changed = compute_hashes(record)
    assert changed["recipe"] != fp.hashes["recipe"]
    assert changed["env"] == fp.hashes["env"]
